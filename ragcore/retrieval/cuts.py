"""The cuts — threshold on cosine, per-section dedupe, top-K — as LlamaIndex node post-processors.

Retrieval returns a ranked pool; these three, run in this order, decide what is kept. Moving a
slider in the app is re-running them over the same pool (:func:`apply_cuts`), which also
records, for every candidate, which cut removed it. Each cut's rule is written once, over
plain :class:`CutItem`\\ s; the post-processor reads the items off LlamaIndex nodes, and
:func:`apply_cuts` off ragcore's candidates (no node objects are built on the lab's hot path).

The threshold always applies to the cosine similarity between question and chunk, whatever
the retrieval mode: it is the one score on a fixed, readable scale (fused RRF scores such as
0.016 are not). ragcore's retriever puts the cosine in ``metadata["cosine"]`` in every mode;
a node from another retriever is judged by its own score.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Hashable, Sequence

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from ..types import Candidate, DropReason


@dataclass(frozen=True)
class CutItem:
    """What a cut looks at: the cosine and the section the passage belongs to."""

    cosine: float | None
    section_key: Hashable


def item_of_node(nws: NodeWithScore) -> CutItem:
    m = nws.node.metadata
    cosine = m["cosine"] if "cosine" in m else nws.score
    key = (m.get("path"), tuple(m.get("section") or ()), m.get("page")) if "path" in m else (nws.node.node_id,)
    return CutItem(cosine, key)


def item_of_candidate(c: Candidate) -> CutItem:
    return CutItem(c.dense_score, (c.chunk.path, c.chunk.section, c.chunk.page))


class _Cut(BaseNodePostprocessor):
    reason: ClassVar[DropReason]

    def keep(self, items: Sequence[CutItem]) -> list[bool]:
        raise NotImplementedError

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        flags = self.keep([item_of_node(n) for n in nodes])
        return [n for n, k in zip(nodes, flags) if k]


class CosineThreshold(_Cut):
    """Drops nodes whose cosine similarity to the question is below ``threshold`` (≤ 0: off)."""

    reason: ClassVar[DropReason] = "threshold"
    threshold: float = 0.0

    @classmethod
    def class_name(cls) -> str:
        return "CosineThreshold"

    def keep(self, items: Sequence[CutItem]) -> list[bool]:
        if self.threshold <= 0:
            return [True] * len(items)
        return [it.cosine is None or it.cosine >= self.threshold for it in items]


class SectionDedupe(_Cut):
    """Keeps the first (best-ranked) node of each (path, section, page); others are duplicates."""

    reason: ClassVar[DropReason] = "dedupe"

    @classmethod
    def class_name(cls) -> str:
        return "SectionDedupe"

    def keep(self, items: Sequence[CutItem]) -> list[bool]:
        seen: set[Hashable] = set()
        flags = []
        for it in items:
            flags.append(it.section_key not in seen)
            seen.add(it.section_key)
        return flags


class TopK(_Cut):
    """Keeps the first ``top_k`` nodes."""

    reason: ClassVar[DropReason] = "top_k"
    top_k: int = 6

    @classmethod
    def class_name(cls) -> str:
        return "TopK"

    def keep(self, items: Sequence[CutItem]) -> list[bool]:
        return [i < self.top_k for i in range(len(items))]


def cut_chain(*, top_k: int, threshold: float, dedupe: bool) -> list[_Cut]:
    """The cuts in the order they apply."""
    return [CosineThreshold(threshold=threshold), *([SectionDedupe()] if dedupe else []), TopK(top_k=top_k)]


def apply_cuts(candidates: Sequence[Candidate], *, top_k: int, threshold: float, dedupe: bool) -> tuple[Candidate, ...]:
    """Every candidate in rank order, marked kept or cut with the reason: the same rules the
    post-processors apply to nodes. Pure: same pool, new settings, new cuts."""
    ordered = sorted(candidates, key=lambda c: c.rank)
    remaining = list(range(len(ordered)))
    items = [item_of_candidate(c) for c in ordered]
    reasons: dict[int, DropReason] = {}
    for cut in cut_chain(top_k=top_k, threshold=threshold, dedupe=dedupe):
        flags = cut.keep([items[i] for i in remaining])
        reasons.update({i: cut.reason for i, k in zip(remaining, flags) if not k})
        remaining = [i for i, k in zip(remaining, flags) if k]
    return tuple(c.with_cut(reasons.get(i)) for i, c in enumerate(ordered))
