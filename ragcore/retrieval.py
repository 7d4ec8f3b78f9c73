"""Dense, sparse (BM25) and hybrid retrieval with every score kept and every cut explained.

Retrieval happens in two steps so the app can move top-K and the threshold without asking
Qdrant again:

1. :meth:`Retriever.search` gathers a candidate pool (the best ``candidates`` of each branch),
   scores every candidate with cosine, BM25 and the fused score, and ranks them by the
   mode's score;
2. :func:`apply_cuts` marks candidates kept or cut (threshold, dedupe, top-K) — a pure
   function over the pool.

The threshold always applies to the cosine similarity between question and chunk, whatever
the mode: it is the one score on a fixed, readable scale (fused RRF scores such as 0.016
are not).
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Sequence

import numpy as np
from qdrant_client import models as qm

from .config import RagcoreSettings
from .embeddings import OnnxMiniLM
from .pathfilter import parse_path_filter, path_matches
from .search_index import SearchIndex, top_indices
from .sparse import Bm25Encoder
from .store import DENSE, SPARSE, Store, chunk_from_payload
from .types import Candidate, Chunk, RetrievalResult, ScoreKind


def rank_score_kind(mode: str, fusion: str) -> ScoreKind:
    if mode == "dense":
        return "cosine"
    if mode == "sparse":
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


def apply_cuts(
    candidates: Sequence[Candidate], *, top_k: int, threshold: float, dedupe: bool
) -> tuple[Candidate, ...]:
    """Mark each candidate kept or cut, in rank order. Pure: same pool, new settings, new cuts.

    Order of the checks: the threshold first (a weak chunk is cut as weak even if it would
    also be a duplicate), then per-section dedupe (the best chunk of a section wins), then top-K.
    """
    out: list[Candidate] = []
    seen: set[tuple[str, tuple[str, ...], int | None]] = set()
    kept = 0
    for c in sorted(candidates, key=lambda c: c.rank):
        key = (c.chunk.path, c.chunk.section, c.chunk.page)
        if threshold > 0 and c.dense_score is not None and c.dense_score < threshold:  # 0 = off
            reason = "threshold"
        elif dedupe and key in seen:
            reason = "dedupe"
        elif kept >= top_k:
            reason = "top_k"
        else:
            reason = None
        if reason is None:
            kept += 1
            seen.add(key)
        out.append(replace(c, kept=reason is None, dropped_reason=reason))
    return tuple(out)


class Retriever:
    def __init__(self, store: Store, encoder: OnnxMiniLM, bm25: Bm25Encoder | None = None) -> None:
        self.store = store
        self.encoder = encoder
        self.bm25 = bm25 or Bm25Encoder()
        self._indexes: dict[str, tuple[str, SearchIndex]] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ index cache (embedded)

    def invalidate(self, collection: str) -> None:
        with self._lock:
            self._indexes.pop(collection, None)

    def index(self, collection: str) -> SearchIndex:
        version = str(self.store.read_meta(collection).get("corpus_version"))
        with self._lock:
            hit = self._indexes.get(collection)
            if hit and hit[0] == version:
                return hit[1]
            idx = SearchIndex(self.store.load(collection))
            self._indexes[collection] = (version, idx)
            return idx

    # ------------------------------------------------------------------ search

    def search(self, collection: str, query: str, settings: RagcoreSettings) -> RetrievalResult:
        """The ranked candidate pool for ``query``, cut per ``settings``."""
        t0 = time.perf_counter()
        q_dense = self.encoder.encode([query])[0]
        qs = self.bm25.encode_query(query)
        t1 = time.perf_counter()
        if self.store.is_embedded:
            pool = self._pool_local(collection, q_dense, (qs.indices, qs.values), settings)
        else:
            pool = self._pool_server(collection, q_dense, qs, settings)
        t2 = time.perf_counter()
        cands = self._rank(pool, settings)
        cands = apply_cuts(cands, top_k=settings.top_k, threshold=settings.threshold, dedupe=settings.dedupe)
        t3 = time.perf_counter()
        return RetrievalResult(
            query=query,
            retrieval_mode=settings.retrieval_mode,
            rank_score_kind=rank_score_kind(settings.retrieval_mode, settings.fusion),
            candidates=cands,
            latency_ms={"embed": (t1 - t0) * 1e3, "search": (t2 - t1) * 1e3, "fuse_and_cut": (t3 - t2) * 1e3},
        )

    # A pool entry: chunk, cosine, bm25, dense rank, sparse rank (ranks None outside a branch's list)
    _Pool = list[tuple[Chunk, float | None, float | None, int | None, int | None]]

    def _pool_local(self, collection: str, q_dense: np.ndarray, q_sparse, settings: RagcoreSettings) -> _Pool:
        idx = self.index(collection)
        sc = idx.score(q_dense, q_sparse, settings.path_filter)
        n = settings.candidates
        d_top = top_indices(sc.dense, n, sc.mask) if settings.retrieval_mode != "sparse" else []
        s_top = top_indices(sc.sparse, n, sc.mask, positive_only=True) if settings.retrieval_mode != "dense" else []
        d_rank = {i: r for r, i in enumerate(d_top, 1)}
        s_rank = {i: r for r, i in enumerate(s_top, 1)}
        pool = []
        for i in dict.fromkeys([*d_top, *s_top]):
            pool.append((idx.chunks[i], float(sc.dense[i]), float(sc.sparse[i]), d_rank.get(i), s_rank.get(i)))
        return pool

    def _pool_server(self, collection: str, q_dense: np.ndarray, qs, settings: RagcoreSettings) -> _Pool:
        client = self.store.client
        # Qdrant has no glob match: with a path filter, over-fetch and filter here with the
        # same matcher the embedded index uses, so both back ends mean the same thing.
        flt = None
        n = settings.candidates * (5 if settings.path_filter else 1)
        dense_hits = []
        sparse_hits = []
        if settings.retrieval_mode != "sparse":
            dense_hits = client.query_points(collection, query=q_dense.tolist(), using=DENSE, limit=n, query_filter=flt, with_payload=True).points
        if settings.retrieval_mode != "dense" and qs.indices:
            sparse_hits = client.query_points(
                collection, query=qm.SparseVector(indices=list(qs.indices), values=list(qs.values)),
                using=SPARSE, limit=n, query_filter=flt, with_payload=True, with_vectors=[DENSE],
            ).points
        entries: dict[str, list] = {}
        for r, p in enumerate(dense_hits, 1):
            entries[str(p.id)] = [chunk_from_payload(p.payload), float(p.score), None, r, None]
        for r, p in enumerate(sparse_hits, 1):
            e = entries.get(str(p.id))
            if e is None:
                vec = np.asarray(p.vector[DENSE], dtype=np.float32)
                cos = float(vec @ q_dense / (np.linalg.norm(vec) or 1.0))
                entries[str(p.id)] = [chunk_from_payload(p.payload), cos, float(p.score), None, r]
            else:
                e[2], e[4] = float(p.score), r
        pool = [tuple(e) for e in entries.values()]
        if settings.path_filter:
            pats = parse_path_filter(settings.path_filter)
            pool = [e for e in pool if path_matches(e[0].path, pats)]
            # ranks within each branch after filtering, as the embedded index computes them
            for i in (3, 4):  # dense rank, sparse rank
                order = sorted((e for e in pool if e[i] is not None), key=lambda e: e[i])[: settings.candidates]
                keep = {id(e): r for r, e in enumerate(order, 1)}
                pool = [(*e[:i], keep.get(id(e)), *e[i + 1 :]) for e in pool]
            pool = [e for e in pool if e[3] is not None or e[4] is not None]
        return pool  # type: ignore[return-value]

    def _rank(self, pool: _Pool, settings: RagcoreSettings) -> list[Candidate]:
        by_d = sorted((e for e in pool if e[3] is not None), key=lambda e: e[3])
        by_s = sorted((e for e in pool if e[4] is not None and e[2] is not None), key=lambda e: e[4])
        dense = {e[0].chunk_id: e[1] for e in by_d}
        sparse = {e[0].chunk_id: e[2] for e in by_s}
        cosine = {e[0].chunk_id: e[1] for e in pool if e[1] is not None}
        fused = fuse(dense, sparse, fusion=settings.fusion, rrf_k=settings.rrf_k,
                     dense_weight=settings.dense_weight, cosine=cosine)
        kind = rank_score_kind(settings.retrieval_mode, settings.fusion)
        inf = float("inf")
        if kind == "cosine":
            key = {c.chunk_id: (-(d or 0.0), dr or inf) for c, d, _, dr, _ in pool}
        elif kind == "bm25":
            key = {c.chunk_id: (-(s or 0.0), sr or inf) for c, _, s, _, sr in pool}
        else:  # ties in the fused score: the better of the two branch ranks first
            key = {c.chunk_id: (-fused.get(c.chunk_id, 0.0), min(dr or inf, sr or inf)) for c, _, _, dr, sr in pool}
        ordered = sorted(pool, key=lambda e: (*key[e[0].chunk_id], e[0].chunk_id))
        f_sorted = sorted(fused, key=lambda c: (-fused[c], key.get(c, (0, inf))[1] if kind in ("rrf", "weighted") else 0, c))
        f_order = {cid: r for r, cid in enumerate(f_sorted, 1)}
        out = []
        for rank, (chunk, d, s, dr, sr) in enumerate(ordered, 1):
            out.append(
                Candidate(
                    chunk=chunk, dense_score=d, sparse_score=s, fused_score=fused.get(chunk.chunk_id),
                    dense_rank=dr, sparse_rank=sr, fused_rank=f_order.get(chunk.chunk_id), rank=rank,
                )
            )
        return out
