"""Kept candidates as the numbered evidence [1..n], without LlamaIndex objects.

This is what :class:`~ragcore.citations.numbering.CitationNumberer` yields for the candidates'
nodes (``tests/test_llamaindex_components.py`` holds the two equal), built directly: the question
path then neither builds nodes nor imports ``llama_index`` (~2 s of a cold ``ragcore ask``).
"""

from __future__ import annotations

from typing import Sequence

from ragcore.types import Candidate, Evidence, Origin, ScoreKind


def evidence_from_candidates(
    candidates: Sequence[Candidate], score_kind: ScoreKind, *, origin: Origin = "corpus", start: int = 1
) -> tuple[Evidence, ...]:
    """Kept candidates → Evidence [start..], numbered in rank order."""
    kept = [c for c in candidates if c.kept]
    return tuple(
        Evidence(n=start + i, chunk=c.chunk, origin=origin, score=c.score_for(score_kind), score_kind=score_kind,
                 dense_score=c.dense_score, sparse_score=c.sparse_score, fused_score=c.fused_score,
                 seated=c.seated)
        for i, c in enumerate(kept)
    )
