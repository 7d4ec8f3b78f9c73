"""Pseudo-relevance feedback: what the question leaves implicit, taken from the best passages of
a first pass.

"How do I convert a number to a string?" never says ``str`` or ``repr``; the passages a first
pass ranks highest often do. The terms that weigh most in those passages (term frequency,
saturated as in BM25, times the corpus IDF; their section headings count too) and are not
already in the question are added to the BM25 query with a small weight, and the result records
them so the lab can show why a chunk matched. Offline: no model, no network.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

from ragcore.encoders.sparse import SparseVec, term_index, tokenize
from ragcore.types import Chunk

K1 = 1.2


def expansion_terms(
    query: str, feedback: Sequence[Chunk], idf: Callable[[str], float], *, n_terms: int, weight: float,
) -> tuple[tuple[str, float], ...]:
    """The ``n_terms`` best feedback terms with their query weights (best first, ≤ ``weight``)."""
    if n_terms <= 0 or not feedback:
        return ()
    q = set(tokenize(query))
    score: Counter[str] = Counter()
    for c in feedback:
        tf = Counter(t for t in tokenize(" ".join([*c.section, c.text])) if t not in q)
        for t, n in tf.items():
            # numbers and two-letter fragments are rarely what a question leaves implicit
            if len(t) < 3 or t.isdigit():
                continue
            score[t] += n / (n + K1) * idf(t)
    best = [(t, s) for t, s in score.most_common(n_terms) if s > 0]
    top = best[0][1] if best else 1.0
    return tuple((t, round(weight * s / top, 4)) for t, s in best)


def expanded_query(q: SparseVec, terms: Sequence[tuple[str, float]]) -> SparseVec:
    """The question's BM25 query plus the expansion terms at their weights."""
    w = dict(zip(q.indices, q.values))
    for t, v in terms:
        i = term_index(t)
        w[i] = max(w.get(i, 0.0), v)
    items = sorted(w.items())
    return SparseVec(tuple(i for i, _ in items), tuple(v for _, v in items))
