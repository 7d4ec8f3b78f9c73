"""Per-document signals for ranking documents, then passages: the document's title and centroid
cosines (profiles.py) and the documents the question or its best passages name (names.py).

Computed once per question over the documents already in the candidate pool; a document the
pool does not hold is not added (measured: adding named documents from outside the pool gained
0.007 nDCG@10 on git-docs-qa and nothing on django-docs-qa, and would need a passage to show).
The per-collection indexes are built on first use and rebuilt when the in-process index changes.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from ragcore.settings.config import RagcoreSettings
from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.storage.search_index import SearchIndex
from ragcore.storage.store import Store
from ragcore.types import Candidate, ScoreKind
from ragcore.storage.name_index import NameIndex
from ragcore.retrieval.profiles import DocumentProfiles


@dataclass(frozen=True)
class DocSignals:
    """What documents.py fuses with the chunk evidence, per path, and with which weights."""

    title: Mapping[str, float] = field(default_factory=dict)  # cosine(question, title)
    centroid: Mapping[str, float] = field(default_factory=dict)  # cosine(question, centroid)
    named: Mapping[str, float] = field(default_factory=dict)  # evidence score of the passages naming it
    named_by: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # "question:X" / "evidence:X"
    title_weight: float = 0.0
    centroid_weight: float = 0.0
    named_weight: float = 0.0

    @property
    def active(self) -> bool:
        return self.title_weight > 0 or self.centroid_weight > 0 or self.named_weight > 0


def signals_enabled(settings: RagcoreSettings) -> bool:
    return settings.doc_title_weight > 0 or settings.doc_centroid_weight > 0 or settings.named_weight > 0


def named_documents(
    cands: Sequence[Candidate], kind: ScoreKind, names: NameIndex, question: str, evidence: int,
) -> tuple[dict[str, float], dict[str, tuple[str, ...]]]:
    """Score per pool document named by the question (the best passage's score) or by one of the
    best ``evidence`` passages of another document (that passage's score, summed)."""
    ordered = sorted(cands, key=lambda c: c.rank)
    in_pool = {c.chunk.path for c in ordered}
    best = max((c.score_for(kind) or 0.0 for c in ordered), default=0.0)
    score: dict[str, float] = defaultdict(float)
    why: dict[str, list[str]] = defaultdict(list)
    for path, ns in names.in_question(question).items():
        if path in in_pool:
            score[path] += best
            why[path] += [f"question:{n}" for n in ns]
    for c in ordered[:evidence]:
        for path, n in names.in_evidence(c.chunk.text).items():
            if path in in_pool and path != c.chunk.path:
                score[path] += c.score_for(kind) or 0.0
                if f"evidence:{n}" not in why[path]:
                    why[path].append(f"evidence:{n}")
    return dict(score), {p: tuple(w) for p, w in why.items()}


class DocSignalSource:
    """Builds and caches each collection's profiles and names (one per HybridSearch), each only
    when a signal needs it: names cost a scan of the chunks, profiles the title vectors."""

    def __init__(self, store: Store, encoder: OnnxMiniLM, encoder_for: Callable[[str], Any] | None = None) -> None:
        self.store = store
        self.encoder = encoder
        self.encoder_for = encoder_for or (lambda _name: encoder)  # titles are compared in the collection's model
        self._names: dict[str, tuple[SearchIndex, NameIndex]] = {}
        self._profiles: dict[str, tuple[SearchIndex, DocumentProfiles]] = {}
        self._titles: dict[str, tuple[SearchIndex, dict[str, np.ndarray]]] = {}
        self._lock = threading.Lock()

    def names(self, collection: str, idx: SearchIndex) -> NameIndex:
        with self._lock:
            hit = self._names.get(collection)
            if hit is None or hit[0] is not idx:
                hit = (idx, NameIndex.build(idx.chunks))
                self._names[collection] = hit
            return hit[1]

    def profiles(self, collection: str, idx: SearchIndex) -> DocumentProfiles:
        with self._lock:
            hit = self._profiles.get(collection)
            if hit is None or hit[0] is not idx:
                hit = (idx, DocumentProfiles.build(idx.chunks, idx.dense, lambda t: self._title_vectors(collection, t)))
                self._profiles[collection] = hit
            return hit[1]

    def title_cosines(self, collection: str, idx: SearchIndex, q_dense: np.ndarray, cands: Sequence[Candidate]) -> dict[str, float]:
        """cosine(question, title) for the pool's documents, their titles read from the pool's own
        chunks: no scan of the collection (building every document's profile first decodes each
        chunk, 0.3-0.7 s on a cold 7k-chunk question and far more at a million). Equal to
        :meth:`DocumentProfiles.cosines`' title part; vectors are cached per index."""
        titles = {c.chunk.path: c.chunk.title.strip() for c in reversed(cands) if c.chunk.title and c.chunk.title.strip()}
        with self._lock:
            hit = self._titles.get(collection)
            if hit is None or hit[0] is not idx:
                hit = (idx, {})
                self._titles[collection] = hit
            known = hit[1]
        missing = sorted({t for t in titles.values() if t not in known})
        if missing:
            known.update(self._title_vectors(collection, missing))
        q = np.asarray(q_dense, np.float32)
        return {p: float(np.asarray(known[t], np.float32) @ q) for p, t in titles.items() if t in known}

    def _title_vectors(self, collection: str, texts: Sequence[str]) -> Mapping[str, np.ndarray]:
        """From the collection's query snapshot; a title it lacks (a collection ingested before
        titles were embedded with the headings) is embedded here and not stored: a question must
        not open embedded Qdrant (another process may be writing, and opening it costs seconds).
        Without a snapshot, from the shared heading store."""
        snap = self.store.snapshot(collection)
        if snap is None:
            enc = self.encoder_for(collection)  # titles are compared in the collection's own model
            return self.store.headings.for_model(enc.record()).ensure(texts, enc.encode_uncached, save=False)
        have = {t: snap.headings[t] for t in texts if t in snap.headings}
        missing = [t for t in texts if t not in have]
        if missing:
            have.update(zip(missing, self.encoder_for(collection).encode(missing)))
        return have

    def signals(
        self, collection: str, idx: SearchIndex, query: str, q_dense: np.ndarray, cands: Sequence[Candidate],
        kind: ScoreKind, settings: RagcoreSettings,
    ) -> DocSignals:
        title, centroid = {}, {}
        if settings.doc_centroid_weight > 0:  # the centroid needs every chunk: the whole profile
            cos = self.profiles(collection, idx).cosines(q_dense, list(dict.fromkeys(c.chunk.path for c in cands)))
            title, centroid = cos.title, cos.centroid
        elif settings.doc_title_weight > 0:
            title = self.title_cosines(collection, idx, q_dense, cands)
        named, why = ({}, {})
        if settings.named_weight > 0:
            named, why = named_documents(cands, kind, self.names(collection, idx), query, settings.named_evidence)
        return DocSignals(
            title=title, centroid=centroid, named=named, named_by=why,
            title_weight=settings.doc_title_weight, centroid_weight=settings.doc_centroid_weight,
            named_weight=settings.named_weight,
        )
