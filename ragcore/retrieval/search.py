"""Hybrid search over one store: the in-process index cache, the pool, the ranking, the cuts.

Retrieval happens in two steps so the app can move top-K and the threshold without asking
again: :meth:`HybridSearch.pool` gathers and ranks the candidate pool (every candidate with
cosine, BM25, fused score and branch ranks); :func:`~ragcore.llamaindex.postprocessors.apply_cuts` marks
what the post-processors keep. :class:`~ragcore.llamaindex.retriever.HybridRetriever` wraps it as a
LlamaIndex ``BaseRetriever`` for one collection.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable
from dataclasses import replace

import numpy as np

from ragcore.settings.config import RagcoreSettings
from ragcore.encoders.base import DenseEncoder
from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.storage.search_index import SearchIndex
from ragcore.encoders.sparse import Bm25Encoder
from ragcore.storage.store import Store
from ragcore.types import RetrievalResult

Expansion = tuple[tuple[str, float], ...]
from ragcore.retrieval.cutrules import apply_cuts
from ragcore.retrieval.docsignals import DocSignalSource, signals_enabled
from ragcore.retrieval.documents import rank_documents
from ragcore.retrieval.expansion import expanded_query, expansion_terms
from ragcore.retrieval.fields import FieldIndex
from ragcore.retrieval.fusion import PoolEntry, feedback, rank_pool, rank_score_kind
from ragcore.retrieval.pools import local_pool, server_pool
from ragcore.retrieval.rerank import Rerankers, rerank_result
from ragcore.settings.models import parse_embed


def model_note(encoder: Any, settings: RagcoreSettings) -> str | None:
    """What to say when the collection's own model is not the one ``RAGCORE_EMBED_MODEL`` names
    (that setting chooses the model of new collections; a collection is always asked with its own)."""
    own = getattr(encoder, "spec", "minilm") or "minilm"
    if not settings.embed_model:
        return None
    try:
        same = str(parse_embed(own)) == str(parse_embed(settings.embed_model))
    except ValueError:
        same = False
    if same:
        return None
    return (f"the question was embedded with this collection's own model, {own}; RAGCORE_EMBED_MODEL="
            f"{settings.embed_model} applies to collections built from now on")


class HybridSearch:
    """One per Engine: searches any collection of ``store`` (embedded index or Qdrant server)."""

    def __init__(self, store: Store, encoder: OnnxMiniLM, bm25: Bm25Encoder | None = None,
                 encoder_for: Callable[[str], DenseEncoder] | None = None) -> None:
        self.store = store
        self.encoder = encoder
        # each collection's own embedding model (the Engine's EncoderPool); without it, ``encoder`` for all
        self.encoder_for: Callable[[str], DenseEncoder] = encoder_for or (lambda _name: encoder)
        self.bm25 = bm25 or Bm25Encoder()
        self._indexes: dict[str, tuple[str, SearchIndex]] = {}
        self._fields: dict[str, tuple[SearchIndex, FieldIndex]] = {}
        self._lock = threading.Lock()
        self._doc_signals = DocSignalSource(store, encoder, self.encoder_for)
        self.rerankers = Rerankers()  # the Engine gives it the chat model (RAGCORE_RERANK=llm)

    # ------------------------------------------------------------------ in-process index (embedded store)

    def invalidate(self, collection: str) -> None:
        with self._lock:
            self._indexes.pop(collection, None)
            self._fields.pop(collection, None)

    def index(self, collection: str) -> SearchIndex:
        """The collection's in-process index: over its query snapshot (a stat per call notices a
        new one), else loaded from Qdrant once per corpus version (snapshots off)."""
        snap = self.store.snapshot(collection)
        key = f"snapshot:{snap.version}" if snap is not None else \
            f"qdrant:{self.store.read_meta(collection).get('corpus_version')}"
        with self._lock:
            hit = self._indexes.get(collection)
            if hit and hit[0] == key:
                return hit[1]
            idx = SearchIndex.from_snapshot(snap) if snap is not None else SearchIndex(self.store.load(collection))
            self._indexes[collection] = (key, idx)
            return idx

    def fields(self, collection: str) -> FieldIndex:
        """The collection's title/section/anchor/file-name index, built on first use per index."""
        idx = self.index(collection)
        with self._lock:
            hit = self._fields.get(collection)
            if hit is None or hit[0] is not idx:
                hit = (idx, FieldIndex(idx.chunks))
                self._fields[collection] = hit
            return hit[1]

    # ------------------------------------------------------------------ search

    def entries(self, collection: str, query: str, settings: RagcoreSettings) -> list[PoolEntry]:
        """The unranked pool: the best ``settings.candidates`` of each branch."""
        return self._entries(collection, query, self.encoder_for(collection).encode_queries([query])[0], settings)[0]

    def _entries(self, collection: str, query: str, q_dense: np.ndarray,
                 settings: RagcoreSettings) -> tuple[list[PoolEntry], Expansion]:
        q_sparse = self.bm25.encode_query(query)
        if not self.store.is_embedded:
            # field scores and feedback need the whole collection in process: server back end ranks on BM25 + cosine
            return server_pool(self.store.client, collection, q_dense, q_sparse, settings), ()
        idx = self.index(collection)
        fields = self.fields(collection).score(query) * settings.field_weight if settings.field_weight > 0 else None
        entries = local_pool(idx, q_dense, q_sparse, settings, fields)
        if settings.prf_terms <= 0 or settings.retrieval_mode == "dense":
            return entries, ()
        terms = expansion_terms(query, feedback(entries, settings), idx.idf, n_terms=settings.prf_terms, weight=settings.prf_weight)
        return local_pool(idx, q_dense, expanded_query(q_sparse, terms), settings, fields), terms

    def pool(self, collection: str, query: str, settings: RagcoreSettings) -> RetrievalResult:
        """The ranked pool, nothing cut yet."""
        t0 = time.perf_counter()
        q_dense = self.encoder_for(collection).encode_queries([query])[0]  # timed apart: the model, not the search
        t1 = time.perf_counter()
        entries, terms = self._entries(collection, query, q_dense, settings)
        t2 = time.perf_counter()
        kind = rank_score_kind(settings.retrieval_mode, settings.fusion)
        cands = rank_pool(entries, retrieval_mode=settings.retrieval_mode, fusion=settings.fusion,
                          rrf_k=settings.rrf_k, dense_weight=settings.dense_weight)
        signals = None
        if signals_enabled(settings) and self.store.is_embedded:
            signals = self._doc_signals.signals(collection, self.index(collection), query, q_dense, cands, kind, settings)
        cands = rank_documents(cands, kind, decay=settings.doc_decay, per_doc=settings.per_doc, signals=signals)
        if settings.field_weight > 0 and self.store.is_embedded:
            fi = self.fields(collection)
            cands = [replace(c, matched_fields=fi.explain(c.chunk, query)) if c.field_score else c for c in cands]
        return RetrievalResult(
            query=query, retrieval_mode=settings.retrieval_mode, rank_score_kind=kind, candidates=tuple(cands),
            latency_ms={"embed": (t1 - t0) * 1e3, "search": (t2 - t1) * 1e3, "fuse_and_cut": (time.perf_counter() - t2) * 1e3},
            expansion_terms=terms, query_vector=q_dense,
        )

    def search(self, collection: str, query: str, settings: RagcoreSettings) -> RetrievalResult:
        """The ranked pool for ``query``, reranked when a reranker is set, cut per ``settings``
        (threshold, dedupe, top-K)."""
        result = self.pool(collection, query, settings)
        note = model_note(self.encoder_for(collection), settings)
        if note:
            result = replace(result, notes=result.notes + (note,))
        result = rerank_result(result, self.rerankers.get(settings), top_n=settings.rerank_candidates,
                               timeout_s=settings.rerank_timeout_s)
        t = time.perf_counter()
        cut = apply_cuts(result.candidates, top_k=settings.top_k, threshold=settings.threshold, dedupe=settings.dedupe,
                         per_doc=settings.evidence_per_doc, rerank_threshold=settings.rerank_threshold,
                         seats=settings.evidence_seats)
        latency = dict(result.latency_ms)
        latency["fuse_and_cut"] += (time.perf_counter() - t) * 1e3
        return replace(result, candidates=cut, latency_ms=latency)
