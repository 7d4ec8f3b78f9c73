"""The corpus's topics: its section headings, embedded, to tell whether a corpus covers a
question at all.

A question that a corpus answers is usually the subject of one of its sections ("How do I
get started?" → "Getting started", "command not found: django-admin" → "django-admin and
manage.py"). A question it does not answer often shares words with some passage ("Why are
Python strings immutable?" → a sentence about ``strings_only`` converting Python numbers to
strings) but names no section's subject. On django-docs-qa the closest heading's cosine
separates answerable from unanswerable questions better than any passage- or sentence-level
similarity (AUC 0.84 vs 0.75 for the best evidence sentence; see
``bench/results/eval-django-analysis.md``), and it costs one matrix product per question.

A chunk's topic is its innermost heading (the page title when it has none). Heading vectors
have one home, ``storage/headings.py`` (Qdrant's shared ``ragcore__topics`` collection, keyed by
text): ingest embeds the headings it has not seen, and a snapshot's publish copies its
collection's into the snapshot, so a question reads them from there. A question that meets a
heading with no stored vector (a collection ingested before this module existed) embeds it in
memory, once per corpus version; it does not store it (reads never write).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ragcore.encoders.minilm import DIMENSION, OnnxMiniLM
from ragcore.storage.pathfilter import parse_path_filter, path_matches
from ragcore.storage.snapshot import SnapshotData
from ragcore.storage.sections import SectionRef, first_places, from_rows, section_ref
from ragcore.storage.store import Store


@dataclass(frozen=True)
class TopicMatch:
    """The heading closest to a question, and where its section starts."""

    heading: str
    score: float  # cosine(question, heading)
    path: str
    start_line: int
    anchor: str | None = None
    page: int | None = None


class TopicIndex:
    """One row per (heading, document): the first place each heading occurs in each file."""

    def __init__(self, matches: Sequence[TopicMatch], vectors: np.ndarray) -> None:
        self.rows = tuple(matches)
        self.vectors = vectors.reshape(len(self.rows), vectors.shape[-1])  # the collection's model's width

    def __len__(self) -> int:
        return len(self.rows)

    @classmethod
    def build(cls, refs: Iterable[SectionRef], store: Store, encoder: OnnxMiniLM) -> "TopicIndex":
        first = first_places(refs)
        # from the heading store; one never stored is embedded (uncached: thousands would flush the
        # query cache) and kept in memory only
        headings = store.headings.for_model(encoder.record())  # the collection's model's heading vectors
        return cls._of(first, headings.ensure((h for h, _ in first), encoder.encode_uncached, save=False))

    @classmethod
    def from_snapshot(cls, snap: SnapshotData, store: Store, encoder: OnnxMiniLM) -> "TopicIndex":
        """From a query snapshot's topic rows (else its chunks) and heading vectors; Qdrant is opened
        only for a heading the snapshot lacks (a collection ingested before headings were embedded)."""
        saved = getattr(snap.chunks, "persisted", lambda _: None)("topics.json")
        first = from_rows(saved) if saved is not None else first_places(section_ref(c) for c in snap.chunks)
        vecs = dict(snap.headings)
        if any(h not in vecs for h, _ in first):
            lacking = {h for h, _ in first if h not in vecs}
            vecs.update(store.headings.for_model(encoder.record()).ensure(lacking, encoder.encode_uncached, save=False))
        return cls._of(first, vecs)

    @classmethod
    def _of(cls, first: dict[tuple[str, str], SectionRef], vecs: dict[str, np.ndarray]) -> "TopicIndex":
        keys = sorted(first)
        rows = [TopicMatch(h, 0.0, p, first[h, p].start_line, first[h, p].anchor, first[h, p].page) for h, p in keys]
        mat = np.stack([vecs[h] for h, _ in keys]) if keys else np.zeros((0, DIMENSION), dtype=np.float32)
        return cls(rows, mat)

    def best(self, q_vec: np.ndarray, path_filter: str | None = None) -> TopicMatch | None:
        """The heading closest to the question (among documents the path filter admits)."""
        if not self.rows:
            return None
        sims = self.vectors @ q_vec
        if path_filter:
            patterns = parse_path_filter(path_filter)
            allowed = np.fromiter((path_matches(r.path, patterns) for r in self.rows), bool, len(self.rows))
            if not allowed.any():
                return None
            sims = np.where(allowed, sims, -np.inf)
        i = int(np.argmax(sims))
        r = self.rows[i]
        return TopicMatch(r.heading, float(sims[i]), r.path, r.start_line, r.anchor, r.page)


class TopicIndexes:
    """Each collection's topic index, kept while its source is unchanged: from its query snapshot
    (swapped when a new one is published), else rebuilt from Qdrant when the corpus version changes."""

    def __init__(self, store: Store, encoder: OnnxMiniLM, encoder_for: Callable[[str], Any] | None = None) -> None:
        self.store = store
        self.encoder = encoder
        self.encoder_for = encoder_for or (lambda _name: encoder)  # headings are embedded with the collection's model
        self._cache: dict[str, tuple[str, TopicIndex]] = {}
        self._lock = threading.Lock()

    def get(self, collection: str) -> TopicIndex:
        snap = self.store.snapshot(collection)
        key = f"snapshot:{snap.version}" if snap is not None else \
            f"qdrant:{self.store.read_meta(collection).get('corpus_version')}"
        with self._lock:
            hit = self._cache.get(collection)
            if hit is None or hit[0] != key:
                enc = self.encoder_for(collection)
                idx = TopicIndex.from_snapshot(snap, self.store, enc) if snap is not None else \
                    TopicIndex.build(self.store.section_refs(collection), self.store, enc)
                hit = (key, idx)
                self._cache[collection] = hit
            return hit[1]

    def invalidate(self, collection: str) -> None:
        with self._lock:
            self._cache.pop(collection, None)
