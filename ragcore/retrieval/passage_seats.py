"""Top-K that keeps a seat for the passage ranking's best chunks.

Documents are ranked first (documents.py): a long page whose three best chunks are all fair beats a
page holding the single best passage, and the top-K evidence is then the first page's sections
only. On sqlalchemy-docs-qa that is how the hybrid's evidence lost the linked page BM25's kept
(bench/results/issue28-trust.md, round 3): the passage ranking put the answering chunk first or
second, the document ranking put its page second or third, behind six sections of another.

:func:`keep_top_with_seats` keeps the top-K as before, except that the ``seats`` best chunks as
passages (lowest ``chunk_rank`` among those still in) are always among them, taking the places of
the last ones in document order. The pool's ranking is not touched (nDCG@10 and document recall
over the pool do not move), and the number of evidence chunks stays top-K. Without a document
ranking (``chunk_rank`` None, doc_decay 0) the two orders agree and this is plain top-K.
"""

from __future__ import annotations

from typing import Protocol, Sequence


EVIDENCE_SEATS = 0  # settings.evidence_seats's default (a test keeps them equal): Engine.recut's default


class Ranked(Protocol):
    chunk_rank: int | None  # rank among passages before documents were ranked


def seated(items: Sequence[Ranked], seats: int) -> set[int]:
    """Positions (in ``items``) of the ``seats`` items with the best passage rank."""
    ranked = sorted((i for i, it in enumerate(items) if it.chunk_rank is not None), key=lambda i: items[i].chunk_rank)
    return set(ranked[:max(seats, 0)])


def keep_top_with_seats(items: Sequence[Ranked], top_k: int, seats: int) -> list[bool]:
    """The ``seats`` best passages, then the rest in document order up to ``top_k`` items in all:
    a seated passage beyond the first ``top_k`` takes the place of the last unseated one."""
    keep = seated(items, min(seats, top_k))
    for i in range(len(items)):
        if len(keep) >= top_k:
            break
        keep.add(i)
    return [i in keep for i in range(len(items))]
