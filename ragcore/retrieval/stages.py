"""Retrieval as an ordered list of named stages, each with one job, over one :class:`Pool`.

``search.py`` lists them (``POOL_STAGES``, then ``CUT_STAGES``) and runs them in order; each stage
takes the pool so far and returns the next. A stage reads what it needs of the collection through
:class:`Sources` (the in-process index, the field index, document signals, rerankers), never the
caller's state, and reports nothing but the pool (its time is added to the latency bucket it names).

To add a stage: a module with an object that has ``name``, ``clock`` and ``run(sources, pool)``,
and one entry in ``search.py``'s list (ARCHITECTURE.md, "Where to add …").
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Protocol

import numpy as np

from ragcore.encoders.sparse import SparseVec
from ragcore.retrieval.cutrules import apply_cuts
from ragcore.retrieval.docsignals import signals_enabled
from ragcore.retrieval.documents import rank_documents
from ragcore.retrieval.expansion import expanded_query, expansion_terms
from ragcore.retrieval.fusion import PoolEntry, feedback, rank_pool, rank_score_kind
from ragcore.retrieval.pools import local_pool, server_pool
from ragcore.retrieval.rerank import rerank_result
from ragcore.settings.config import RagcoreSettings
from ragcore.types import Candidate, RetrievalResult

Expansion = tuple[tuple[str, float], ...]

if TYPE_CHECKING:  # the stages' contracts, for the type checker (Protocol classes cost import time)

    class Sources(Protocol):
        """What stages read of a collection (``HybridSearch`` provides it)."""

        store: Any
        bm25: Any
        rerankers: Any

        def encoder_for(self, collection: str) -> Any: ...

        def index(self, collection: str) -> Any: ...

        def fields(self, collection: str) -> Any: ...

        def doc_signals(self, collection: str, pool: Pool, cands: list[Candidate]) -> Any: ...

    class Stage(Protocol):
        name: str
        clock: str  # the latency bucket its time goes to: embed, search or fuse_and_cut

        def run(self, src: Sources, pool: Pool) -> Pool: ...


@dataclass(frozen=True)
class Pool:
    """What the stages pass along: the question's two queries, the branches' entries, the ranked
    candidates (once fused) and what later stages add (expansion terms, notes, latency)."""

    collection: str
    query: str
    settings: RagcoreSettings
    q_dense: Any = None  # the question's vector (the dense stage)
    q_sparse: SparseVec | None = None  # its BM25 query (the sparse stage)
    fields: np.ndarray | None = None  # per chunk, the weighted field score added to BM25 (the sparse stage)
    entries: tuple[PoolEntry, ...] = ()  # the branches' best, unranked
    expansion: Expansion = ()
    candidates: tuple[Candidate, ...] = ()  # ranked (fusion on)
    notes: tuple[str, ...] = ()
    latency_ms: dict[str, float] = field(default_factory=dict)

    def evolve(self, **changes: Any) -> "Pool":
        return replace(self, **changes)

    @property
    def kind(self) -> Any:
        return rank_score_kind(self.settings.retrieval_mode, self.settings.fusion)

    def result(self) -> RetrievalResult:
        return RetrievalResult(
            query=self.query, retrieval_mode=self.settings.retrieval_mode, rank_score_kind=self.kind,
            candidates=tuple(self.candidates), latency_ms=self.latency_ms, expansion_terms=self.expansion,
            notes=self.notes, query_vector=self.q_dense)


@dataclass(frozen=True)
class Step:
    """A stage made of a function: ``run(src, pool) -> pool``."""

    name: str
    clock: str
    fn: Callable[[Sources, Pool], Pool]

    def run(self, src: Sources, pool: Pool) -> Pool:
        return self.fn(src, pool)


# --------------------------------------------------------------------------- the stages


def _dense(src: Sources, p: Pool) -> Pool:
    """The question's vector, with the collection's own embedding model."""
    return p.evolve(q_dense=src.encoder_for(p.collection).encode_queries([p.query])[0])


def _sparse(src: Sources, p: Pool) -> Pool:
    """The question's BM25 query, and the field scores (titles, sections, anchors, file names) added to it."""
    q_sparse = src.bm25.encode_query(p.query)
    s = p.settings
    fields = None
    if src.store.is_embedded and s.field_weight > 0:
        fields = src.fields(p.collection).score(p.query) * s.field_weight
    return p.evolve(q_sparse=q_sparse, fields=fields)


def _branches(src: Sources, p: Pool) -> Pool:
    """The best ``candidates`` of each branch: the in-process index, or a Qdrant server's queries
    (which rank on BM25 + cosine alone: field scores and feedback need the whole collection in process)."""
    if not src.store.is_embedded:
        return p.evolve(entries=tuple(server_pool(src.store.client, p.collection, p.q_dense, p.q_sparse, p.settings)))
    return p.evolve(entries=tuple(local_pool(src.index(p.collection), p.q_dense, p.q_sparse, p.settings, p.fields)))


def _expansion(src: Sources, p: Pool) -> Pool:
    """Pseudo-relevance feedback: terms of the first pass's best chunks join the BM25 query, and the
    branches are gathered again (off: prf_terms 0, dense mode, a server)."""
    s = p.settings
    if not src.store.is_embedded or s.prf_terms <= 0 or s.retrieval_mode == "dense":
        return p
    idx = src.index(p.collection)
    terms = expansion_terms(p.query, feedback(list(p.entries), s), idx.idf, n_terms=s.prf_terms, weight=s.prf_weight)
    entries = local_pool(idx, p.q_dense, expanded_query(p.q_sparse, terms), s, p.fields)
    return p.evolve(entries=tuple(entries), expansion=terms)


def _fusion(src: Sources, p: Pool) -> Pool:
    """One ranking of the pool: RRF or weighted fusion of the branches (or one branch's order)."""
    s = p.settings
    cands = rank_pool(list(p.entries), retrieval_mode=s.retrieval_mode, fusion=s.fusion, rrf_k=s.rrf_k,
                      dense_weight=s.dense_weight)
    return p.evolve(candidates=tuple(cands))


def _documents(src: Sources, p: Pool) -> Pool:
    """Documents ranked, then passages: chunk evidence with the title, centroid and named-page signals;
    which fields matched, for the lab."""
    s = p.settings
    cands = list(p.candidates)
    signals = src.doc_signals(p.collection, p, cands) if signals_enabled(s) and src.store.is_embedded else None
    cands = rank_documents(cands, p.kind, decay=s.doc_decay, per_doc=s.per_doc, signals=signals)
    if s.field_weight > 0 and src.store.is_embedded:
        fi = src.fields(p.collection)
        cands = [replace(c, matched_fields=fi.explain(c.chunk, p.query)) if c.field_score else c for c in cands]
    return p.evolve(candidates=tuple(cands))


def _rerank(src: Sources, p: Pool) -> Pool:
    """The best of the pool rescored by the reranker the settings name (none: unchanged)."""
    s = p.settings
    r = rerank_result(p.result(), src.rerankers.get(s), top_n=s.rerank_candidates, timeout_s=s.rerank_timeout_s)
    return p.evolve(candidates=r.candidates, latency_ms=dict(r.latency_ms), notes=r.notes)


def _cuts(src: Sources, p: Pool) -> Pool:
    """The cut rules (cutrules.py): threshold, dedupe, per-document cap, top-K and passage seats."""
    s = p.settings
    cut = apply_cuts(p.candidates, top_k=s.top_k, threshold=s.threshold, dedupe=s.dedupe, per_doc=s.evidence_per_doc,
                     rerank_threshold=s.rerank_threshold, seats=s.evidence_seats)
    return p.evolve(candidates=tuple(cut))


DENSE = Step("dense", "embed", _dense)
SPARSE = Step("sparse", "search", _sparse)
BRANCHES = Step("branches", "search", _branches)
EXPANSION = Step("expansion", "search", _expansion)
FUSION = Step("fusion", "fuse_and_cut", _fusion)
DOCUMENTS = Step("document signals", "fuse_and_cut", _documents)
RERANK = Step("rerank", "", _rerank)  # its own time is rerank_result's latency_ms["rerank"]
CUTS = Step("cuts", "fuse_and_cut", _cuts)
