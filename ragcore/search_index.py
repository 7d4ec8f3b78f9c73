"""Exact dense + BM25 scoring over an embedded collection, in process.

Why this exists: qdrant-client's embedded (local) mode scores sparse vectors point by point
in Python — about 150–300 ms per query at 10k chunks on this 2-core machine — and its id
filters cost ~100 ms, which rules out interactive hybrid search. The collection stays in
Qdrant (the store of record, the same schema a server uses); this module loads its vectors
once per corpus version and scores with numpy/scipy, using exactly Qdrant's IDF formula so
scores match what a Qdrant server returns for the same collection (a test pins that).
With a Qdrant server (``RAGCORE_QDRANT_URL``) the server does the searching instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import sparse as sp

from .pathfilter import parse_path_filter, path_matches
from .snapshot import SnapshotData, SparseColumns, sparse_columns
from .sparse import term_index
from .store import CollectionData
from .types import Chunk


def qdrant_idf(df: np.ndarray, n: int) -> np.ndarray:
    """Qdrant's IDF modifier: ln((N − df + 0.5) / (df + 0.5) + 1)."""
    return np.log((n - df + 0.5) / (df + 0.5) + 1.0)


@dataclass
class Scores:
    dense: np.ndarray  # cosine per chunk
    sparse: np.ndarray  # BM25 per chunk (0 where no term matches)
    mask: np.ndarray | None  # path filter, True = eligible


class SearchIndex:
    def __init__(self, data: CollectionData) -> None:
        self._setup(data.chunks, data.dense, sparse_columns(data.sparse))

    @classmethod
    def from_snapshot(cls, snap: SnapshotData) -> "SearchIndex":
        """The index over a query snapshot (snapshot.py): nothing to build, the dense matrix is mapped."""
        idx = cls.__new__(cls)
        idx._setup(snap.chunks, snap.dense, snap.sparse)
        return idx

    def _setup(self, chunks: tuple[Chunk, ...], dense: np.ndarray, sparse: SparseColumns) -> None:
        self.chunks = chunks
        self.dense = dense
        self._cols: dict[int, int] = dict(zip(sparse.terms.tolist(), range(len(sparse.terms))))
        # CSC: a query touches a handful of term columns; slicing columns is what CSC is for
        self.sparse: sp.csc_matrix = sparse.matrix
        self.df = np.diff(self.sparse.indptr).astype(np.float64)
        self.n_docs = len(chunks)
        self.by_id = {c.chunk_id: i for i, c in enumerate(self.chunks)}

    def idf(self, term: str) -> float:
        """The corpus IDF of one term (Qdrant's formula; 0 for a term no chunk holds)."""
        col = self._cols.get(term_index(term))
        return float(qdrant_idf(self.df[col], self.n_docs)) if col is not None else 0.0

    def __len__(self) -> int:
        return self.n_docs

    def path_mask(self, pattern: str | None) -> np.ndarray | None:
        if not pattern:
            return None
        pats = parse_path_filter(pattern)
        return np.array([path_matches(c.path, pats) for c in self.chunks], dtype=bool)

    def score(self, q_dense: np.ndarray, q_sparse: tuple[tuple[int, ...], tuple[float, ...]], path_filter: str | None = None) -> Scores:
        dense = self.dense @ q_dense.astype(np.float32) if self.n_docs else np.zeros(0, np.float32)
        sparse_scores = np.zeros(self.n_docs, dtype=np.float64)
        idx, vals = q_sparse
        cols = [(self._cols[i], v) for i, v in zip(idx, vals) if i in self._cols]
        if cols and self.n_docs:
            c = np.array([x for x, _ in cols])
            w = np.array([v for _, v in cols]) * qdrant_idf(self.df[c], self.n_docs)
            sparse_scores = np.asarray(self.sparse[:, c] @ w).ravel()
        return Scores(dense=dense, sparse=sparse_scores, mask=self.path_mask(path_filter))


def top_indices(scores: np.ndarray, k: int, mask: np.ndarray | None = None, positive_only: bool = False) -> list[int]:
    """Indices of the k best scores, best first (ties broken by index for determinism)."""
    s = scores.astype(np.float64).copy()
    if mask is not None:
        s[~mask] = -math.inf
    if positive_only:
        s[s <= 0] = -math.inf
    k = min(k, len(s))
    if k <= 0:
        return []
    part = np.argpartition(-s, k - 1)[:k]
    order = sorted(part.tolist(), key=lambda i: (-s[i], i))
    return [i for i in order if s[i] != -math.inf]
