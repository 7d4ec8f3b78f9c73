"""The cuts — threshold on cosine, per-section dedupe, top-K — as LlamaIndex node post-processors.

Retrieval returns a ranked pool; these three, run in this order, decide what is kept. Moving a
slider in the app is re-running them over the same pool (:func:`apply_cuts`), which also
records, for every candidate, which cut removed it.

The threshold always applies to the cosine similarity between question and chunk, whatever
the retrieval mode: it is the one score on a fixed, readable scale (fused RRF scores such as
0.016 are not). ragcore's retriever puts the cosine in ``metadata["cosine"]`` in every mode;
a node from another retriever is judged by its own score.
"""

from __future__ import annotations

from typing import Sequence

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle

from ..nodes import candidate_to_node
from ..types import Candidate, DropReason


def node_cosine(nws: NodeWithScore) -> float | None:
    m = nws.node.metadata
    return m["cosine"] if "cosine" in m else nws.score


class CosineThreshold(BaseNodePostprocessor):
    """Drops nodes whose cosine similarity to the question is below ``threshold`` (≤ 0: off)."""

    threshold: float = 0.0

    @classmethod
    def class_name(cls) -> str:
        return "CosineThreshold"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if self.threshold <= 0:
            return list(nodes)
        return [n for n in nodes if (cos := node_cosine(n)) is None or cos >= self.threshold]


class SectionDedupe(BaseNodePostprocessor):
    """Keeps the first (best-ranked) node of each (path, section, page); others are duplicates."""

    @classmethod
    def class_name(cls) -> str:
        return "SectionDedupe"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        seen: set[tuple] = set()
        out = []
        for n in nodes:
            m = n.node.metadata
            key = (m.get("path"), tuple(m.get("section") or ()), m.get("page")) if "path" in m else (n.node.node_id,)
            if key not in seen:
                seen.add(key)
                out.append(n)
        return out


class TopK(BaseNodePostprocessor):
    """Keeps the first ``top_k`` nodes."""

    top_k: int = 6

    @classmethod
    def class_name(cls) -> str:
        return "TopK"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        return list(nodes)[: max(self.top_k, 0)]


def cut_chain(*, top_k: int, threshold: float, dedupe: bool) -> list[tuple[DropReason, BaseNodePostprocessor]]:
    """The cuts in the order they apply, each with the reason it records."""
    chain: list[tuple[DropReason, BaseNodePostprocessor]] = [("threshold", CosineThreshold(threshold=threshold))]
    if dedupe:
        chain.append(("dedupe", SectionDedupe()))
    chain.append(("top_k", TopK(top_k=top_k)))
    return chain


def apply_cuts(candidates: Sequence[Candidate], *, top_k: int, threshold: float, dedupe: bool) -> tuple[Candidate, ...]:
    """Every candidate in rank order, marked kept or cut with the reason. Pure: same pool, new
    settings, new cuts; the post-processors see fresh nodes, the candidates are not changed."""
    ordered = sorted(candidates, key=lambda c: c.rank)
    remaining = [candidate_to_node(c) for c in ordered]
    reasons: dict[str, DropReason] = {}
    for reason, post in cut_chain(top_k=top_k, threshold=threshold, dedupe=dedupe):
        kept = post.postprocess_nodes(remaining)
        kept_ids = {n.node.node_id for n in kept}
        reasons.update({n.node.node_id: reason for n in remaining if n.node.node_id not in kept_ids})
        remaining = kept
    return tuple(c.with_cut(reasons.get(c.chunk.chunk_id)) for c in ordered)
