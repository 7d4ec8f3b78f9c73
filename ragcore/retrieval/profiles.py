"""A document's own description as dense signals: its title's vector and its centroid.

Chunk evidence scores a page by its best passages; these score the page as a whole. The title
("Writing custom django-admin commands", "Mailing lists") says what the page is for, and the
centroid (the normalised mean of its chunks' vectors) what it is about on average: a release
note that mentions everything once sits far from every focused question, a reference page on
one subject close to its questions. Both cost one matrix product per question.

Title vectors are the topic index's (``storage/headings.py``: stored in the shared
heading collection, embedded once); centroids come from the chunk vectors already in memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from ragcore.types import Chunk

TitleVectors = Callable[[Sequence[str]], Mapping[str, np.ndarray]]


@dataclass(frozen=True)
class DocCosines:
    """Per path: cosine(question, title) (absent: no title) and cosine(question, centroid)."""

    title: Mapping[str, float]
    centroid: Mapping[str, float]


class DocumentProfiles:
    def __init__(self, paths: Sequence[str], titles: np.ndarray, has_title: np.ndarray, centroids: np.ndarray) -> None:
        self.paths = tuple(paths)
        self.row = {p: i for i, p in enumerate(self.paths)}
        self.titles = titles
        self.has_title = has_title
        self.centroids = centroids

    @classmethod
    def build(cls, chunks: Sequence[Chunk], dense: np.ndarray, title_vectors: TitleVectors) -> "DocumentProfiles":
        paths = sorted({c.path for c in chunks})
        row = {p: i for i, p in enumerate(paths)}
        doc_of = np.fromiter((row[c.path] for c in chunks), np.int64, len(chunks))
        dim = dense.shape[1] if dense.ndim == 2 else 0
        sums = np.zeros((len(paths), dim), np.float64)
        np.add.at(sums, doc_of, np.asarray(dense, np.float64))
        norms = np.linalg.norm(sums, axis=1, keepdims=True)
        centroids = (sums / np.where(norms > 0, norms, 1.0)).astype(np.float32)
        title_of: dict[str, str] = {}
        for c in chunks:
            if c.title and c.title.strip():
                title_of.setdefault(c.path, c.title.strip())
        vecs = title_vectors(sorted(set(title_of.values()))) if title_of else {}
        titles = np.zeros((len(paths), dim), np.float32)
        has = np.zeros(len(paths), bool)
        for p, t in title_of.items():
            if t in vecs:
                titles[row[p]] = vecs[t]
                has[row[p]] = True
        return cls(paths, titles, has, centroids)

    def cosines(self, q_dense: np.ndarray, paths: Sequence[str]) -> DocCosines:
        """The two cosines for ``paths`` (the documents in a candidate pool)."""
        rows = [self.row[p] for p in paths if p in self.row]
        known = [p for p in paths if p in self.row]
        q = np.asarray(q_dense, np.float32)
        t = self.titles[rows] @ q if rows else np.zeros(0)
        c = self.centroids[rows] @ q if rows else np.zeros(0)
        return DocCosines(
            title={p: float(v) for p, v, r in zip(known, t, rows) if self.has_title[r]},
            centroid={p: float(v) for p, v in zip(known, c)},
        )
