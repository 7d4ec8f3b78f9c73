"""Numbering the evidence [1..n]: the citation post-processor and the evidence it yields.

:class:`CitationNumberer` is a LlamaIndex ``BaseNodePostprocessor`` that works in any query
engine. It never changes the nodes it is given: it returns numbered copies, each with its
number in ``metadata["citation_n"]`` (hidden from the LLM and the embedder, like every
ragcore key) and a header the LLM does read, ``metadata["citation"]`` =
``[3] docs/a.md:12-20 · Section``, so that the model cites what the checker can verify. Two calls number two sets of copies independently.
"""

from __future__ import annotations

from typing import Sequence

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle

from ragcore.storage.nodes import CITATION_KEY, chunk_from_node
from ragcore.types import Evidence, Origin, ScoreKind
from ragcore.citations.evidence import evidence_from_candidates

__all__ = ["CitationNumberer", "EvidenceNumberer", "evidence_from_candidates", "evidence_from_nodes"]


HEADER_KEY = "citation"  # the one key of a numbered node the LLM reads: "[3] docs/a.md:12-20 · Section"


def _header(n: int, nws: NodeWithScore) -> str:
    chunk = chunk_from_node(nws.node)
    section = f" · {chunk.section_label}" if chunk.section else ""
    return f"[{n}] {chunk.locator}{section}"


class CitationNumberer(BaseNodePostprocessor):
    """Numbers nodes [start..] in the order given (the retriever's rank order, after the cuts)."""

    start: int = 1

    @classmethod
    def class_name(cls) -> str:
        return "CitationNumberer"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        out = []
        for i, nws in enumerate(nodes):
            n = self.start + i
            node = nws.node.model_copy()
            node.metadata = {**nws.node.metadata, HEADER_KEY: _header(n, nws), CITATION_KEY: n}
            node.excluded_llm_metadata_keys = [*nws.node.excluded_llm_metadata_keys, CITATION_KEY]
            node.excluded_embed_metadata_keys = [*nws.node.excluded_embed_metadata_keys, CITATION_KEY, HEADER_KEY]
            if not nws.node.get_metadata_str(MetadataMode.LLM):  # only the header shows: no "citation: " label
                node.metadata_template = "{value}"
            out.append(NodeWithScore(node=node, score=nws.score))
        return out


# kept for callers of the first version of this post-processor
EvidenceNumberer = CitationNumberer


def evidence_from_nodes(nodes: Sequence[NodeWithScore], *, origin: Origin | None = None, start: int = 1) -> tuple[Evidence, ...]:
    """Numbered nodes → the Evidence contract. A node's number is its ``citation_n`` when the
    numberer ran, else its position (``start``, ``start + 1``, …)."""
    out = []
    for i, nws in enumerate(nodes):
        m = nws.node.metadata
        kind: ScoreKind = m.get("score_kind") or "cosine"
        out.append(Evidence(
            n=int(m.get(CITATION_KEY, start + i)), chunk=chunk_from_node(nws.node), origin=origin or m.get("origin", "corpus"),
            score=nws.score, score_kind=kind, dense_score=m.get("cosine", nws.score if "rank" not in m else None),
            sparse_score=m.get("bm25"), fused_score=m.get("fused"),
        ))
    return tuple(out)
