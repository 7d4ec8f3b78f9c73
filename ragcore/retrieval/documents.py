"""Rank documents, then passages.

A document's score aggregates its chunks' scores (the mode's ranking score: fused, cosine or
BM25): best + decay × second + decay² × third. Several good chunks of one page then beat one
lucky chunk of another, while a single excellent chunk still carries its page. Candidates are
reordered document by document; ``per_doc`` caps how many chunks of one document come before
the best chunks of the documents after it, so the evidence (the first top-K) is not six chunks
of one page. Nothing is dropped: every candidate keeps its own scores and branch ranks, and
gains its document's score and rank.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from ..types import Candidate, ScoreKind

DEPTH = 3  # chunks per document that count towards its score (2 and 5 measured no better on django-docs-qa)


def document_scores(cands: Sequence[Candidate], kind: ScoreKind, decay: float) -> dict[str, float]:
    by_doc: dict[str, list[float]] = {}
    for c in sorted(cands, key=lambda c: c.rank):
        by_doc.setdefault(c.chunk.path, []).append(c.score_for(kind) or 0.0)
    return {
        path: sum(s * decay**j for j, s in enumerate(sorted(scores, reverse=True)[:DEPTH]))
        for path, scores in by_doc.items()
    }


def rank_documents(cands: Sequence[Candidate], kind: ScoreKind, *, decay: float, per_doc: int) -> list[Candidate]:
    """Candidates reordered by document (see the module docstring); unchanged when both are off."""
    ordered = sorted(cands, key=lambda c: c.rank)
    if decay <= 0 and per_doc <= 0:
        return ordered
    scores = document_scores(ordered, kind, decay)
    first = {}
    for c in ordered:
        first.setdefault(c.chunk.path, c.rank)
    doc_rank = {p: r for r, p in enumerate(sorted(scores, key=lambda p: (-scores[p], first[p])), 1)}
    within: dict[str, int] = {}
    keyed = []
    for c in ordered:
        i = within.get(c.chunk.path, 0)
        within[c.chunk.path] = i + 1
        tier = 0 if per_doc <= 0 or i < per_doc else 1
        keyed.append(((tier, doc_rank[c.chunk.path], i), c))
    keyed.sort(key=lambda kc: kc[0])
    return [
        dataclasses.replace(c, rank=r, doc_score=scores[c.chunk.path], doc_rank=doc_rank[c.chunk.path])
        for r, (_, c) in enumerate(keyed, 1)
    ]
