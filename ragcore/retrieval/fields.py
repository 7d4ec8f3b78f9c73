"""What documents say about themselves: a BM25-like score for question terms found in a chunk's
title, section headings, anchor and file name.

Chunk text dilutes these: "AUTH_USER_MODEL" is one word among 180 in the chunk that defines it,
but it is that chunk's section heading and anchor, and ``settings`` is its file's name. The
fields are scored apart from the body and the result is added to the chunk's BM25 score, with
``settings.field_weight``: the sparse branch then prefers the page (and the section) whose name
says what the question asks, and the chunk where an identifier is *defined* (its heading) over
chunks that merely mention it.

Built in process from the chunks' metadata, so it needs no re-ingest and changes no stored vector.
IDF is over documents, not chunks: a page's title is repeated on each of its chunks, and a long
page should not make its title's words look common.
"""

from __future__ import annotations

import posixpath
from typing import Sequence

import numpy as np

from ragcore.encoders.sparse import term_index, tokenize
from ragcore.types import Chunk

# Per-field weight of a matching term: headings and file names name a page's subject; an anchor
# mostly repeats its heading, so it counts for less.
FIELD_WEIGHTS = {"title": 1.0, "section": 1.0, "anchor": 0.5, "path": 1.0}


def _idf(df: np.ndarray, n: int) -> np.ndarray:
    return np.log((n - df + 0.5) / (df + 0.5) + 1.0)


def field_texts(chunk: Chunk) -> dict[str, str]:
    """The texts of a chunk's fields. Anchors and file names use - where code uses _
    (``auth-user-model``, ``git-config``): both spellings are indexed."""
    stem = posixpath.splitext(chunk.path)[0]
    anchor = chunk.anchor or ""
    return {
        "title": chunk.title or "",
        "section": " ".join(chunk.section),
        "anchor": f"{anchor} {anchor.replace('-', '_')}" if anchor else "",
        "path": f"{stem.replace('/', ' ')} {stem.replace('/', ' ').replace('-', '_')}",
    }


def field_terms(chunk: Chunk, cache: dict[str, frozenset[str]] | None = None) -> dict[str, frozenset[str]]:
    """Each field's terms. ``cache`` (text → terms) saves re-tokenising a title or heading that
    every chunk of a page repeats."""
    memo = {} if cache is None else cache
    out = {}
    for f, t in field_texts(chunk).items():
        if t not in memo:
            memo[t] = frozenset(tokenize(t))
        out[f] = memo[t]
    return out


class FieldIndex:
    """Chunks × terms, each cell the summed weight of the fields holding the term."""

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = tuple(chunks)
        cols: dict[int, int] = {}
        rows, cidx, vals = [], [], []
        doc_terms: dict[str, set[int]] = {}
        cache: dict[tuple, dict[int, float]] = {}
        texts: dict[str, frozenset[str]] = {}
        for r, c in enumerate(self.chunks):
            key = (c.path, c.title, c.section, c.anchor)
            if key not in cache:
                w: dict[int, float] = {}
                for f, terms in field_terms(c, texts).items():
                    for t in terms:
                        ti = term_index(t)
                        w[ti] = w.get(ti, 0.0) + FIELD_WEIGHTS[f]
                cache[key] = w
            for ti, v in cache[key].items():
                rows.append(r)
                cidx.append(cols.setdefault(ti, len(cols)))
                vals.append(v)
                doc_terms.setdefault(c.path, set()).add(ti)
        self._cols = cols
        from scipy import sparse as sp  # ~0.3 s to import: only when field scores are on, not on every question

        self.matrix = sp.csc_matrix((np.asarray(vals, np.float32), (rows, cidx)), shape=(len(self.chunks), max(len(cols), 1)))
        df = np.zeros(max(len(cols), 1))
        for terms in doc_terms.values():
            df[[cols[t] for t in terms]] += 1
        self.idf = _idf(df, max(len(doc_terms), 1))

    def score(self, query: str) -> np.ndarray:
        """Field score per chunk: Σ over the question's terms of IDF × field weight."""
        cols = sorted({self._cols[i] for i in (term_index(t) for t in tokenize(query)) if i in self._cols})
        if not cols or not self.chunks:
            return np.zeros(len(self.chunks))
        return np.asarray(self.matrix[:, cols] @ self.idf[cols]).ravel()

    def explain(self, chunk: Chunk, query: str) -> tuple[str, ...]:
        """Which of the question's terms matched which field of ``chunk``, as "field:term"."""
        q = set(tokenize(query))
        return tuple(f"{f}:{t}" for f, terms in field_terms(chunk).items() for t in sorted(terms & q))
