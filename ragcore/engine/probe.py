"""The "why not retrieved?" probe, on top of the Engine's public API (the lab shows it: ui/probe.py).

Given a question, the analyst's settings and an expected passage (a file, optionally a line,
or a pasted sentence), find the chunk that holds the passage and explain its fate:

1. retrieve with the analyst's settings (the real pool and cuts);
2. retrieve again with a large candidate pool (``candidates=1000``, no path filter) to learn the
   chunk's cosine, BM25 and ranks even when the real pool never saw it;
3. verdict: kept, or cut by threshold / dedupe / top_k / filter, or not a candidate, or not even
   in the large pool (then its cosine is computed directly), or not in the collection;
4. the retrieval signals that were on: the chunk's field matches (title, section, anchor, file
   name), its document's score and rank, and which expansion terms (pseudo-relevance feedback)
   it contains.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Literal

import numpy as np

from ragcore.settings.config import RagcoreSettings
from ragcore.storage.pathfilter import allows
from ragcore.engine.engine import Engine
from ragcore.encoders.sparse import tokenize
from ragcore.storage.store import embed_text
from ragcore.retrieval.probe import PassageMatch, best_match
from ragcore.types import Candidate, Chunk, RetrievalResult

Verdict = Literal[
    "kept", "threshold", "dedupe", "per_doc", "top_k", "filter", "not_candidate", "not_in_pool", "not_in_collection", "no_match",
]
BIG_POOL = 1000
PASSAGE_POOL = 100  # BM25 candidates searched for a pasted passage's text

FIXES: dict[str, str] = {
    "kept": "Nothing to fix: the chunk is in the evidence.",
    "threshold": "Lower the threshold (the lab's or the notebook's slider, or RAGCORE_THRESHOLD).",
    "dedupe": "Another chunk of the same section ranked higher and was kept instead. Read it; if you need both, turn dedupe off (RAGCORE_DEDUPE=false).",
    "per_doc": "Its document already fills the per-document cap. Raise the cap or turn it off (RAGCORE_EVIDENCE_PER_DOC=0), or raise top-K.",
    "top_k": "The chunk ranked just below the cut. Raise top-K (the lab's or the notebook's slider, or RAGCORE_TOP_K).",
    "filter": "The chunk's path does not match the path filter (RAGCORE_PATH_FILTER).",
    "not_candidate": "Neither branch ranked the chunk among its first candidates. Rephrase the question with the document's own words, try sparse mode for exact identifiers, or raise RAGCORE_CANDIDATES.",
    "not_in_pool": "The chunk is far from the question. Rephrase the question with the document's own words, or try sparse mode for exact identifiers.",
    "not_in_collection": "The file was not ingested or failed to ingest. Check the ingest report on the Library page.",
    "no_match": "No chunk of the collection contains this passage. Check the spelling, paste a longer passage, or check that the file was ingested.",
}


@dataclass(frozen=True)
class ProbeResult:
    verdict: Verdict
    message: str
    fix: str
    chunk: Chunk | None = None
    candidate: Candidate | None = None  # in the analyst's pool, when it is there
    big: Candidate | None = None  # in the large pool, when it is there
    cosine: float | None = None
    bm25: float | None = None
    dense_rank: int | None = None  # among all chunks (large pool)
    sparse_rank: int | None = None
    pool_size: int = 0
    competitor: Candidate | None = None  # dedupe: the chunk kept instead
    match_score: float | None = None  # passage probes: how well the chunk matches the passage
    match_kind: str | None = None  # passage probes: "verbatim", "near-verbatim" or "similar" (cosine)
    evidence_n: int | None = None
    # retrieval signals, None / empty when off: from the analyst's pool, else from the large pool
    field_score: float | None = None  # the part of its BM25 from title/section/anchor/file-name matches
    matched_fields: tuple[str, ...] = ()  # "field:term"
    doc_score: float | None = None  # its document's aggregated score
    doc_rank: int | None = None
    named_by: tuple[str, ...] = ()  # what names its document ("question:X", "evidence:X"), named pages on
    signals_from: Literal["pool", "large pool"] | None = None
    expansion_terms: tuple[tuple[str, float], ...] = ()  # what the analyst's retrieval added to the BM25 query
    expansion_matched: tuple[str, ...] = ()  # those of them the chunk contains
    rerank_score: float | None = None  # the reranker's score (RAGCORE_RERANK), when it rescored the chunk


def find_passage(engine: Engine, passage: str, settings: RagcoreSettings, collection: str) -> tuple[Chunk | None, float | None]:
    """The stored chunk holding a pasted passage: verbatim first, then near-verbatim, then nearest
    by cosine (``ragcore.retrieval.probe``)."""
    m = match_passage(engine, passage, settings, collection)
    return (m.chunk, m.score) if m else (None, None)


def match_passage(engine: Engine, passage: str, settings: RagcoreSettings, collection: str) -> PassageMatch | None:
    """Candidates from BM25 on the passage's own words (a large pool: the chunk that holds the
    passage ranks near its top whatever its cosine) and from the dense branch, then matched."""
    base = settings.with_(threshold=-1.0, dedupe=False, path_filter=None, prf_terms=0)
    sparse = engine.retrieve(passage, settings=base.with_(retrieval_mode="sparse", top_k=PASSAGE_POOL, candidates=PASSAGE_POOL),
                             collection=collection)
    dense = engine.retrieve(passage, settings=base.with_(retrieval_mode="dense", top_k=10, candidates=10), collection=collection)
    return best_match(passage, [*sparse.candidates, *dense.candidates])


def _cosine(engine: Engine, question: str, chunk: Chunk) -> float:
    v = engine.encoder.encode([question, embed_text(chunk)])
    return float(np.dot(v[0], v[1]))


def _chunks_at(file_chunks: list[Chunk], line: int | None) -> list[Chunk]:
    """The file's chunks that hold ``line`` (the nearest ones for a line between chunks)."""
    if not line:
        return file_chunks
    holding = [c for c in file_chunks if c.start_line <= line <= c.end_line]
    if not holding:  # a blank or heading line between chunks: take the nearest chunk
        dist = lambda c: min(abs(c.start_line - line), abs(c.end_line - line))  # noqa: E731
        nearest = min(dist(c) for c in file_chunks)
        holding = [c for c in file_chunks if dist(c) == nearest]
    return holding


def _in_pool_verdict(cand: Candidate, real: RetrievalResult, settings: RagcoreSettings, cos: float, common: dict[str, Any]) -> ProbeResult:
    """The chunk was a candidate of the analyst's own retrieval: kept, or which cut dropped it."""
    target: Chunk = common["chunk"]
    loc = target.locator
    if cand.kept:
        n = 1 + sum(1 for c in real.candidates if c.kept and c.rank < cand.rank)
        return ProbeResult("kept", f"{loc} was retrieved: rank {cand.rank}, kept as evidence [{n}].", FIXES["kept"],
                           evidence_n=n, **common)
    reason = cand.dropped_reason or "top_k"
    if reason == "threshold":
        msg = f"{loc} ranked {cand.rank} but its cosine {cos:.3f} is below the threshold {settings.threshold:.2f}."
        return ProbeResult("threshold", msg, FIXES["threshold"], **common)
    if reason == "dedupe":
        key = (target.path, target.section, target.page)
        winner = next((c for c in real.candidates if c.kept and (c.chunk.path, c.chunk.section, c.chunk.page) == key), None)
        msg = f"{loc} ranked {cand.rank}, but {winner.chunk.locator if winner else 'a better chunk'} of the same section" \
              f"{f' (rank {winner.rank})' if winner else ''} was kept instead (dedupe)."
        return ProbeResult("dedupe", msg, FIXES["dedupe"], competitor=winner, **common)
    if reason == "per_doc":
        same = sum(1 for c in real.candidates if c.kept and c.chunk.path == target.path)
        kept_of = f"{same} chunk of {target.path} was" if same == 1 else f"{same} chunks of {target.path} were"
        msg = f"{loc} ranked {cand.rank}, but {kept_of} already kept (per-document cap {settings.evidence_per_doc})."
        return ProbeResult("per_doc", msg, FIXES["per_doc"], **common)
    kept = [c for c in real.candidates if c.kept]
    msg = f"{loc} ranked {cand.rank}, below the top-K cut: {len(kept)} chunks were kept (top-K {settings.top_k})."
    return ProbeResult("top_k", msg, FIXES["top_k"], **common)


def _outside_pool_verdict(settings: RagcoreSettings, cos: float, bm25: float | None, common: dict[str, Any]) -> ProbeResult:
    """The chunk never was a candidate: filtered out, ranked too low, or far from the question."""
    loc = common["chunk"].locator
    if not allows(settings.path_filter, common["chunk"].path):
        msg = f"{loc} does not match the path filter {settings.path_filter!r}, so it was never searched."
        return ProbeResult("filter", msg, FIXES["filter"], **common)
    if common["big"] is not None:
        dr, sr = common["dense_rank"], common["sparse_rank"]
        sparse_s = f"sparse rank {sr} (BM25 {bm25:.2f})" if sr else "no terms in common with the question (BM25 0)"
        need = {"dense": "a dense rank", "sparse": "a sparse rank"}.get(settings.retrieval_mode, "a dense or a sparse rank")
        msg = (f"{loc} was not among the candidates: with {settings.candidates} candidates per branch it needed {need} "
               f"≤ {settings.candidates}, but it has dense rank {dr} (cosine {cos:.3f}) and {sparse_s}.")
        return ProbeResult("not_candidate", msg, FIXES["not_candidate"], **common)
    msg = f"{loc} is not even among the {BIG_POOL} best candidates; its cosine to the question is {cos:.3f}."
    return ProbeResult("not_in_pool", msg, FIXES["not_in_pool"], **common)


def signals(target: Chunk, cand: Candidate | None, big: Candidate | None,
            expansion: tuple[tuple[str, float], ...]) -> dict[str, Any]:
    """The chunk's retrieval signals: from the analyst's pool when it is there (its document's rank
    is then the one that ordered the evidence), else from the large pool."""
    src = cand or big
    words = set(tokenize(embed_text(target))) if expansion else set()
    return dict(
        field_score=src.field_score if src else None, matched_fields=src.matched_fields if src else (),
        doc_score=src.doc_score if src else None, doc_rank=src.doc_rank if src else None,
        named_by=src.named_by if src else (),
        signals_from=("pool" if cand else "large pool") if src else None,
        expansion_terms=expansion, expansion_matched=tuple(t for t, _ in expansion if t in words),
        rerank_score=src.rerank_score if src else None,
    )


def _rank_by(candidates: list[Candidate], score: Callable[[Candidate], float | None]) -> dict[str, int]:
    """chunk_id → 1-based rank by ``score``, highest first."""
    ordered = sorted(candidates, key=lambda c: -(score(c) or 0))
    return {c.chunk.chunk_id: i for i, c in enumerate(ordered, 1)}


def probe(
    engine: Engine, question: str, settings: RagcoreSettings, *, collection: str | None = None,
    path: str | None = None, line: int | None = None, passage: str | None = None,
) -> ProbeResult:
    name = collection or settings.collection
    match_score = match_kind = None
    # ---- which chunk is the analyst asking about?
    target: Chunk | None = None
    file_chunks: list[Chunk] = []
    if passage and passage.strip():
        m = match_passage(engine, passage, settings, name)
        target, match_score, match_kind = (m.chunk, m.score, m.kind) if m else (None, None, None)
        if target is None or (match_kind == "similar" and match_score is not None and match_score < 0.5):
            near = f" The closest chunk is {target.locator} (cosine {match_score:.2f} to the passage)." if target else ""
            return ProbeResult("no_match", "No chunk matches the pasted passage closely." + near, FIXES["no_match"],
                               chunk=target, match_score=match_score, match_kind=match_kind)
    elif path:
        file_chunks = _chunks_at(engine.document_chunks(path, collection=name), line)
        if not file_chunks:
            return ProbeResult("not_in_collection", f"{path} is not in the collection '{name}'.", FIXES["not_in_collection"])
    else:
        raise ValueError("name a file or paste a passage")

    real: RetrievalResult = engine.retrieve(question, settings=settings, collection=name)
    big_settings = settings.with_(retrieval_mode="hybrid", candidates=max(BIG_POOL, settings.candidates), path_filter=None)
    big: RetrievalResult = engine.retrieve(question, settings=big_settings, collection=name)
    big_by_id = {c.chunk.chunk_id: c for c in big.candidates}
    dense_rank = _rank_by([c for c in big.candidates if c.dense_score is not None], lambda c: c.dense_score)
    sparse_rank = _rank_by([c for c in big.candidates if (c.sparse_score or 0) > 0], lambda c: c.sparse_score)
    real_by_id = {c.chunk.chunk_id: c for c in real.candidates}

    if target is None:  # a file: its best-placed chunk (in the real pool first, else the big pool)
        def place(c: Chunk) -> tuple[int, int]:
            r = real_by_id.get(c.chunk_id)
            b = big_by_id.get(c.chunk_id)
            return (r.rank if r else 10**6, dense_rank.get(c.chunk_id, 10**6) if b else 10**7)

        target = min(file_chunks, key=place)

    cid = target.chunk_id
    b = big_by_id.get(cid)
    cand = real_by_id.get(cid)
    cos = b.dense_score if b else _cosine(engine, question, target)
    bm25 = b.sparse_score if b else None
    common: dict[str, Any] = dict(
        chunk=target, candidate=cand, big=b, cosine=cos, bm25=bm25, dense_rank=dense_rank.get(cid),
        sparse_rank=sparse_rank.get(cid), pool_size=len(real.candidates), match_score=match_score, match_kind=match_kind,
        **signals(target, cand, b, real.expansion_terms),
    )
    if cand is not None:
        return _in_pool_verdict(cand, real, settings, cos, common)
    return _outside_pool_verdict(settings, cos, bm25, common)
