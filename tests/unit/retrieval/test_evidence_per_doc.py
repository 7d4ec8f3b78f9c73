"""The evidence spans documents (cutrules.keep_per_document): a cap per document, lifted for the
document that clearly holds the answer; every cut chunk says why."""

from __future__ import annotations

from ragcore.retrieval.cutrules import CLEAR_LEAD, EVIDENCE_PER_DOC, apply_cuts
from ragcore.settings.config import RagcoreSettings
from ragcore.retrieval.documents import rank_documents
from ragcore.types import Candidate, Chunk


def cand(cid: str, path: str, score: float, rank: int) -> Candidate:
    ch = Chunk(cid, f"text {cid}", path, "h", "markdown", rank, rank, (f"s{cid}",))
    return Candidate(ch, 0.5, None, score, None, None, rank, rank)


def _pool(chunk_order: list[tuple[str, str, float]]) -> list[Candidate]:
    """Candidates ranked as passages in this order, then by document (documents.py)."""
    pool = [cand(cid, path, score, i) for i, (cid, path, score) in enumerate(chunk_order, 1)]
    return rank_documents(pool, "rrf", decay=1.0, per_doc=0)


def _kept(cands) -> list[str]:
    return [c.chunk.chunk_id for c in sorted(cands, key=lambda c: c.rank) if c.kept]


def test_a_long_page_does_not_fill_the_evidence() -> None:
    # the long page ranks first as a document (four decent chunks), the page that answers a close second
    pool = _pool([("b1", "answer.md", 0.10), ("a1", "long.md", 0.09), ("a2", "long.md", 0.08), ("a3", "long.md", 0.08),
                  ("a4", "long.md", 0.07), ("b2", "answer.md", 0.07), ("b3", "answer.md", 0.06), ("c1", "other.md", 0.05)])
    assert [c.chunk.path for c in pool[:4]] == ["long.md"] * 4  # documents first: all of long.md leads
    assert pool[0].doc_score < 1.2 * pool[4].doc_score  # 0.25 against 0.23: no document stands out
    off = apply_cuts(pool, top_k=4, threshold=0.0, dedupe=True, per_doc=0)
    assert _kept(off) == ["a1", "a2", "a3", "a4"]
    on = apply_cuts(pool, top_k=4, threshold=0.0, dedupe=True, per_doc=2)
    assert _kept(on) == ["a1", "a2", "b1", "b2"]
    why = {c.chunk.chunk_id: c.dropped_reason for c in on}
    assert why["a3"] == why["a4"] == why["b3"] == "per_doc" and why["c1"] == "top_k"
    assert len(on) == len(pool)  # nothing disappears from the lab: every chunk is there, kept or cut with a reason


def test_a_document_well_ahead_of_the_next_is_not_capped() -> None:
    """The cap engages only when no document stands out: a first document scoring CLEAR_LEAD times
    the second's keeps its chunks (0.25 against 0.11 here), though it lacks the best passage."""
    pool = _pool([("b1", "answer.md", 0.10), ("a1", "long.md", 0.09), ("a2", "long.md", 0.08), ("a3", "long.md", 0.08),
                  ("a4", "long.md", 0.07), ("c1", "other.md", 0.05), ("b2", "answer.md", 0.01)])
    assert pool[0].doc_score >= CLEAR_LEAD * max(c.doc_score for c in pool if c.chunk.path != "long.md")
    on = apply_cuts(pool, top_k=4, threshold=0.0, dedupe=True, per_doc=2)
    assert _kept(on) == ["a1", "a2", "a3", "a4"]
    # the documents after it are still capped: with room for six, answer.md's chunks and other.md's follow
    wide = apply_cuts(pool, top_k=6, threshold=0.0, dedupe=True, per_doc=1)
    assert _kept(wide) == ["a1", "a2", "a3", "a4", "b1", "c1"]
    assert {c.chunk.chunk_id: c.dropped_reason for c in wide}["b2"] == "per_doc"


def test_a_document_holding_the_best_passages_is_not_capped() -> None:
    pool = _pool([("a1", "answer.md", 0.10), ("a2", "answer.md", 0.09), ("a3", "answer.md", 0.09),
                  ("b1", "other.md", 0.05), ("a4", "answer.md", 0.04)])
    on = apply_cuts(pool, top_k=4, threshold=0.0, dedupe=True, per_doc=1)
    assert _kept(on) == ["a1", "a2", "a3", "a4"]


def test_the_default_cap_is_the_settings_default() -> None:
    assert RagcoreSettings().evidence_per_doc == EVIDENCE_PER_DOC
