"""The cuts — threshold on cosine, per-section dedupe, top-K — as LlamaIndex node post-processors.

Retrieval returns a ranked pool; these three, run in this order, decide what is kept. Moving a
slider in the app is re-running them over the same pool (:func:`apply_cuts`), which also
records, for every candidate, which cut removed it. Each cut's rule is written once, over
plain :class:`CutItem`\\ s, in ``cutrules.py``; the post-processors read the items off LlamaIndex
nodes, and :func:`apply_cuts` off ragcore's candidates (no node objects are built on the lab's
hot path, and the question path does not import LlamaIndex for them).

The threshold always applies to the cosine similarity between question and chunk, whatever
the retrieval mode: it is the one score on a fixed, readable scale (fused RRF scores such as
0.016 are not). ragcore's retriever puts the cosine in ``metadata["cosine"]`` in every mode;
a node from another retriever is judged by its own score.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from ragcore.types import DropReason
from ragcore.retrieval.cutrules import CutItem, apply_cuts, item_of_candidate, keep_above, keep_first_of_section, keep_top

__all__ = ["CosineThreshold", "CutItem", "SectionDedupe", "TopK", "apply_cuts", "cut_chain", "item_of_candidate", "item_of_node"]


def item_of_node(nws: NodeWithScore) -> CutItem:
    m = nws.node.metadata
    cosine = m["cosine"] if "cosine" in m else nws.score
    key = (m.get("path"), tuple(m.get("section") or ()), m.get("page")) if "path" in m else (nws.node.node_id,)
    return CutItem(cosine, key)


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
        return keep_above(items, self.threshold)


class SectionDedupe(_Cut):
    """Keeps the first (best-ranked) node of each (path, section, page); others are duplicates."""

    reason: ClassVar[DropReason] = "dedupe"

    @classmethod
    def class_name(cls) -> str:
        return "SectionDedupe"

    def keep(self, items: Sequence[CutItem]) -> list[bool]:
        return keep_first_of_section(items)


class TopK(_Cut):
    """Keeps the first ``top_k`` nodes."""

    reason: ClassVar[DropReason] = "top_k"
    top_k: int = 6

    @classmethod
    def class_name(cls) -> str:
        return "TopK"

    def keep(self, items: Sequence[CutItem]) -> list[bool]:
        return keep_top(items, self.top_k)


def cut_chain(*, top_k: int, threshold: float, dedupe: bool) -> list[_Cut]:
    """The cuts in the order they apply."""
    return [CosineThreshold(threshold=threshold), *([SectionDedupe()] if dedupe else []), TopK(top_k=top_k)]
