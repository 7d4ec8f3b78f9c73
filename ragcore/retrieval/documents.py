"""Rank documents, then passages.

A document's score aggregates its chunks' scores (the mode's ranking score: fused, cosine or
BM25): best + decay × second + decay² × third. Several good chunks of one page then beat one
lucky chunk of another, while a single excellent chunk still carries its page. Candidates are
reordered document by document; ``per_doc`` caps how many chunks of one document come before
the best chunks of the documents after it, so the evidence (the first top-K) is not six chunks
of one page. Nothing is dropped: every candidate keeps its own scores and branch ranks, and
gains its document's score and rank.

With document signals (docsignals.py) the document score becomes: its evidence score over the
pool's best, plus title_weight × cosine(question, title) plus centroid_weight × cosine(question,
centroid); then the documents the question or its best passages name join by reciprocal rank
fusion, named_weight / (DOC_RRF_K + rank among the named). Each candidate records the cosines
and the names, so the lab can show why its document moved.

Summing three chunks must not bury a short document's one excellent chunk: when the dense and the
BM25 branch both rank a chunk first and its document has fewer than ``DEPTH`` chunks in the pool
(a scanned page, a short note: it cannot have three), that document scores at least as much as the
best document, and ties go to the document whose chunk ranks first, so it leads. On pdf-qa the
scanned page that answers was dense #1 and BM25 #1 and ranked #35 (bench/results/issue30-r3.md).
A longer document gets no lift: its chunks are summed like any other's (lifting those too moved
an unjudged page ahead of the relevant one on django-docs-qa).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ragcore.types import Candidate, ScoreKind
from ragcore.retrieval.docsignals import DocSignals

DOC_RRF_K = 10  # as the chunk fusion's rrf_k: a named document near the top counts about as much as the best
DEPTH = 3  # chunks per document that count towards its score (2 and 5 measured no better on django-docs-qa)


def document_scores(cands: Sequence[Candidate], kind: ScoreKind, decay: float) -> dict[str, float]:
    by_doc: dict[str, list[float]] = {}
    for c in sorted(cands, key=lambda c: c.rank):
        by_doc.setdefault(c.chunk.path, []).append(c.score_for(kind) or 0.0)
    return {
        path: sum(s * decay**j for j, s in enumerate(sorted(scores, reverse=True)[:DEPTH]))
        for path, scores in by_doc.items()
    }


def unanimous_best(cands: Sequence[Candidate]) -> str | None:
    """The document of the chunk that the dense and the BM25 branch both rank first, when that
    document has fewer than ``DEPTH`` chunks in the pool; else None."""
    path = next((c.chunk.path for c in cands if c.dense_rank == 1 and c.sparse_rank == 1), None)
    if path is None or sum(c.chunk.path == path for c in cands) >= DEPTH:
        return None
    return path


def lift_unanimous(scores: dict[str, float], cands: Sequence[Candidate]) -> dict[str, float]:
    """``scores`` with the short document of the unanimous best chunk raised to the best document's score."""
    lead = unanimous_best(cands)
    if lead is None or lead not in scores:
        return scores
    return {**scores, lead: max(scores[lead], max(scores.values()))}


def _ranks(scores: Mapping[str, float], first: Mapping[str, int]) -> dict[str, int]:
    """1-based rank per path, best score first; ties: the document whose best chunk ranks first."""
    return {p: r for r, p in enumerate(sorted(scores, key=lambda p: (-scores[p], first[p])), 1)}


def combined_scores(evidence: Mapping[str, float], first: Mapping[str, int], sig: DocSignals) -> dict[str, float]:
    """The document score with signals (see the module docstring)."""
    top = max(evidence.values(), default=0.0) or 1.0
    scores = {
        p: v / top + sig.title_weight * max(sig.title.get(p, 0.0), 0.0)
        + sig.centroid_weight * max(sig.centroid.get(p, 0.0), 0.0)
        for p, v in evidence.items()
    }
    named = {p: v for p, v in sig.named.items() if p in scores and v > 0}
    if sig.named_weight <= 0 or not named:
        return scores
    base, by_name = _ranks(scores, first), _ranks(named, first)
    return {
        p: 1.0 / (DOC_RRF_K + base[p]) + (sig.named_weight / (DOC_RRF_K + by_name[p]) if p in by_name else 0.0)
        for p in scores
    }


def rank_documents(
    cands: Sequence[Candidate], kind: ScoreKind, *, decay: float, per_doc: int, signals: DocSignals | None = None,
) -> list[Candidate]:
    """Candidates reordered by document (see the module docstring); unchanged when all are off."""
    ordered = sorted(cands, key=lambda c: c.rank)
    sig = signals if signals is not None and signals.active else None
    if decay <= 0 and per_doc <= 0 and sig is None:
        return ordered
    first: dict[str, int] = {}
    for c in ordered:
        first.setdefault(c.chunk.path, c.rank)
    scores = document_scores(ordered, kind, decay)
    if sig is not None:
        scores = combined_scores(scores, first, sig)
    scores = lift_unanimous(scores, ordered)
    doc_rank = _ranks(scores, first)
    within: dict[str, int] = {}
    keyed = []
    for c in ordered:
        i = within.get(c.chunk.path, 0)
        within[c.chunk.path] = i + 1
        tier = 0 if per_doc <= 0 or i < per_doc else 1
        keyed.append(((tier, doc_rank[c.chunk.path], i), c))
    keyed.sort(key=lambda kc: kc[0])
    return [
        c.evolve(rank=r, chunk_rank=c.rank, doc_score=scores[c.chunk.path], doc_rank=doc_rank[c.chunk.path],
                 **_signal_fields(sig, c.chunk.path))
        for r, (_, c) in enumerate(keyed, 1)
    ]


def _signal_fields(sig: DocSignals | None, path: str) -> dict:
    if sig is None:
        return {}
    return {
        "doc_title_cosine": sig.title.get(path) if sig.title_weight > 0 else None,
        "doc_centroid_cosine": sig.centroid.get(path) if sig.centroid_weight > 0 else None,
        "named_by": sig.named_by.get(path, ()) if sig.named_weight > 0 else (),
    }
