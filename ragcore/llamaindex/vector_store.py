"""The embedded default's query engine as a LlamaIndex vector store.

The embedded store of record is Qdrant's engine run in process (Qdrant Edge, ``edge_client.py``),
which lets one process in at a time; questions are served from the collection's query snapshot
(``snapshot.py``: memory-mapped vectors, BM25 columns, chunk payloads read per hit), which any
number of processes read. LlamaIndex has no vector store for either, so this is one, and what
``Store.vector_store`` returns on the embedded default: ::

    vs = SnapshotVectorStore(engine.store, "guide")
    index = VectorStoreIndex.from_vector_store(vs, embed_model=OnnxEmbedding(engine.encoder))
    index.as_retriever(similarity_top_k=5, vector_store_query_mode="hybrid").retrieve("…")

* **query** reads the snapshot and never opens Qdrant. Modes: ``default`` (cosine), ``sparse`` /
  ``text_search`` (BM25 with Qdrant's IDF), ``hybrid`` (both branches fused with RRF, as
  ragcore's retriever fuses them, without its document signals). Each node's metadata carries its
  cosine, BM25, fused score and branch ranks (``nodes.candidate_to_node``); ``similarities`` are
  the scores that rank the mode. ``node_ids``, ``doc_ids`` (document paths) and metadata
  ``filters`` (``==``, ``!=``, ``in``, ``nin`` on chunk metadata, AND/OR) keep matching chunks
  among the best ``max(20 × top-k, 200)`` of each branch, so a filter that matches almost nothing
  may return fewer than top-k nodes.
* **add** and **delete** write through the store of record (``Store.write_chunks``, as ingest
  writes: Edge points with the payload LlamaIndex's ``QdrantVectorStore`` writes); the next query
  reads the snapshot republished from it. Nodes must carry their embeddings.

On a Qdrant server (``RAGCORE_QDRANT_URL``) use ``Store.vector_store`` (``QdrantVectorStore``):
the server searches, nothing is snapshotted.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import uuid
from collections import Counter
from typing import Any, Callable, List, Sequence

import numpy as np
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.schema import BaseNode
from llama_index.core.vector_stores.types import (
    BasePydanticVectorStore,
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
    VectorStoreQueryResult,
)

from ragcore.settings.config import RagcoreSettings
from ragcore.storage.snapshot import width_of
from ragcore.storage.nodes import candidate_to_node, chunk_from_node
from ragcore.retrieval.fusion import rank_pool, rank_score_kind
from ragcore.retrieval.pools import local_pool
from ragcore.retrieval.search import HybridSearch
from ragcore.encoders.sparse import Bm25Encoder, SparseVec
from ragcore.storage.store import Store, point_id
from ragcore.types import Chunk

_MODES = {
    VectorStoreQueryMode.DEFAULT: "dense",
    VectorStoreQueryMode.SPARSE: "sparse",
    VectorStoreQueryMode.TEXT_SEARCH: "sparse",
    VectorStoreQueryMode.HYBRID: "hybrid",
}
_FILTER_OPS = {
    FilterOperator.EQ: lambda v, want: v == want,
    FilterOperator.NE: lambda v, want: v != want,
    FilterOperator.IN: lambda v, want: v in want,
    FilterOperator.NIN: lambda v, want: v not in want,
}
FILTERED_POOL = 200  # a filtered query ranks among at least this many chunks of each branch


class SnapshotVectorStore(BasePydanticVectorStore):
    """A collection of the embedded store: queries from its snapshot, writes to the store of record."""

    stores_text: bool = True
    flat_metadata: bool = False
    _store: Store = PrivateAttr()
    _collection: str = PrivateAttr()
    _settings: RagcoreSettings = PrivateAttr()
    _search: HybridSearch = PrivateAttr()

    def __init__(self, store: Store, collection: str, settings: RagcoreSettings | None = None,
                 search: HybridSearch | None = None) -> None:
        super().__init__()
        if not store.is_embedded:
            raise ValueError("SnapshotVectorStore serves the embedded store; on a Qdrant server use Store.vector_store()")
        self._store = store
        self._collection = collection
        self._settings = settings or store.settings
        # the encoder is never used here: LlamaIndex embeds the query and passes its vector
        self._search = search or HybridSearch(store, encoder=None, bm25=Bm25Encoder())  # type: ignore[arg-type]

    @property
    def client(self) -> Store:
        return self._store

    # ------------------------------------------------------------------ query

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        mode = _MODES.get(VectorStoreQueryMode(query.mode))
        if mode is None:
            raise ValueError(f"query mode {query.mode!r} is not supported: use default (cosine), sparse or "
                             "text_search (BM25), or hybrid (RRF of both)")
        k = _top_k(query, mode)
        if k <= 0 or not self._store.exists(self._collection):
            return VectorStoreQueryResult(nodes=[], similarities=[], ids=[])
        keep = _keep(query)
        s = self._settings.with_(retrieval_mode=mode, path_filter=None,
                                 candidates=max(k, self._settings.candidates) if keep is None else max(20 * k, FILTERED_POOL))
        idx = self._search.index(self._collection)
        pool = local_pool(idx, self._dense(query, mode), self._sparse(query, mode), s)
        if keep is not None:
            pool = [e for e in pool if keep(e.chunk)]  # RRF re-ranks each branch within what is left
        kind = rank_score_kind(mode, "rrf")
        cands = rank_pool(pool, retrieval_mode=mode, fusion="rrf", rrf_k=s.rrf_k, dense_weight=s.dense_weight)[:k]
        nodes = []
        for c in cands:
            node = candidate_to_node(c, kind).node
            node.id_ = point_id(c.chunk.chunk_id)  # the id the point has in Qdrant (and QdrantVectorStore)
            nodes.append(node)
        return VectorStoreQueryResult(nodes=nodes, similarities=[float(c.score_for(kind) or 0.0) for c in cands],
                                      ids=[n.node_id for n in nodes])

    def _dense(self, query: VectorStoreQuery, mode: str) -> np.ndarray:
        dim = width_of(self._store.read_meta(self._collection))  # the collection's model's width
        if mode == "sparse":
            return np.zeros(dim, dtype=np.float32)
        if query.query_embedding is None:
            raise ValueError("a default or hybrid query needs query_embedding (set an embed_model on the index)")
        v = np.asarray(query.query_embedding, dtype=np.float32)
        if v.shape != (dim,):
            raise ValueError(f"query_embedding has {v.size} dimensions; this collection's vectors have {dim}")
        return v / (np.linalg.norm(v) or 1.0)  # cosine, as the collection's vectors are normalised

    def _sparse(self, query: VectorStoreQuery, mode: str) -> SparseVec:
        if mode == "dense":
            return SparseVec((), ())
        if not (query.query_str or "").strip():
            raise ValueError("a sparse or hybrid query needs query_str (BM25 reads the question's words)")
        return self._search.bm25.encode_query(query.query_str)

    # ------------------------------------------------------------------ writes

    def add(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[str]:
        """Write ``nodes`` (with their embeddings) to the collection; returns their point ids."""
        missing = [n.node_id for n in nodes if n.embedding is None]
        if missing:
            raise ValueError(f"{len(missing)} node(s) have no embedding (first: {missing[0]}): embed them before add()")
        chunks = [_chunk_of(n) for n in nodes]
        dense = np.asarray([n.embedding for n in nodes], dtype=np.float32).reshape(len(nodes), -1)
        dense /= np.clip(np.linalg.norm(dense, axis=1, keepdims=True), 1e-12, None)
        with self._store.session():
            self._store.ensure_collection(self._collection, dense.shape[1])
            self._store.write_chunks(self._collection, chunks, dense, dict(Counter(c.path for c in chunks)))
        return [point_id(c.chunk_id) for c in chunks]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every chunk of the document ``ref_doc_id`` (its path, as ragcore's nodes name it)."""
        ids = [r.id for r in self._store.point_refs(self._collection) if r.path == ref_doc_id]
        if ids:
            self._store.delete_points(self._collection, ids)


def _chunk_of(node: BaseNode) -> Chunk:
    """The chunk a node is written as. A node from another pipeline has a UUID (or any string)
    for an id; a point id is the UUID form of a 32-hex chunk id, so such a node's chunk id is
    its UUID's hex (or a hash of its id): the node's id and its point id then agree."""
    chunk = chunk_from_node(node)
    if re.fullmatch(r"[0-9a-f]{32,}", chunk.chunk_id):
        return chunk
    try:
        hex_id = uuid.UUID(node.node_id).hex
    except ValueError:
        hex_id = hashlib.sha256(node.node_id.encode("utf-8")).hexdigest()[:32]
    return dataclasses.replace(chunk, chunk_id=hex_id)


def _top_k(query: VectorStoreQuery, mode: str) -> int:
    if mode == "hybrid" and query.hybrid_top_k:
        return int(query.hybrid_top_k)
    if mode == "sparse" and query.sparse_top_k:
        return int(query.sparse_top_k)
    return int(query.similarity_top_k)


def _keep(query: VectorStoreQuery) -> Callable[[Chunk], bool] | None:
    """The chunk predicate of the query's node ids, document ids and metadata filters (None: all)."""
    tests: list[Callable[[Chunk], bool]] = []
    if query.node_ids:
        wanted = set(query.node_ids)
        tests.append(lambda c: c.chunk_id in wanted or point_id(c.chunk_id) in wanted)
    if query.doc_ids:
        docs = set(query.doc_ids)
        tests.append(lambda c: c.path in docs)
    if query.filters is not None:
        tests.append(_filter_test(query.filters))
    if not tests:
        return None
    return lambda c: all(t(c) for t in tests)


def _filter_test(filters: MetadataFilters) -> Callable[[Chunk], bool]:
    parts = [(_filter_test(f) if isinstance(f, MetadataFilters) else _one_filter(f)) for f in filters.filters]
    if filters.condition == FilterCondition.OR:
        return lambda c: any(p(c) for p in parts)
    if filters.condition in (FilterCondition.AND, None):
        return lambda c: all(p(c) for p in parts)
    raise ValueError(f"filter condition {filters.condition!r} is not supported: use and / or")


def _one_filter(f: MetadataFilter) -> Callable[[Chunk], bool]:
    op = _FILTER_OPS.get(FilterOperator(f.operator))
    if op is None:
        raise ValueError(f"filter operator {f.operator!r} is not supported: use ==, !=, in, nin")
    want = set(f.value) if isinstance(f.value, list) else f.value

    def test(c: Chunk) -> bool:
        v = c.to_payload().get(f.key)
        return op(tuple(v) if isinstance(v, list) else v, want)

    return test
