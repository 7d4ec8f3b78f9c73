"""Hybrid search over one store: the in-process index cache, and the retrieval stages in order.

Retrieval is an ordered list of named stages (``POOL_STAGES``, ``CUT_STAGES``; each in
``stages.py``) run over one pool. It happens in two steps so the app can move top-K and the threshold
without asking again: :meth:`HybridSearch.pool` gathers and ranks the candidate pool (every candidate
with cosine, BM25, fused score and branch ranks); :meth:`HybridSearch.search` also reranks and cuts. :class:`~ragcore.llamaindex.retriever.HybridRetriever` wraps it as a
LlamaIndex ``BaseRetriever`` for one collection.
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Sequence

from ragcore.settings.config import RagcoreSettings
from ragcore.encoders.base import DenseEncoder
from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.storage.search_index import SearchIndex
from ragcore.encoders.sparse import Bm25Encoder
from ragcore.storage.store import Store
from ragcore.types import Candidate, RetrievalResult

from ragcore.retrieval.docsignals import DocSignalSource
from ragcore.retrieval.fields import FieldIndex
from ragcore.retrieval.fusion import PoolEntry
from ragcore.retrieval.rerank import Rerankers
from ragcore.retrieval.stages import BRANCHES, CUTS, DENSE, DOCUMENTS, EXPANSION, FUSION, RERANK, SPARSE, Pool

if TYPE_CHECKING:
    from ragcore.retrieval.stages import Sources, Stage
from ragcore.settings.models import parse_embed

# Retrieval, in order (retrieval/stages.py: one job each). The pool stages rank; the cut stages run on
# a question (``search``) but not in the lab, which cuts the ranked pool itself as its sliders move.
POOL_STAGES: tuple[Stage, ...] = (DENSE, SPARSE, BRANCHES, EXPANSION, FUSION, DOCUMENTS)
CUT_STAGES: tuple[Stage, ...] = (RERANK, CUTS)


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

    def doc_signals(self, collection: str, pool: Pool, cands: list[Candidate]) -> Any:
        """The document signals (title, centroid, named pages) of ``cands``' documents (docsignals.py)."""
        return self._doc_signals.signals(collection, self.index(collection), pool.query, pool.q_dense, cands, pool.kind,
                                         pool.settings)

    # ------------------------------------------------------------------ search

    def entries(self, collection: str, query: str, settings: RagcoreSettings) -> list[PoolEntry]:
        """The unranked pool: the best ``settings.candidates`` of each branch (the stages before fusion)."""
        before = POOL_STAGES[:POOL_STAGES.index(FUSION)]
        return list(run_stages(self, before, Pool(collection, query, settings)).entries)

    def pool(self, collection: str, query: str, settings: RagcoreSettings) -> RetrievalResult:
        """The ranked pool, nothing cut yet (the app moves top-K and the threshold over it)."""
        return run_stages(self, POOL_STAGES, Pool(collection, query, settings)).result()

    def search(self, collection: str, query: str, settings: RagcoreSettings) -> RetrievalResult:
        """The ranked pool for ``query``, reranked when a reranker is set, cut per ``settings``
        (threshold, dedupe, top-K)."""
        pool = run_stages(self, POOL_STAGES, Pool(collection, query, settings))
        note = model_note(self.encoder_for(collection), settings)
        if note:
            pool = pool.evolve(notes=pool.notes + (note,))
        return run_stages(self, CUT_STAGES, pool).result()


def run_stages(src: Sources, stages: Sequence[Stage], pool: Pool) -> Pool:
    """``pool`` through ``stages`` in order, each stage's time added to its latency bucket."""
    for stage in stages:
        t = time.perf_counter()
        pool = stage.run(src, pool)
        if stage.clock:
            latency = dict(pool.latency_ms)
            latency[stage.clock] = latency.get(stage.clock, 0.0) + (time.perf_counter() - t) * 1e3
            pool = pool.evolve(latency_ms=latency)
    return pool
