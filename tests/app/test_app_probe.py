"""The "why not retrieved?" probe (ui.probe) reads the path filter exactly as retrieval does
(ragcore.storage.pathfilter): a comma-separated list of globs, where "ref/" means everything under ref/.

Real parts: the app's shared Engine (embedded Qdrant in a temp folder, the real ONNX model), a
small three-folder collection ingested once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.app_support import shared_runtime
from ui.probe import SIGNAL_HELP, probe, signal_cells

COLLECTION = "probe-filter"
FILES = {
    "docs/threshold.md": "# Threshold\n\nThe threshold applies to the cosine similarity between the question and a chunk.\n",
    "ref/security.md": "# Keys\n\nAPI keys are masked on screen and never written to logs or exports.\n",
    "other/fruit.md": "# Fruit\n\nBananas are yellow and grow in bunches on large tropical plants.\n",
}
QUESTION = "What does the threshold apply to?"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    root: Path = tmp_path_factory.mktemp("probe-corpus")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    eng = shared_runtime().engine
    report = eng.ingest([root], COLLECTION)
    assert sorted(p for p, _ in eng.documents(COLLECTION)) == sorted(FILES), report
    yield eng
    eng.drop(COLLECTION)


def _probe(engine, path: str):
    # a pool of one candidate per branch: only docs/threshold.md's chunk gets in
    s = engine.settings.with_(collection=COLLECTION, top_k=1, candidates=1, threshold=0.0,
                              path_filter="docs/*.md, ref/")
    return probe(engine, QUESTION, s, collection=COLLECTION, path=path)


def test_a_file_under_a_folder_pattern_passes_the_filter(engine):
    res = _probe(engine, "ref/security.md")
    # ref/ is in the filter: the chunk was searched, it just ranked below the one-candidate pool
    assert res.verdict in ("not_candidate", "not_in_pool"), (res.verdict, res.message)


def test_a_file_outside_every_pattern_is_reported_as_filtered(engine):
    res = _probe(engine, "other/fruit.md")
    assert res.verdict == "filter", (res.verdict, res.message)
    assert "'docs/*.md, ref/'" in res.message


def test_the_matching_file_is_kept(engine):
    res = _probe(engine, "docs/threshold.md")
    assert res.verdict == "kept" and res.evidence_n == 1, (res.verdict, res.message)


def _probe_signals(engine, path: str, **signals):
    s = engine.settings.with_(collection=COLLECTION, top_k=1, candidates=1, threshold=0.0, **signals)
    return probe(engine, QUESTION, s, collection=COLLECTION, path=path)


SIGNALS_ON = dict(field_weight=2.0, doc_decay=1.0, prf_terms=6, prf_docs=1)


def test_the_probe_reports_the_chunks_retrieval_signals(engine):
    res = _probe_signals(engine, "docs/threshold.md", **SIGNALS_ON)
    assert res.verdict == "kept" and res.signals_from == "pool"
    # its heading and its file name both say "threshold", the question's own word
    assert res.field_score and res.field_score > 0 and {"section:threshold", "path:threshold"} <= set(res.matched_fields), res
    assert (res.doc_rank, res.doc_score) == (1, res.candidate.doc_score)
    # feedback from the best chunk (this one) expands the query with its own words: the chunk has them all
    assert res.expansion_terms and set(res.expansion_matched) == {t for t, _ in res.expansion_terms}

    # outside the one-candidate pool: the signals come from the large pool
    other = _probe_signals(engine, "other/fruit.md", **SIGNALS_ON)
    assert other.signals_from == "large pool" and other.doc_rank and other.doc_rank > 1
    assert other.field_score == 0 and other.matched_fields == ()
    assert other.expansion_terms == res.expansion_terms and not set(other.expansion_matched) & {"threshold", "cosin"}

    # what the lab's probe table shows: every signal, and where a signal came from when not the analyst's pool
    cells, far = signal_cells(res), signal_cells(other)
    off = [k for k in SIGNAL_HELP if k != "rerank score"]  # no reranker configured here: no rerank cell
    assert list(cells) == off == list(far)
    assert cells["document rank"] == "1" and far["document rank"] == f"{other.doc_rank} (large pool)"
    assert far["matched fields"] == "none" and far["expansion terms in the chunk"] == f"none (of {len(res.expansion_terms)})"


def test_signals_off_report_nothing(engine):
    res = _probe_signals(engine, "docs/threshold.md", field_weight=0.0, doc_decay=0.0, per_doc=0, prf_terms=0,
                         named_weight=0.0, doc_title_weight=0.0)
    assert (res.field_score, res.matched_fields, res.doc_rank, res.doc_score, res.expansion_terms) == (None, (), None, None, ())
    assert signal_cells(res) == {}


def test_a_chunk_cut_by_the_per_document_cap_is_reported_as_such():
    # the cap engages only when no document clearly holds the answer, which a three-file corpus
    # cannot arrange reliably; so the verdict is read off a pool cut the way cutrules.py cuts it
    from ragcore.settings.config import RagcoreSettings
    from ragcore.types import Candidate, Chunk, RetrievalResult
    from ragcore.engine.probe import _in_pool_verdict

    def cand(i: int, path: str, reason: str | None) -> Candidate:
        chunk = Chunk(chunk_id=f"c{i}", text=f"text {i}", path=path, doc_hash="h", kind="markdown",
                      start_line=i * 10 + 1, end_line=i * 10 + 5, ordinal=i)
        return Candidate(chunk, 0.5, 1.0, 0.1, i, i, i, i).with_cut(reason)

    pool = (cand(1, "a.md", None), cand(2, "b.md", None), cand(3, "a.md", "per_doc"))
    res = _in_pool_verdict(pool[2], RetrievalResult("q", "hybrid", "rrf", pool), RagcoreSettings(evidence_per_doc=1),
                           0.5, {"chunk": pool[2].chunk})
    assert res.verdict == "per_doc", (res.verdict, res.message)
    assert "1 chunk of a.md was already kept" in res.message and "cap 1" in res.message
    assert "RAGCORE_EVIDENCE_PER_DOC" in res.fix
