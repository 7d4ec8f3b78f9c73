"""Warming a collection up in the background: its search and topic indexes, and (for a small
collection) every sentence's embedding, so the first questions do not pay for them."""

from __future__ import annotations

import atexit
import os
import threading
import time
from typing import TYPE_CHECKING

from ragcore.types import CollectionInfo

if TYPE_CHECKING:
    from .runtime import Runtime


def start_warmup(rt: "Runtime", collection: str, *, sentences: bool = True) -> None:
    """Load the collection's search and topic indexes and (``sentences``) embed every sentence
    once, in the background.

    The first question of a large collection otherwise waits for both indexes (Django: 1.7 s
    and 0.8 s). The extractive composer and the citation checker embed the evidence's sentences on
    every question (the encoder caches them); doing it ahead of time makes the demo questions
    answer in well under a second instead of the 2–5 s a cold set of evidence costs on two cores.
    """
    if os.environ.get("RAGCORE_APP_WARMUP", "1").lower() in ("0", "false", "no", "off"):
        return

    def work() -> None:
        try:
            from ragcore.storage.store import embed_text
            from ragcore.textutil import sentence_spans

            rt.engine.topic_index(collection)
            if not sentences and not rt.engine.store.is_embedded:
                return  # a Qdrant server searches by itself: no in-process index to load
            chunks = rt.engine.hybrid_search.index(collection).chunks
            if not sentences:
                return
            texts: list[str] = []
            for c in chunks:
                texts.extend(s.text for s in sentence_spans(c.text))
                texts.append(embed_text(c))
            for i in range(0, len(texts), 8):  # small batches: a question never waits long
                while rt.busy > 0 and not _STOP.is_set():
                    time.sleep(0.05)  # an analyst is waiting for an answer: give them the cores
                if _STOP.is_set():
                    return
                rt.engine.encoder.encode(texts[i : i + 8])
        except Exception:  # noqa: BLE001 - a warm-up must never break the app
            pass

    t = threading.Thread(target=work, name=f"ragcore-warmup-{collection}", daemon=True)
    _THREADS.append(t)
    t.start()


_WARMED: set[str] = set()
WARMUP_MAX_CHUNKS = 3000  # beyond this embedding every sentence costs more CPU than it saves


def ensure_warm(rt: "Runtime", info: CollectionInfo) -> None:
    """Warm a collection the first time any session picks it (once per process)."""
    key = f"{info.name}@{info.corpus_version}"
    with rt.lock:
        if key in _WARMED:
            return
        _WARMED.add(key)
    if info.chunks > 0:
        start_warmup(rt, info.name, sentences=info.chunks <= WARMUP_MAX_CHUNKS)


# background threads that run native code (onnxruntime) must be done before the interpreter
# tears down, or the process aborts ("terminate called without an active exception")
_STOP = threading.Event()
_THREADS: list[threading.Thread] = []


@atexit.register
def _join_threads() -> None:
    _STOP.set()
    for t in _THREADS:
        t.join(timeout=10)
