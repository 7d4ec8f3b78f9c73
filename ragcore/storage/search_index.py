"""Exact dense + BM25 scoring over an embedded collection, in process.

Why this exists: qdrant-client's embedded (local) mode scores sparse vectors point by point
in Python — about 150–300 ms per query at 10k chunks on this 2-core machine — and its id
filters cost ~100 ms, which rules out interactive hybrid search. The collection stays in
Qdrant (the store of record, the same schema a server uses); this module loads its vectors
once per corpus version and scores with numpy/scipy, using exactly Qdrant's IDF formula so
scores match what a Qdrant server returns for the same collection (a test pins that).
From ``dense_codes.APPROX_MIN`` chunks on, the dense branch is approximate (a projection scanned,
the best few thousand rescored exactly); every score a pool entry carries stays exact.
With a Qdrant server (``RAGCORE_QDRANT_URL``) the server does the searching instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ragcore.storage.dense_codes import APPROX_MIN, OVERSAMPLE, DenseCodes
from ragcore.storage.pathfilter import parse_path_filter, path_matches
from ragcore.storage.snapshot import SnapshotData, SparseColumns, sparse_columns
from ragcore.encoders.sparse import term_index
from ragcore.storage.schema import CollectionData
from ragcore.types import Chunk


def qdrant_idf(df: np.ndarray, n: int) -> np.ndarray:
    """Qdrant's IDF modifier: ln((N − df + 0.5) / (df + 0.5) + 1)."""
    return np.log((n - df + 0.5) / (df + 0.5) + 1.0)


@dataclass
class Scores:
    dense: np.ndarray  # cosine per chunk
    sparse: np.ndarray  # BM25 per chunk (0 where no term matches)
    mask: np.ndarray | None  # path filter, True = eligible


class SearchIndex:
    """Scores over one collection. Below ``approx_min`` chunks every score is exact and computed
    for every chunk (the pool is as it always was); above it the dense branch is found through
    the snapshot's projection (dense_codes.py) and rescored exactly, and BM25 is summed from the
    query terms' postings only (search via :meth:`dense_top` / :meth:`bm25` / :meth:`cosines`)."""

    approx_min = APPROX_MIN  # an instance may lower it (tests) or raise it (exact at any size)
    oversample = OVERSAMPLE

    def __init__(self, data: CollectionData) -> None:
        # decoded once: a loaded collection (snapshots off, or a server) is small enough to hold as objects
        self._setup(tuple(data.chunks), data.dense, sparse_columns(data.sparse), None)

    @classmethod
    def from_snapshot(cls, snap: SnapshotData) -> "SearchIndex":
        """The index over a query snapshot (snapshot.py): nothing to build, the files are mapped."""
        idx = cls.__new__(cls)
        idx._setup(snap.chunks, snap.dense, snap.sparse, snap.codes)
        return idx

    def _setup(self, chunks: Sequence[Chunk], dense: np.ndarray, sparse: SparseColumns, codes: DenseCodes | None) -> None:
        self.chunks = chunks
        self.dense = dense
        self.columns = sparse
        self.codes = codes
        self.df = np.diff(sparse.indptr).astype(np.float64)
        self.n_docs = len(chunks)
        self._by_id: Mapping[str, int] | None = getattr(chunks, "by_id", None)
        self._docs: tuple[tuple[str, ...], np.ndarray] | None = None
        self._allowed: dict[str, np.ndarray] = {}  # path filter -> which of documents()'s paths it admits

    @property
    def by_id(self) -> Mapping[str, int]:
        """chunk_id -> row: the snapshot's persisted lookup, else built on first use."""
        if self._by_id is None:
            self._by_id = {c.chunk_id: i for i, c in enumerate(self.chunks)}
        return self._by_id

    @property
    def approximate(self) -> bool:
        return self.codes is not None and self.n_docs >= self.approx_min

    def documents(self) -> tuple[tuple[str, ...], np.ndarray]:
        """(unique paths, path index of every chunk): the snapshot's columns, else one scan."""
        if self._docs is None:
            paths, doc_of = getattr(self.chunks, "paths", None), getattr(self.chunks, "doc_of", None)
            if paths is None or doc_of is None:
                all_paths = [c.path for c in self.chunks]
                paths = tuple(sorted(set(all_paths)))
                at = {p: i for i, p in enumerate(paths)}
                doc_of = np.fromiter((at[p] for p in all_paths), dtype=np.int32, count=len(all_paths))
            self._docs = (tuple(paths), doc_of)
        return self._docs

    def idf(self, term: str) -> float:
        """The corpus IDF of one term (Qdrant's formula; 0 for a term no chunk holds)."""
        col = self.columns.column(term_index(term))
        return float(qdrant_idf(self.df[col], self.n_docs)) if col is not None else 0.0

    def __len__(self) -> int:
        return self.n_docs

    def path_mask(self, pattern: str | None) -> np.ndarray | None:
        """Eligible chunks: the glob is matched once per document, then spread to its chunks."""
        if not pattern:
            return None
        paths, doc_of = self.documents()
        allowed = self._allowed.get(pattern)
        if allowed is None:  # ~2 us per document: kept per pattern (a session asks many questions under one filter)
            pats = parse_path_filter(pattern)
            allowed = np.fromiter((path_matches(p, pats) for p in paths), dtype=bool, count=len(paths))
            if len(self._allowed) >= 8:
                self._allowed.pop(next(iter(self._allowed)), None)
            self._allowed[pattern] = allowed
        return allowed[doc_of] if len(doc_of) else np.zeros(0, dtype=bool)

    def postings(self, q_sparse: tuple[Sequence[int], Sequence[float]]) -> tuple[np.ndarray, np.ndarray, int]:
        """The query terms' postings, column after column: (chunk rows, BM25 contribution of each in
        float64, terms found). Only these entries of the n chunks can have a BM25 score."""
        idx, vals = q_sparse
        cols = [(c, v) for c, v in ((self.columns.column(i), v) for i, v in zip(idx, vals)) if c is not None]
        if not cols or not self.n_docs:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64), 0
        c = np.array([x for x, _ in cols])
        w = np.array([v for _, v in cols]) * qdrant_idf(self.df[c], self.n_docs)
        ptr, rows, values = self.columns.indptr, self.columns.rows, self.columns.values
        spans = [(int(ptr[j]), int(ptr[j + 1]), wj) for j, wj in zip(c.tolist(), w.tolist())]
        out_rows = np.empty(sum(hi - lo for lo, hi, _ in spans), dtype=rows.dtype)
        out = np.empty(len(out_rows), dtype=np.float64)
        at = 0
        for lo, hi, wj in spans:  # float32 weight widened to float64, then times the term's IDF weight
            out_rows[at : at + hi - lo] = rows[lo:hi]
            np.multiply(values[lo:hi], np.float64(wj), out=out[at : at + hi - lo], dtype=np.float64)
            at += hi - lo
        return out_rows, out, len(spans)

    def has_any_term(self, terms: Sequence[str]) -> bool:
        """Whether any chunk contains any of these BM25 terms (each a binary search of the term columns)."""
        return any(self.columns.column(term_index(t)) is not None for t in terms)

    def rows_with_any(self, terms: Sequence[str]) -> np.ndarray:
        """The chunk rows holding any of these BM25 terms (their postings; a row may repeat)."""
        cols = [c for c in (self.columns.column(term_index(t)) for t in terms) if c is not None]
        ptr, rows = self.columns.indptr, self.columns.rows
        return np.concatenate([rows[ptr[c]:ptr[c + 1]] for c in cols]) if cols else np.zeros(0, dtype=np.int64)

    def bm25(self, q_sparse: tuple[Sequence[int], Sequence[float]]) -> np.ndarray:
        """BM25 per chunk (float64; 0 where no term matches). Each chunk's terms are added in the
        query's order in float64, as scipy's CSC product did: the same bits as before."""
        rows, contrib, _ = self.postings(q_sparse)
        return np.bincount(rows, weights=contrib, minlength=self.n_docs) if len(rows) else np.zeros(self.n_docs)

    def score(self, q_dense: np.ndarray, q_sparse: tuple[tuple[int, ...], tuple[float, ...]], path_filter: str | None = None) -> Scores:
        """Exact cosine and BM25 for every chunk (the small-collection path)."""
        dense = self.dense @ q_dense.astype(np.float32) if self.n_docs else np.zeros(0, np.float32)
        return Scores(dense=dense, sparse=self.bm25(q_sparse), mask=self.path_mask(path_filter))

    def cosines(self, q_dense: np.ndarray, rows: Sequence[int]) -> np.ndarray:
        """Exact cosine of the given rows (gathered from the mapped matrix)."""
        if not len(rows):
            return np.zeros(0, dtype=np.float32)
        return self.dense[np.asarray(rows, dtype=np.int64)] @ q_dense.astype(np.float32)

    def dense_top(self, q_dense: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[int]:
        """The k best rows by cosine, best first: exact over all rows when small, else the
        projection's ``oversample`` best (among ``mask``) rescored exactly."""
        if not self.approximate:
            return top_indices(self.dense @ q_dense.astype(np.float32), k, mask)
        assert self.codes is not None
        cand = np.sort(self.codes.candidates(q_dense, max(self.oversample, k), mask))
        return top_of(self.cosines(q_dense, cand), cand, k)


def top_of(scores: np.ndarray, rows: np.ndarray, k: int) -> list[int]:
    """The k rows with the best scores, best first, ties by row (``scores[j]`` belongs to ``rows[j]``)."""
    if k <= 0 or not len(rows):
        return []
    order = np.lexsort((rows, -scores.astype(np.float64)))[:k]
    return rows[order].tolist()


def top_positive(scores: np.ndarray, k: int, mask: np.ndarray | None = None,
                 postings: tuple[np.ndarray, int] | None = None) -> list[int]:
    """As ``top_indices(..., positive_only=True)`` (ties by row), without sorting all n. With
    ``postings`` (the rows the query terms list, and how many terms), only those rows are read:
    a row is listed at most once per term, so a value that k × terms listed entries reach is at
    most the k-th best row's."""
    if k <= 0 or not len(scores):
        return []
    if postings is not None and len(postings[0]) < len(scores):
        listed, terms = postings
        if mask is not None:
            listed = listed[mask[listed]]
        need = k * max(terms, 1)
    else:
        listed, need = np.flatnonzero((scores if mask is None else np.where(mask, scores, 0.0)) > 0), k
    vals = scores[listed]
    rows = np.unique(listed[vals >= floor_of_best(vals, need)])  # exact ties at the cut are kept, then ordered
    rows = rows[scores[rows] > 0]
    return top_of(scores[rows], rows, k)


def floor_of_best(vals: np.ndarray, m: int, step: int = 16) -> float:
    """A value at most the m-th largest of ``vals`` and close to it (−inf when there are fewer).
    A strided sample's threshold is used when at least m values reach it (one pass, instead of a
    partition of every value: ~50 ms for 1M values with many ties)."""
    if len(vals) <= m:
        return -math.inf
    if len(vals) > 50 * m:
        sample = vals[::step]
        keep = min(len(sample), 2 * m // step + 16)
        t = float(np.partition(sample, len(sample) - keep)[len(sample) - keep])
        if np.count_nonzero(vals >= t) >= m:
            return t
    return float(np.partition(vals, len(vals) - m)[len(vals) - m])


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
