"""Ingest's pipeline: chunks → dense vectors → the store, in batches, on three stages at once.

``ingest`` (run.py) reads and chunks files and hands each file's chunks to a :class:`BatchWriter`,
which embeds and writes them in order while the next files are read. Order is what makes a crash
safe: a file's old points are deleted only after the batch that holds its last new chunk is
written (run.py's docstring has the whole story).
"""

from __future__ import annotations

import collections
import queue
import threading
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ragcore.encoders.base import CachingEncoder
from ragcore.ingest import space
from ragcore.ingest.inorder import ordered_map
from ragcore.storage.headings import HeadingStore, heading_texts
from ragcore.storage.store import Store, chunk_context, embed_text, point_id
from ragcore.types import Chunk

# (chunks written, chunks queued so far): after each written batch; chunks are the unit that takes the time
ChunkProgress = Callable[[int, int], None]


@dataclass(frozen=True)
class Batch:
    """Up to ``batch`` chunks on their way to the store, and what their write makes due;
    or (an endpoint's ingest) section headings whose vectors go to the heading store."""

    chunks: list[Chunk]
    doc_chunks: dict[str, int]  # chunk count of each file in the batch (stored on every point)
    due: list[str]  # stale point ids of files whose last chunk is in this batch: deleted after it
    headings: tuple[str, ...] = ()


@dataclass(frozen=True)
class Embedded:
    batch: Batch
    vecs: np.ndarray
    embedded: int  # how many of the vectors the model computed (the rest were reused)
    new_headings: tuple[str, ...] = ()  # the batch's headings not stored yet, in the order of ``vecs``


@dataclass
class FileSpan:
    """One source file's place in the stream of chunks: its chunks are ``[start, end)``."""

    rel: str
    start: int
    end: int
    reported: int = 0  # chunks of it written at the last progress report


class BatchWriter:
    """Embeds and writes chunks in batches of ``batch``, across and within files, while the
    caller reads and chunks the next files; a file's stale points are dropped only once all
    of its new chunks are written.

    Three stages, each keeping one resource busy: the caller's thread reads, parses and
    chunks (Python); the embedding stage runs the model (onnxruntime releases the GIL) — for
    an endpoint, ``workers`` requests at once (inorder.py), handed on in order; a writing
    thread upserts to Qdrant and deletes stale points, in order, one batch at a time (the
    local client is not safe for concurrent writes, and order is what makes a crash safe).
    Queues between them hold at most ``ahead`` batches (``write_ahead`` before the store): memory stays bounded and the
    model never waits for the store or the parser as long as they keep up. Progress is
    reported from the caller's thread only (a callback may raise to cancel).

    The writing thread starts by creating the collection and importing what the first write
    and the snapshot publish import lazily (:func:`warm_write_path`), while the caller reads the
    first files and the model embeds them: done at the first write instead, those imports (2–9 s
    on a busy machine) stalled the whole pipeline, the endpoint idle, with every queue full.

    With a ``heading_store`` (an endpoint's ingest), each new section heading and title goes
    through the same stage in batches of its own and is stored as it comes, so the endpoint is
    not left idle while the files are read and then kept busy with headings at the end.

    A chunk whose point already exists with the same embedding context keeps its stored dense
    vector: after a settings or version change (new fingerprint) every file is re-chunked, but
    only chunks that really changed are embedded again; BM25 vectors are always recomputed
    (they cost nothing next to the model).
    """

    def __init__(
        self, store: Store, encoder: CachingEncoder, collection: str, fingerprint: str, existing: set[str],
        batch: int, ahead: int, on_written: Callable[[int, str], None] | None = None,
        on_chunks: ChunkProgress | None = None, workers: int = 1, heading_store: HeadingStore | None = None,
        write_ahead: int = 0, cache: Any = None,
    ) -> None:
        self.store, self.encoder, self.collection = store, encoder, collection
        self.cache = cache  # a VectorCache (storage/vector_cache.py) shared by a repository's collections, or None
        self.dimension = encoder.record().dimension  # the model's width (an endpoint's: from its first answer)
        self.fingerprint, self.existing, self.batch = fingerprint, existing, batch
        self.workers, self.ahead = max(1, workers), ahead
        self.heading_store = heading_store
        self.heading_buf: list[str] = []
        self.heading_seen: set[str] = set()
        self.on_written = on_written  # (files done, current) -> None, called in the caller's thread
        self.on_chunks = on_chunks  # (chunks written, chunks queued) -> None, in the caller's thread too
        self.buf: list[Chunk] = []
        self.doc_chunks: dict[str, int] = {}
        self.stale: list[tuple[int, list[str]]] = []  # (end of the file in the stream, ids to delete)
        self.spans: collections.deque[FileSpan] = collections.deque()
        self.queued = self.batched = self.done = 0
        self.written = self.embedded = 0  # updated by the writing thread only
        self.error: BaseException | None = None
        self.space_folder: Any = None  # the data folder whose free space each batch checks (space.py)
        self.abort = threading.Event()
        self.store_lock = threading.Lock()  # one store call at a time: reuse lookups vs writes
        self.to_embed: queue.Queue[Batch | None] = queue.Queue(maxsize=ahead)
        # embedded batches waiting for the store (``write_ahead``, default ``ahead``): the model runs on
        # while the writing thread starts up (warm_write_path) instead of stalling after ``ahead`` batches
        self.to_write: queue.Queue[Embedded | None] = queue.Queue(maxsize=max(ahead, write_ahead))
        self.events: queue.SimpleQueue[int] = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._guard, args=(fn,), name=f"ragcore-ingest-{fn.__name__}", daemon=True)
                        for fn in (self._embed_loop, self._write_loop)]
        for t in self.threads:
            t.start()

    # ------------------------------------------------------------------ caller's thread

    def add_file(self, rel: str, chunks: list[Chunk], stale: list[str]) -> None:
        """Queue a file's chunks (none for a file skipped, unchanged or failed); full batches
        go to the model now, blocking while the model is ``ahead`` batches behind."""
        self.spans.append(FileSpan(rel, self.queued, self.queued + len(chunks)))
        if chunks:
            self.doc_chunks[chunks[0].path] = len(chunks)
        self.buf.extend(chunks)
        self.queued += len(chunks)
        if stale:
            self.stale.append((self.queued, stale))
        while len(self.buf) >= self.batch:
            self._send(self.buf[: self.batch])
            del self.buf[: self.batch]
        if self.heading_store is not None:
            new = heading_texts(chunks) - self.heading_seen
            self.heading_seen |= new
            self.heading_buf.extend(sorted(new))
            while len(self.heading_buf) >= self.batch:
                self._put(self.to_embed, Batch([], {}, [], tuple(self.heading_buf[: self.batch])))
                del self.heading_buf[: self.batch]
        self.pump()

    def flush(self) -> None:
        """Send what is left and wait until everything is written (reporting progress)."""
        if self.buf or self.stale:
            self._send(self.buf)
            self.buf = []
        if self.heading_buf:
            self._put(self.to_embed, Batch([], {}, [], tuple(self.heading_buf)))
            self.heading_buf = []
        self._put(self.to_embed, None)
        while any(t.is_alive() for t in self.threads):
            self.threads[-1].join(timeout=0.2)
            self.pump()
        self.pump()

    def close(self) -> None:
        """Stop the threads (after the batch each is on) and wait for them: nothing touches
        the store once ``ingest`` has returned or raised."""
        self.abort.set()
        for t in self.threads:
            t.join()

    def pump(self) -> None:
        """Report what was written since the last call; re-raise a thread's failure here."""
        if self.error is not None:
            raise self.error
        while True:
            try:
                written = self.events.get_nowait()  # one event per batch: each is reported
            except queue.Empty:
                break
            self._report(written)

    def _report(self, written: int) -> None:
        if self.on_chunks:
            self.on_chunks(written, self.queued)
        # files complete in order; a file without chunks completes silently with the one
        # before it (its name was reported when it was read)
        while self.spans and self.spans[0].end <= written:
            span = self.spans.popleft()
            self.done += 1
            if self.on_written and span.end > span.start:
                self.on_written(self.done, span.rel)
        head = self.spans[0] if self.spans else None
        if head and self.on_written and written - head.start > max(head.reported, 0):
            head.reported = written - head.start
            self.on_written(self.done, f"{head.rel}: {head.reported} chunks written")

    def _send(self, chunks: list[Chunk]) -> None:
        self.batched += len(chunks)
        due = [ids for end, ids in self.stale if end <= self.batched]
        self.stale = [(end, ids) for end, ids in self.stale if end > self.batched]
        counts = {c.path: self.doc_chunks[c.path] for c in chunks}
        self._put(self.to_embed, Batch(list(chunks), counts, [i for ids in due for i in ids]))

    def _put(self, q: queue.Queue, item: Any) -> None:
        while True:
            self.pump()
            try:
                return q.put(item, timeout=0.2)
            except queue.Full:
                continue

    # ------------------------------------------------------------------ worker threads

    def _guard(self, loop: Callable[[], None]) -> None:
        try:
            loop()
        except BaseException as exc:  # handed to the caller's thread, which raises it
            if self.error is None:
                self.error = exc
            self.abort.set()

    def _get(self, q: queue.Queue) -> Any:
        while not self.abort.is_set():
            try:
                return q.get(timeout=0.2)
            except queue.Empty:
                continue
        raise WorkerStopped()

    def _embed_loop(self) -> None:
        try:
            batches = iter(lambda: self._get(self.to_embed), None)
            for _, embedded in ordered_map(self._embed, batches, workers=self.workers, window=self.workers + self.ahead,
                                           check=self._check_abort, name="ragcore-ingest-embed"):
                self._put_worker(self.to_write, embedded)
            self._put_worker(self.to_write, None)
        except WorkerStopped:
            pass

    def _check_abort(self) -> None:
        if self.abort.is_set():
            raise WorkerStopped()

    def _embed(self, batch: Batch) -> Embedded:
        """One batch's vectors (in one of the embedding stage's threads)."""
        if batch.headings:
            assert self.heading_store is not None
            with self.store_lock:
                have = self.heading_store.get(list(batch.headings))  # shared by collections: maybe stored already
            new = tuple(t for t in batch.headings if t not in have)
            embed = getattr(self.encoder, "encode_for_ingest", self.encoder.encode_uncached)  # kept on disk as it comes
            vecs = embed(list(new)) if new else np.zeros((0, self.dimension), np.float32)
            return Embedded(batch, vecs, 0, new)
        vecs, embedded = self._vectors(batch.chunks)
        return Embedded(batch, vecs, embedded)

    def _write_loop(self) -> None:
        try:
            warm_write_path()  # not under the store's lock: the embedding stage reads stored headings meanwhile
            with self.store_lock:
                self.store.ensure_collection(self.collection, self.dimension)
            while (item := self._get(self.to_write)) is not None:
                if item.batch.headings:  # no chunks: nothing for the progress to report
                    if item.new_headings:
                        with self.store_lock:
                            self.heading_store.put(list(item.new_headings), item.vecs)  # type: ignore[union-attr]
                    continue
                with self.store_lock:
                    if item.batch.chunks:
                        space.check_batch(self.space_folder, len(item.batch.chunks))
                        self.store.write_chunks(self.collection, item.batch.chunks, item.vecs,
                                                item.batch.doc_chunks, self.fingerprint)
                    # only now is every chunk of these files in the store: their old versions can go
                    if item.batch.due:
                        self.store.delete_points(self.collection, item.batch.due)
                self.embedded += item.embedded
                self.written += len(item.batch.chunks)
                self.events.put(self.written)
        except WorkerStopped:
            pass

    def _put_worker(self, q: queue.Queue, item: Any) -> None:
        while not self.abort.is_set():
            try:
                return q.put(item, timeout=0.2)
            except queue.Full:
                continue
        raise WorkerStopped()

    def _vectors(self, chunks: list[Chunk]) -> tuple[np.ndarray, int]:
        """Dense vectors of ``chunks``: stored ones reused, the rest embedded."""
        ids = [point_id(c.chunk_id) for c in chunks]
        known = [i for i in ids if i in self.existing]
        stored = {}
        if known:
            with self.store_lock:
                stored = self.store.stored_vectors(self.collection, known)
        vecs = np.zeros((len(chunks), self.dimension), dtype=np.float32)
        todo = []
        for k, (c, pid) in enumerate(zip(chunks, ids)):
            hit = stored.get(pid)
            if hit is not None and hit[1] == chunk_context(c):
                vecs[k] = hit[0]
            else:
                todo.append(k)
        if todo and self.cache is not None:  # a git repository's vectors (storage/vector_cache.py)
            todo = self._from_cache(chunks, vecs, todo)
        if todo:  # an endpoint's answers are kept on disk as they arrive (encoders/cache.py): nothing is sent twice
            texts = [embed_text(chunks[k]) for k in todo]
            embed = getattr(self.encoder, "encode_for_ingest", self.encoder.encode_uncached)
            vecs[todo] = embed(texts)
            if self.cache is not None:
                self.cache.put(texts, vecs[todo])
        return vecs, len(todo)

    def _from_cache(self, chunks: list[Chunk], vecs: np.ndarray, todo: list[int]) -> list[int]:
        """Fill ``vecs`` from the repository's cache; the positions still to embed."""
        hits = self.cache.get([embed_text(chunks[k]) for k in todo], self.dimension)
        for j, vec in hits.items():
            vecs[todo[j]] = vec
        return [k for j, k in enumerate(todo) if j not in hits]


def warm_write_path() -> None:
    """Import what the store imports lazily on the way to the first written batch and the snapshot
    publish: LlamaIndex's node types (each chunk goes in as a ``TextNode``; ~2.7 s idle, up to 9 s
    under load), qdrant-client's models (deletes, metadata; ~1.9 s) and scipy.sparse (the
    snapshot's BM25 columns). A no-op once imported; called at ingest time, never at import."""
    import importlib

    from ragcore.storage.schema import qdrant_models

    importlib.import_module("ragcore.storage.nodes")
    qdrant_models()
    importlib.import_module("scipy.sparse")


class WorkerStopped(Exception):
    """A worker thread was told to stop (another failed, or the caller gave up)."""
