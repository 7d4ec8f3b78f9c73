"""Fusing the dense and sparse branches into one ranking, every score kept.

Each pool entry knows its cosine, its BM25 score and its rank in each branch; the fused score
(RRF or weighted) and the mode's ordering are computed here, so the caller can show all of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ragcore.types import Candidate, Chunk, ScoreKind

INF = float("inf")


@dataclass(frozen=True)
class PoolEntry:
    """A chunk one branch (or both) found, before fusion. Ranks are None outside a branch's list."""

    chunk: Chunk
    cosine: float | None
    bm25: float | None
    dense_rank: int | None
    sparse_rank: int | None
    field_score: float | None = None  # the part of bm25 from title/section/anchor/file-name matches


def rank_score_kind(retrieval_mode: str, fusion: str) -> ScoreKind:
    if retrieval_mode == "dense":
        return "cosine"
    if retrieval_mode == "sparse":
        return "bm25"
    return "rrf" if fusion == "rrf" else "weighted"


def fuse(
    dense: dict[str, float], sparse: dict[str, float], *, fusion: str, rrf_k: int, dense_weight: float,
    cosine: dict[str, float] | None = None,
) -> dict[str, float]:
    """Fused score per chunk id. Each branch is ranked by its score; ties keep the order
    of the dict (the branch's own order), since Python's sort is stable.

    RRF: Σ 1/(k + rank) over the branches that ranked the chunk (rank is 1-based).
    Weighted: w·cosine + (1 − w)·BM25/max(BM25 in the pool), both on a 0..1 scale; the
    cosine is the chunk's own (``cosine``) even when only the sparse branch found it.
    """
    ids = list(dict.fromkeys([*dense, *sparse]))
    if fusion == "rrf":
        d_rank = {cid: r for r, cid in enumerate(sorted(dense, key=lambda c: -dense[c]), 1)}
        s_rank = {cid: r for r, cid in enumerate(sorted(sparse, key=lambda c: -sparse[c]), 1)}
        return {
            cid: (1.0 / (rrf_k + d_rank[cid]) if cid in d_rank else 0.0)
            + (1.0 / (rrf_k + s_rank[cid]) if cid in s_rank else 0.0)
            for cid in ids
        }
    cos = {**dense, **(cosine or {})}
    smax = max(sparse.values(), default=0.0) or 1.0
    return {
        cid: dense_weight * max(cos.get(cid, 0.0), 0.0) + (1 - dense_weight) * sparse.get(cid, 0.0) / smax
        for cid in ids
    }


def _order_keys(pool: Sequence[PoolEntry], kind: ScoreKind, fused: dict[str, float]) -> dict[str, tuple[float, float]]:
    """Sort key per chunk id for the mode's ordering (ties: the better branch rank first)."""
    if kind == "cosine":
        return {e.chunk.chunk_id: (-(e.cosine or 0.0), e.dense_rank or INF) for e in pool}
    if kind == "bm25":
        return {e.chunk.chunk_id: (-(e.bm25 or 0.0), e.sparse_rank or INF) for e in pool}
    return {e.chunk.chunk_id: (-fused.get(e.chunk.chunk_id, 0.0), min(e.dense_rank or INF, e.sparse_rank or INF)) for e in pool}


def rank_pool(
    pool: Sequence[PoolEntry], *, retrieval_mode: str, fusion: str, rrf_k: int, dense_weight: float,
) -> list[Candidate]:
    """The pool as candidates in the mode's order, each with cosine, BM25, fused score and ranks."""
    by_d = sorted((e for e in pool if e.dense_rank is not None), key=lambda e: e.dense_rank)
    by_s = sorted((e for e in pool if e.sparse_rank is not None and e.bm25 is not None), key=lambda e: e.sparse_rank)
    fused = fuse(
        {e.chunk.chunk_id: e.cosine for e in by_d}, {e.chunk.chunk_id: e.bm25 for e in by_s},
        fusion=fusion, rrf_k=rrf_k, dense_weight=dense_weight,
        cosine={e.chunk.chunk_id: e.cosine for e in pool if e.cosine is not None},
    )
    kind = rank_score_kind(retrieval_mode, fusion)
    key = _order_keys(pool, kind, fused)
    ordered = sorted(pool, key=lambda e: (*key[e.chunk.chunk_id], e.chunk.chunk_id))
    tie = (lambda c: key.get(c, (0, INF))[1]) if kind in ("rrf", "weighted") else (lambda c: 0)
    f_order = {cid: r for r, cid in enumerate(sorted(fused, key=lambda c: (-fused[c], tie(c), c)), 1)}
    return [
        Candidate(
            chunk=e.chunk, dense_score=e.cosine, sparse_score=e.bm25, fused_score=fused.get(e.chunk.chunk_id),
            dense_rank=e.dense_rank, sparse_rank=e.sparse_rank, fused_rank=f_order.get(e.chunk.chunk_id), rank=rank,
            field_score=e.field_score,
        )
        for rank, e in enumerate(ordered, 1)
    ]


def feedback(pool: Sequence[PoolEntry], settings) -> list[Chunk]:
    """The first pass's best ``settings.prf_docs`` chunks by RRF over both branches: what
    pseudo-relevance feedback reads (RRF whatever the fusion setting: it needs only ranks)."""
    def rrf(e: PoolEntry) -> float:
        return sum(1.0 / (settings.rrf_k + r) for r in (e.dense_rank, e.sparse_rank) if r is not None)
    return [e.chunk for e in sorted(pool, key=lambda e: (-rrf(e), e.chunk.chunk_id))[: settings.prf_docs]]
