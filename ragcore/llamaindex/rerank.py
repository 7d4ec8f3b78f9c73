"""The rerank stage as a LlamaIndex ``BaseNodePostprocessor`` (:class:`RerankPostprocessor`), over
the core module :mod:`ragcore.retrieval.rerank`: put it after ragcore's ``HybridRetriever`` and
before the cuts (``CosineThreshold``, ``SectionDedupe``, ``TopK``).

The best ``top_n`` nodes are rescored and re-ordered; each gets ``metadata["rerank_score"]`` and
its ``score`` becomes the rerank score. A reranker that fails or is too slow leaves the nodes in
their order and says why in ``metadata["rerank_note"]`` of the first node (and in :attr:`last_note`);
a query never fails because of it.
"""

from __future__ import annotations

from typing import Any

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle
from pydantic import PrivateAttr

from ragcore.retrieval.rerank import RerankError, Reranker, _within


class RerankPostprocessor(BaseNodePostprocessor):
    top_n: int = 30
    timeout_s: float = 10.0
    last_note: str | None = None

    _reranker: Any = PrivateAttr()

    def __init__(self, reranker: Reranker, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._reranker = reranker

    @classmethod
    def class_name(cls) -> str:
        return "RerankPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if query_bundle is None or not nodes:
            return nodes
        head, tail = nodes[: self.top_n], nodes[self.top_n :]
        texts = [n.node.get_content() for n in head]
        self.last_note = None
        try:
            scores = _within(self.timeout_s, lambda: self._reranker.scores(query_bundle.query_str, texts))
            if len(scores) != len(head):
                raise RerankError(f"it returned {len(scores)} scores for {len(head)} passages")
        except Exception as exc:  # noqa: BLE001 - the fused order stays; the note says why
            self.last_note = f"rerank ({self._reranker.name}) failed, so the fused order was kept: {exc}"
            nodes[0].node.metadata["rerank_note"] = self.last_note
            return nodes
        for n, s in zip(head, scores):
            n.node.metadata["rerank_score"] = float(s)
            n.score = float(s)
        return sorted(head, key=lambda n: -(n.score or 0.0)) + tail
