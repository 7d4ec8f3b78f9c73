"""The cuts' rules — threshold on cosine, per-section dedupe, per-document cap, top-K — over plain items.

Each rule is written once, here, without LlamaIndex: :func:`apply_cuts` runs them over ragcore's
candidates on the question and lab paths (no node objects, and no ``llama_index`` import: a
cold ``ragcore ask`` does not pay for it), and the node post-processors of ``llamaindex/postprocessors.py`` run the
same rules over LlamaIndex nodes.

The threshold always applies to the cosine similarity between question and chunk, whatever
the retrieval mode: it is the one score on a fixed, readable scale (fused RRF scores such as
0.016 are not). When a reranker ran (retrieval/rerank.py), ``rerank_threshold`` also cuts the
chunks whose rerank score is below it (reason "threshold" too).

The per-document cap (``per_doc``; settings.evidence_per_doc, off by default) keeps the evidence spanning the
corpus: documents are ranked first (documents.py), so without it the top-K can be six chunks of one
long page while the page that answers ranks second. At most ``per_doc`` chunks of one document are
kept, unless that document clearly holds the answer: it holds the passage ranking's best
``DOMINANT_TOP`` chunks (ranked as passages, before documents were ranked), or its document score is
at least ``CLEAR_LEAD`` times the next document's. So the cap engages only when no document stands
out; capping every question (the first rule alone) raised the evidence's document recall but made
the answer quote a weaker page on git-docs-qa (citation precision 0.364 → 0.256,
bench/results/issue28-trust.md). A chunk over the cap is cut with the reason ``per_doc`` and the
next document's chunks take its place, so the lab shows why it left.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, Hashable, Protocol, Sequence

from ragcore.retrieval.passage_seats import keep_top_with_seats
from ragcore.types import Candidate, DropReason


@dataclass(frozen=True)
class CutItem:
    """What a cut looks at: the cosine and the section the passage belongs to."""

    cosine: float | None
    section_key: Hashable
    doc: str | None = None  # the document (path), for the per-document cap
    chunk_rank: int | None = None  # rank among passages before documents were ranked
    rerank: float | None = None  # the reranker's score, when a reranker ran (retrieval/rerank.py)
    doc_score: float | None = None  # its document's score (documents.py), for the per-document cap


# a document whose chunks hold the passage ranking's first DOMINANT_TOP places clearly holds the
# answer: its chunks are not capped (one page that says it all should not give way to weaker pages)
DOMINANT_TOP = 3
# ... and so does the first-ranked document when its score is this many times the second's. Chosen
# offline on django-, scrapy- and git-docs-qa (1.2 raised evidence recall and the quoted pages'
# precision on all three, 1.1 less so); the full evals of the four sets then showed citation
# precision down on Git and SQLAlchemy, so the cap stays off by default (issue28-trust.md)
CLEAR_LEAD = 1.2
EVIDENCE_PER_DOC = 0  # settings.evidence_per_doc's default (a test keeps them equal): Engine.recut's default cap


def item_of_candidate(c: Candidate) -> CutItem:
    return CutItem(c.dense_score, (c.chunk.path, c.chunk.section, c.chunk.page), c.chunk.path, c.chunk_rank,
                   c.rerank_score, c.doc_score)


class CutRule(Protocol):
    reason: DropReason

    def keep(self, items: Sequence[CutItem]) -> list[bool]: ...


def keep_above(items: Sequence[CutItem], threshold: float) -> list[bool]:
    """Cosine at or above ``threshold`` (≤ 0: off; no cosine: kept, it cannot be judged)."""
    if threshold <= 0:
        return [True] * len(items)
    return [it.cosine is None or it.cosine >= threshold for it in items]


def keep_reranked_above(items: Sequence[CutItem], threshold: float) -> list[bool]:
    """Rerank score at or above ``threshold`` (≤ 0: off; not reranked: kept, it cannot be judged)."""
    if threshold <= 0:
        return [True] * len(items)
    return [it.rerank is None or it.rerank >= threshold for it in items]


def keep_first_of_section(items: Sequence[CutItem]) -> list[bool]:
    """The first (best-ranked) item of each section; the others are duplicates."""
    seen: set[Hashable] = set()
    flags = []
    for it in items:
        flags.append(it.section_key not in seen)
        seen.add(it.section_key)
    return flags


def dominant_document(items: Sequence[CutItem]) -> str | None:
    """The document holding the passage ranking's first ``DOMINANT_TOP`` places, or the first
    document when its score leads the second's by ``CLEAR_LEAD``; None when none stands out."""
    ranked = sorted((it for it in items if it.chunk_rank is not None), key=lambda it: it.chunk_rank)
    top = {it.doc for it in ranked[:DOMINANT_TOP]}
    if len(ranked) >= DOMINANT_TOP and len(top) == 1:
        return top.pop()
    return leading_document(items)


def leading_document(items: Sequence[CutItem]) -> str | None:
    """The first item's document when its score is at least ``CLEAR_LEAD`` times the best score of
    another document (items in rank order: documents ranked, then passages)."""
    scores: dict[str | None, float] = {}
    for it in items:
        if it.doc is not None and it.doc_score is not None:
            scores.setdefault(it.doc, it.doc_score)
    if not items or items[0].doc not in scores or len(scores) < 2:
        return None
    first = scores[items[0].doc]
    second = max(v for d, v in scores.items() if d != items[0].doc)
    return items[0].doc if second > 0 and first >= CLEAR_LEAD * second else None


def keep_per_document(items: Sequence[CutItem], per_doc: int) -> list[bool]:
    """At most ``per_doc`` items of each document, in order (≤ 0: off); the dominant document's
    items are all kept (see the module docstring)."""
    if per_doc <= 0:
        return [True] * len(items)
    dominant = dominant_document(items)
    count: dict[str | None, int] = {}
    flags = []
    for it in items:
        n = count.get(it.doc, 0)
        flags.append(it.doc is None or it.doc == dominant or n < per_doc)
        count[it.doc] = n + 1
    return flags


def keep_top(items: Sequence[CutItem], top_k: int) -> list[bool]:
    return [i < top_k for i in range(len(items))]


@dataclass(frozen=True)
class Cut:
    """One cut: the reason it records and the function that keeps or drops each item."""

    reason: DropReason
    keep: Callable[[Sequence[CutItem]], list[bool]]


def rule_chain(*, top_k: int, threshold: float, dedupe: bool, per_doc: int = 0,
               rerank_threshold: float = 0.0, seats: int = 0) -> list[CutRule]:
    """The cuts' rules in the order they apply."""
    return [
        Cut("threshold", partial(keep_above, threshold=threshold)),
        *([Cut("threshold", partial(keep_reranked_above, threshold=rerank_threshold))] if rerank_threshold > 0 else []),
        *([Cut("dedupe", keep_first_of_section)] if dedupe else []),
        *([Cut("per_doc", partial(keep_per_document, per_doc=per_doc))] if per_doc > 0 else []),
        # seats > 0: the best passage of a document the top-K lacks joins it (passage_seats.py)
        Cut("top_k", partial(keep_top_with_seats, top_k=top_k, seats=seats) if seats > 0 else partial(keep_top, top_k=top_k)),
    ]


def apply_cuts(candidates: Sequence[Candidate], *, top_k: int, threshold: float, dedupe: bool,
               per_doc: int = 0, rerank_threshold: float = 0.0, seats: int = 0) -> tuple[Candidate, ...]:
    """Every candidate in rank order, marked kept or cut with the reason: the same rules the
    post-processors apply to nodes. Pure: same pool, new settings, new cuts."""
    ordered = sorted(candidates, key=lambda c: c.rank)
    remaining = list(range(len(ordered)))
    items = [item_of_candidate(c) for c in ordered]
    reasons: dict[int, DropReason] = {}
    seated: set[int] = set()
    for cut in rule_chain(top_k=top_k, threshold=threshold, dedupe=dedupe, per_doc=per_doc,
                          rerank_threshold=rerank_threshold, seats=seats):
        flags = cut.keep([items[i] for i in remaining])
        reasons.update({i: cut.reason for i, k in zip(remaining, flags) if not k})
        if cut.reason == "top_k":  # kept beyond the first top_k: a passage seat kept it (passage_seats.py)
            seated = {i for pos, (i, k) in enumerate(zip(remaining, flags)) if k and pos >= top_k}
        remaining = [i for i, k in zip(remaining, flags) if k]
    # seated is set afresh: a re-cut of the same pool with fewer seats must not keep an old mark
    return tuple(c.evolve(kept=i not in reasons, dropped_reason=reasons.get(i), seated=i in seated)
                 for i, c in enumerate(ordered))
