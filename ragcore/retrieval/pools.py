"""Gathering the candidate pool: the best ``candidates`` of each branch, with every score.

Two back ends, one result: the in-process index over an embedded collection
(``search_index.py``: exact cosine + BM25 with Qdrant's IDF), or a Qdrant server's own
queries. Either way every pool entry gets a cosine, even when only BM25 found it, so the
threshold can always apply to cosine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

if TYPE_CHECKING:  # only the server back end needs Qdrant's client (~1 s to import)
    from qdrant_client import QdrantClient

from ragcore.settings.config import RagcoreSettings
from ragcore.storage.pathfilter import PathFilter
from ragcore.storage.search_index import SearchIndex, top_indices, top_positive
from ragcore.encoders.sparse import SparseVec
from ragcore.storage.schema import DENSE, SPARSE
from ragcore.retrieval.fusion import PoolEntry
from ragcore.types import Chunk


def local_pool(
    idx: SearchIndex, q_dense: np.ndarray, q_sparse: SparseVec, settings: RagcoreSettings,
    fields: np.ndarray | None = None,
) -> list[PoolEntry]:
    """The pool over the in-process index. ``fields`` (field score per chunk, already weighted)
    is added to each chunk's BM25 before the sparse branch ranks, so a chunk whose heading or
    file name matches can enter the pool on that alone."""
    if idx.approximate:
        return _large_pool(idx, q_dense, q_sparse, settings, fields)
    sc = idx.score(q_dense, (q_sparse.indices, q_sparse.values), settings.path_filter)
    sparse = sc.sparse if fields is None else sc.sparse + fields
    n = settings.candidates
    d_top = top_indices(sc.dense, n, sc.mask) if settings.retrieval_mode != "sparse" else []
    s_top = top_indices(sparse, n, sc.mask, positive_only=True) if settings.retrieval_mode != "dense" else []
    d_rank = {i: r for r, i in enumerate(d_top, 1)}
    s_rank = {i: r for r, i in enumerate(s_top, 1)}
    return [
        PoolEntry(idx.chunks[i], float(sc.dense[i]), float(sparse[i]), d_rank.get(i), s_rank.get(i),
                  float(fields[i]) if fields is not None else None)
        for i in dict.fromkeys([*d_top, *s_top])
    ]


def _large_pool(
    idx: SearchIndex, q_dense: np.ndarray, q_sparse: SparseVec, settings: RagcoreSettings, fields: np.ndarray | None,
) -> list[PoolEntry]:
    """The same pool over a large collection without an exact scan of every vector: the dense
    branch from the projection, rescored exactly; BM25 from the query terms' postings; each
    entry's cosine gathered from its own row (exact, including BM25-only hits)."""
    mask = idx.path_mask(settings.path_filter)
    rows, contrib, terms = idx.postings((q_sparse.indices, q_sparse.values))
    bm25 = np.bincount(rows, weights=contrib, minlength=len(idx)) if len(rows) else np.zeros(len(idx))
    sparse = bm25 if fields is None else bm25 + fields
    n = settings.candidates
    d_top = idx.dense_top(q_dense, n, mask) if settings.retrieval_mode != "sparse" else []
    # field scores reach rows no query term lists: then every row is a candidate
    listed = (rows, terms) if fields is None else None
    s_top = top_positive(sparse, n, mask, listed) if settings.retrieval_mode != "dense" else []
    d_rank = {i: r for r, i in enumerate(d_top, 1)}
    s_rank = {i: r for r, i in enumerate(s_top, 1)}
    rows = list(dict.fromkeys([*d_top, *s_top]))
    cos = idx.cosines(q_dense, rows)
    return [
        PoolEntry(idx.chunks[i], float(c), float(sparse[i]), d_rank.get(i), s_rank.get(i),
                  float(fields[i]) if fields is not None else None)
        for i, c in zip(rows, cos)
    ]


def server_pool(
    client: QdrantClient, collection: str, q_dense: np.ndarray, q_sparse: SparseVec, settings: RagcoreSettings,
) -> list[PoolEntry]:
    from qdrant_client import models as qm

    # Qdrant has no glob match: with a path filter, over-fetch and filter here with the same
    # matcher the embedded index uses, so both back ends mean the same thing.
    flt = PathFilter.parse(settings.path_filter)
    n = settings.candidates * (5 if flt else 1)
    dense_hits, sparse_hits = [], []
    if settings.retrieval_mode != "sparse":
        dense_hits = client.query_points(collection, query=q_dense.tolist(), using=DENSE, limit=n, with_payload=True).points
    if settings.retrieval_mode != "dense" and q_sparse.indices:
        sparse_hits = client.query_points(
            collection, query=qm.SparseVector(indices=list(q_sparse.indices), values=list(q_sparse.values)),
            using=SPARSE, limit=n, with_payload=True, with_vectors=[DENSE],
        ).points
    pool = merge_branches(dense_hits, sparse_hits, q_dense)
    return _filtered(pool, flt, settings.candidates) if flt else pool


def server_has_terms(client: QdrantClient, collection: str, terms: Sequence[str]) -> bool:
    """Whether any point of a server's collection has any of these BM25 terms: one sparse query of limit 1."""
    from qdrant_client import models as qm

    from ragcore.encoders.sparse import term_index

    ids = sorted({term_index(t) for t in terms})
    hits = client.query_points(collection, query=qm.SparseVector(indices=ids, values=[1.0] * len(ids)),
                               using=SPARSE, limit=1, with_payload=False).points
    return bool(hits)


def merge_branches(dense_hits: Sequence[Any], sparse_hits: Sequence[Any], q_dense: np.ndarray) -> list[PoolEntry]:
    """A dense and a sparse branch's scored points (Qdrant's client or its in-process engine) as one
    pool: every entry gets its cosine (a sparse-only hit from its stored dense vector), BM25 and
    branch ranks where that branch found it."""
    entries: dict[str, PoolEntry] = {}
    for r, p in enumerate(dense_hits, 1):
        entries[str(p.id)] = PoolEntry(Chunk.from_payload(p.payload), float(p.score), None, r, None)
    for r, p in enumerate(sparse_hits, 1):
        e = entries.get(str(p.id))
        if e is None:
            vec = np.asarray(p.vector[DENSE], dtype=np.float32)
            cos = float(vec @ q_dense / (np.linalg.norm(vec) or 1.0))
            entries[str(p.id)] = PoolEntry(Chunk.from_payload(p.payload), cos, float(p.score), None, r)
        else:
            entries[str(p.id)] = PoolEntry(e.chunk, e.cosine, float(p.score), e.dense_rank, r)
    return list(entries.values())


def _filtered(pool: list[PoolEntry], flt: PathFilter, limit: int) -> list[PoolEntry]:
    """Keep matching paths; re-rank each branch after filtering, as the embedded index does."""
    pool = [e for e in pool if flt.matches(e.chunk.path)]
    d_order = sorted((e for e in pool if e.dense_rank is not None), key=lambda e: e.dense_rank)[:limit]
    s_order = sorted((e for e in pool if e.sparse_rank is not None), key=lambda e: e.sparse_rank)[:limit]
    d_rank = {id(e): r for r, e in enumerate(d_order, 1)}
    s_rank = {id(e): r for r, e in enumerate(s_order, 1)}
    out = [PoolEntry(e.chunk, e.cosine, e.bm25, d_rank.get(id(e)), s_rank.get(id(e))) for e in pool]
    return [e for e in out if e.dense_rank is not None or e.sparse_rank is not None]
