"""A seat in the evidence for the best passage of a document the top-K does not hold.

Documents are ranked first (documents.py): a long page whose three best chunks are all fair beats a
page holding the single best passage, and the top-K evidence is then the first page's sections
only. On sqlalchemy-docs-qa that is how the hybrid's evidence lost the linked page BM25's kept
(bench/results/issue28-trust.md, round 3): the passage ranking put the answering chunk first or
second, the document ranking put its page second or third, behind six sections of another.

:func:`keep_top_with_seats` keeps the top-K as before and adds up to ``seats`` chunks: the best
passages (lowest ``chunk_rank``, among the passage ranking's first top-K) of documents the top-K
does not hold yet, one per document. Several good documents before many chunks of one; the top-K
itself is untouched, so a page that clearly holds the answer keeps every chunk it had. The pool's
ranking is not touched either (nDCG@10 and document recall over the pool do not move). Why added
rather than taking the place of the last chunk: measured on the four question sets, a displaced
chunk was at times the one the extractive answer quoted, and the answer then moved to a weaker page
(git-docs-qa, bench/results/issue28-recall15.md). The extractive composer does not open a seated
page on the seat alone (composer.held_back). Without a document ranking (``chunk_rank`` None,
doc_decay 0) the top-K already is the passage ranking's best, and no seat is given.
"""

from __future__ import annotations

from typing import Protocol, Sequence


EVIDENCE_SEATS = 1  # settings.evidence_seats's default (a test keeps them equal): Engine.recut's default


class Ranked(Protocol):
    chunk_rank: int | None  # rank among passages before documents were ranked
    doc: str | None  # its document (path)


def seated(items: Sequence[Ranked], top_k: int, seats: int) -> set[int]:
    """Positions (in ``items``) beyond the first ``top_k`` that get a seat: among the ``top_k``
    best passages, those of documents the first ``top_k`` items do not hold, the best one of each
    document, at most ``seats``."""
    docs = {it.doc for it in items[:top_k]}
    ranked = sorted((i for i, it in enumerate(items) if it.chunk_rank is not None), key=lambda i: items[i].chunk_rank)
    out: list[int] = []
    for i in ranked[:top_k]:
        if len(out) >= seats:
            break
        if items[i].doc not in docs:
            out.append(i)
            docs.add(items[i].doc)
    return set(out)


def keep_top_with_seats(items: Sequence[Ranked], top_k: int, seats: int) -> list[bool]:
    """The first ``top_k`` items and the seated ones (see :func:`seated`)."""
    keep = seated(items, top_k, max(seats, 0))
    return [i < top_k or i in keep for i in range(len(items))]
