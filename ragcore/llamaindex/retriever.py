"""ragcore's hybrid retrieval as a LlamaIndex ``BaseRetriever``.

It returns the ranked candidate pool as ``NodeWithScore``s: ``score`` is the score that ranks
them in the retrieval mode (cosine, BM25, or the fused RRF/weighted score), and each node's
metadata carries all of them (``cosine``, ``bm25``, ``fused``, ``score_kind``) with each branch's
rank (``dense_rank``, ``sparse_rank``, ``fused_rank``) and the overall ``rank``. None of those keys
reaches the LLM. The cuts are node post-processors (``postprocessors.py``)::

    retriever = engine.retriever_for("guide")  # or HybridRetriever(HybridSearch(store, encoder), "guide", settings)
    engine_ = RetrieverQueryEngine.from_args(retriever, llm=..., node_postprocessors=[
        CosineThreshold(threshold=0.3), SectionDedupe(), TopK(top_k=6), CitationNumberer()])
"""

from __future__ import annotations

from typing import Protocol

from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle

from ragcore.settings.config import RagcoreSettings
from ragcore.storage.nodes import candidate_to_node
from ragcore.types import RetrievalResult


class PoolSource(Protocol):
    """What the retriever needs of a search back end (``HybridSearch``)."""

    def pool(self, collection: str, query: str, settings: RagcoreSettings) -> RetrievalResult: ...


class HybridRetriever(BaseRetriever):
    def __init__(self, search: PoolSource, collection: str, settings: RagcoreSettings, **kwargs) -> None:
        super().__init__(**kwargs)
        self.search = search
        self.collection = collection
        self.settings = settings

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        result = self.search.pool(self.collection, query_bundle.query_str, self.settings)
        return [candidate_to_node(c, result.rank_score_kind) for c in result.candidates]
