"""Incremental, crash-safe ingestion: files → chunks → vectors → Qdrant.

State lives in the chunk points themselves (each carries its path, the file's content hash
and how many chunks the file has), not in a side file that could disagree with them:

* a file is *unchanged* when the collection holds exactly ``doc_chunks`` points for its
  current hash and none for any other hash;
* a changed file's new chunks are written first — in bounded batches, a long file over
  several — then the points of its old version are deleted: a crash in between leaves both
  versions, or part of the new one, which the next run sees as "not unchanged" and repairs
  (reusing the vectors of the chunks that were already written);
* point ids are derived from chunk ids, so rewriting a chunk is idempotent (no duplicates);
* files that are gone are removed (``prune``), so no orphans survive.

A file that cannot be read is reported as failed and its previously ingested chunks are
kept: bad input loses nothing. Only what lies inside the folders being ingested is read:
discovery never follows a symlink out of them, never opens a FIFO, socket or device, walks
any depth without recursion, and reports every file it refuses with the reason.
"""

from __future__ import annotations

import collections
import hashlib
import queue
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ragcore.settings.config import RagcoreSettings
from ragcore.encoders.base import ModelRecord
from ragcore.encoders.minilm import MODEL_NAME, OnnxMiniLM
from ragcore.encoders.sparse import SPARSE_VERSION
from ragcore.storage.store import PointRef, Store, chunk_context, embed_text, point_id, utc_now
from ragcore.storage.sections import heading_of
from ragcore.types import Chunk, FileOutcome, IngestReport, LoadedDocument
from ragcore.ingest import space
from ragcore.storage.schema import check_collection_name
from ragcore.ingest.chunking import CHUNKER_VERSION, DEFAULT_MAX_CHUNK_CHARS, chunk_document
from ragcore.ingest.discover import SourceFile, _name_problem, _printable, discover  # noqa: F401  (discover: the engine's import)
from ragcore.ingest.read.loaders import LineLimitError, LoadError, load_bytes, read_bytes

Progress = Callable[[int, int, str], None]  # (files done, files total, current path or step)
# (chunks written, chunks queued so far): after each written batch; chunks are the unit that takes the time
ChunkProgress = Callable[[int, int], None]

# Chunks embedded and written at a time: bounds memory, and is the step of progress within a
# long file and of what a kill can lose (~15 s of model time on a busy 2-core machine, ~2 s idle).
WRITE_BATCH = 64
PIPELINE_AHEAD = 4  # batches read ahead of the model, and embedded ahead of the store
UPLOAD_ROOT = "(upload)"
CHUNK_LIMIT_HINT = "(setting max_file_chunks, env RAGCORE_MAX_FILE_CHUNKS)"

# Control characters in a name (newline, ESC of terminal escape codes, C1) would reach
# terminals, logs and "path:12-20" citations as they are: such files are refused by name.
# --------------------------------------------------------------------------- writing


@dataclass(frozen=True)
class _Batch:
    """Up to ``WRITE_BATCH`` chunks on their way to the store, and what their write makes due."""

    chunks: list[Chunk]
    doc_chunks: dict[str, int]  # chunk count of each file in the batch (stored on every point)
    due: list[str]  # stale point ids of files whose last chunk is in this batch: deleted after it


@dataclass(frozen=True)
class _Embedded:
    batch: _Batch
    vecs: np.ndarray
    embedded: int  # how many of the vectors the model computed (the rest were reused)


@dataclass
class _Span:
    """One source file's place in the stream of chunks: its chunks are ``[start, end)``."""

    rel: str
    start: int
    end: int
    reported: int = 0  # chunks of it written at the last progress report


class _Writer:
    """Embeds and writes chunks in batches of ``batch``, across and within files, while the
    caller reads and chunks the next files; a file's stale points are dropped only once all
    of its new chunks are written.

    Three threads, each keeping one resource busy: the caller's thread reads, parses and
    chunks (Python); an embedding thread runs the model (onnxruntime releases the GIL); a
    writing thread upserts to Qdrant and deletes stale points, in order, one batch at a time
    (the local client is not safe for concurrent writes, and order is what makes a crash
    safe). Queues between them hold at most ``ahead`` batches each: memory stays bounded and
    the model never waits for the store or the parser as long as they keep up. Progress is
    reported from the caller's thread only (a callback may raise to cancel).

    A chunk whose point already exists with the same embedding context keeps its stored dense
    vector: after a settings or version change (new fingerprint) every file is re-chunked, but
    only chunks that really changed are embedded again; BM25 vectors are always recomputed
    (they cost nothing next to the model).
    """

    def __init__(
        self, store: Store, encoder: OnnxMiniLM, collection: str, fingerprint: str, existing: set[str],
        batch: int = WRITE_BATCH, ahead: int = PIPELINE_AHEAD, on_written: Callable[[int, str], None] | None = None,
        on_chunks: ChunkProgress | None = None,
    ) -> None:
        self.store, self.encoder, self.collection = store, encoder, collection
        self.dimension = encoder.record().dimension  # the model's width (an endpoint's: from its first answer)
        self.fingerprint, self.existing, self.batch = fingerprint, existing, batch
        self.on_written = on_written  # (files done, current) -> None, called in the caller's thread
        self.on_chunks = on_chunks  # (chunks written, chunks queued) -> None, in the caller's thread too
        self.buf: list[Chunk] = []
        self.doc_chunks: dict[str, int] = {}
        self.stale: list[tuple[int, list[str]]] = []  # (end of the file in the stream, ids to delete)
        self.spans: collections.deque[_Span] = collections.deque()
        self.queued = self.batched = self.done = 0
        self.written = self.embedded = 0  # updated by the writing thread only
        self.error: BaseException | None = None
        self.space_folder: Any = None  # the data folder whose free space each batch checks (space.py)
        self.abort = threading.Event()
        self.store_lock = threading.Lock()  # one store call at a time: reuse lookups vs writes
        self.to_embed: queue.Queue[_Batch | None] = queue.Queue(maxsize=ahead)
        self.to_write: queue.Queue[_Embedded | None] = queue.Queue(maxsize=ahead)
        self.events: queue.SimpleQueue[int] = queue.SimpleQueue()
        self.threads = [threading.Thread(target=self._guard, args=(fn,), name=f"ragcore-ingest-{fn.__name__}", daemon=True)
                        for fn in (self._embed_loop, self._write_loop)]
        for t in self.threads:
            t.start()

    # ------------------------------------------------------------------ caller's thread

    def add_file(self, rel: str, chunks: list[Chunk], stale: list[str]) -> None:
        """Queue a file's chunks (none for a file skipped, unchanged or failed); full batches
        go to the model now, blocking while the model is ``ahead`` batches behind."""
        self.spans.append(_Span(rel, self.queued, self.queued + len(chunks)))
        if chunks:
            self.doc_chunks[chunks[0].path] = len(chunks)
        self.buf.extend(chunks)
        self.queued += len(chunks)
        if stale:
            self.stale.append((self.queued, stale))
        while len(self.buf) >= self.batch:
            self._send(self.buf[: self.batch])
            del self.buf[: self.batch]
        self.pump()

    def flush(self) -> None:
        """Send what is left and wait until everything is written (reporting progress)."""
        if self.buf or self.stale:
            self._send(self.buf)
            self.buf = []
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
        self._put(self.to_embed, _Batch(list(chunks), counts, [i for ids in due for i in ids]))

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
        raise _Stopped()

    def _embed_loop(self) -> None:
        try:
            while (batch := self._get(self.to_embed)) is not None:
                vecs, embedded = self._vectors(batch.chunks)
                self._put_worker(self.to_write, _Embedded(batch, vecs, embedded))
            self._put_worker(self.to_write, None)
        except _Stopped:
            pass

    def _write_loop(self) -> None:
        try:
            while (item := self._get(self.to_write)) is not None:
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
        except _Stopped:
            pass

    def _put_worker(self, q: queue.Queue, item: Any) -> None:
        while not self.abort.is_set():
            try:
                return q.put(item, timeout=0.2)
            except queue.Full:
                continue
        raise _Stopped()

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
        if todo:
            vecs[todo] = self.encoder.encode_uncached([embed_text(chunks[k]) for k in todo])
        return vecs, len(todo)


class _Stopped(Exception):
    """A worker thread was told to stop (another failed, or the caller gave up)."""


# --------------------------------------------------------------------------- ingest


def index_fingerprint(settings: RagcoreSettings, model: str = MODEL_NAME) -> str:
    """What a stored chunk depends on besides its file: chunker, BM25 and model versions and
    the chunk settings. A point written under another fingerprint is re-derived. ``model``: the
    bundled MiniLM's name (so its collections stay current), else the model's spec and prefixes."""
    key = f"{CHUNKER_VERSION}|{SPARSE_VERSION}|{model}|{settings.chunk_size}|{settings.chunk_overlap}"
    # the default cap changes no normal document's chunks (7,159 checked): only another cap
    # is part of the key, so collections built before the cap existed stay current
    if settings.max_chunk_chars != DEFAULT_MAX_CHUNK_CHARS:
        key += f"|{settings.max_chunk_chars}"
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def corpus_version(file_hashes: dict[str, str]) -> str:
    h = hashlib.sha256()
    for path in sorted(file_hashes):
        h.update(f"{path}\0{file_hashes[path]}\n".encode())
    return h.hexdigest()[:16]


@dataclass
class _Run:
    """What one ingest run has learnt so far."""

    state: dict[str, list[PointRef]]
    fingerprint: str
    outcomes: list[FileOutcome] = field(default_factory=list)
    hashes: dict[str, str] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    headings: set[str] = field(default_factory=set)

    def keep_stored(self, rel: str) -> None:
        """What an earlier ingest stored under ``rel`` (a file, or a folder's files) stays."""
        for path in [p for p in self.state if p == rel or p.startswith(rel + "/")]:
            self.seen.add(path)
            if self.state.get(path):
                self.hashes[path] = self.state[path][0].doc_hash


def ingest(
    sources: Sequence[SourceFile],
    *,
    root: str,
    collection: str,
    store: Store,
    encoder: OnnxMiniLM,
    settings: RagcoreSettings,
    prune: bool = True,
    progress: Progress | None = None,
    chunk_progress: ChunkProgress | None = None,
) -> IngestReport:
    """Ingest ``sources`` into ``collection``; ``progress(done, total, current)`` hears each
    file as it is read (``done`` counts files whose chunks are all written, in order), each
    written batch of a long file ("path: N chunks written") and each file as it completes;
    ``chunk_progress(written, queued)`` hears every written batch (a progress bar by chunks)."""
    t0 = time.perf_counter()
    check_collection_name(collection)  # before any path is built from it
    record = encoder.record()
    state: dict[str, list[PointRef]] = defaultdict(list)
    for ref in store.point_refs(collection):
        state[ref.path].append(ref)
    folder = space.data_folder(settings)
    space.check_before_ingest(folder, sources, state)  # before anything is written (space.py: SIGBUS)
    store.ensure_collection(collection, record.dimension)
    model_key = MODEL_NAME if record.source == "minilm" else f"{record.spec}|{record.query_prefix}|{record.document_prefix}"
    run = _Run(state=dict(state), fingerprint=index_fingerprint(settings, model_key))
    existing = {r.id for refs in state.values() for r in refs}
    total = len(sources)
    on_written = (lambda done, current: progress(done, total, current)) if progress else None
    # an endpoint gets a batch big enough for all its requests in flight at once (openai_embed.py)
    batch = getattr(encoder, "ingest_batch", WRITE_BATCH)
    writer = _Writer(store, encoder, collection, run.fingerprint, existing, batch=batch, ahead=PIPELINE_AHEAD,
                     on_written=on_written, on_chunks=chunk_progress)
    writer.space_folder = folder
    try:
        for src in sources:
            if progress:
                progress(writer.done, total, src.rel)
            chunks, stale = _ingest_file(src, run, settings)
            writer.add_file(src.rel, chunks, stale)
        writer.flush()
    except Exception as exc:  # a disk that filled up anyway: say so, with the folder and the space left
        raise (space.as_space_error(exc, folder) if folder is not None else None) or exc
    finally:
        writer.close()
    if run.headings:  # the topic index (topics.py) needs them at the first question; embed them now
        if progress:
            progress(total, total, f"embedding {len(run.headings)} section headings")
        store.headings.for_model(record).ensure(run.headings, encoder.encode_uncached)  # storage/headings.py, per model
    _prune(run, store, collection, prune)
    if progress:
        progress(total, total, "")
    return _finish(run, store, collection, root, settings, writer, t0, encoder.record())


def _ingest_file(src: SourceFile, run: _Run, settings: RagcoreSettings) -> tuple[list[Chunk], list[str]]:
    """Read and chunk one file, recording its outcome: (its chunks, the point ids of its old
    version to drop once they are written); no chunks when it is unchanged or failed."""
    refs = run.state.get(src.rel, [])
    if src.data is not None and src.problem is None and (bad := _name_problem(src.rel)):
        src = SourceFile(rel=_printable(src.rel), problem=bad)  # an upload's name is the user's input too
    if src.problem is not None:
        run.outcomes.append(FileOutcome(src.rel, "failed", len(refs), reason=src.problem))
        if src.keep:  # e.g. an unreadable folder: what it held before is kept
            run.keep_stored(src.rel)
        return [], []  # otherwise not "seen": what an earlier ingest took from it is pruned
    run.seen.add(src.rel)
    try:
        data = src.data if src.data is not None else read_bytes(
            src.path, max_bytes=settings.max_file_bytes, follow_symlinks=False
        )
        digest = hashlib.sha256(data).hexdigest()
        if refs and all(r.doc_hash == digest and r.fp == run.fingerprint for r in refs) and len(refs) == refs[0].doc_chunks:
            run.outcomes.append(FileOutcome(src.rel, "unchanged", len(refs)))
            run.hashes[src.rel] = digest
            return [], []
        doc, chunks = _load_and_chunk(data, src.rel, settings)
        del data  # the file's bytes are not needed any more; long files are large
    except LoadError as exc:
        run.outcomes.append(FileOutcome(src.rel, "failed", len(refs), reason=exc.reason))
        run.keep_stored(src.rel)  # bad input loses nothing
        return [], []
    new_ids = {point_id(c.chunk_id) for c in chunks}
    run.headings.update(h for c in chunks if (h := heading_of(c.section, c.title)))
    run.hashes[src.rel] = doc.doc_hash
    ocr = len({ln.page for ln in doc.lines if ln.ocr_confidence is not None})  # scanned PDF pages
    run.outcomes.append(FileOutcome(src.rel, "updated" if refs else "added", len(chunks), ocr_pages=ocr))
    return chunks, [r.id for r in refs if r.id not in new_ids]


def _load_and_chunk(data: bytes, rel: str, settings: RagcoreSettings) -> tuple[LoadedDocument, list[Chunk]]:
    """The document and its chunks, or LoadError when there is nothing to index or too much.

    A chunk holds at most ``chunk_size`` words and a non-blank line at least one word, so a
    file with more non-blank lines than ``max_file_chunks × chunk_size`` cannot fit: it is
    refused before its lines are built (they cost ~200 bytes each).
    """
    limit = settings.max_file_chunks
    try:
        doc = load_bytes(data, rel, max_bytes=settings.max_file_bytes, max_lines=limit * settings.chunk_size)
    except LineLimitError as exc:
        raise LoadError(
            f"too large: {exc.lines:,} lines of text, more than fit in {limit:,} chunks of {settings.chunk_size} "
            f"words, the limit per file {CHUNK_LIMIT_HINT}"
        ) from None
    chunks = chunk_document(
        doc, chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap,
        max_chunk_chars=settings.max_chunk_chars,
    )
    if not chunks:
        raise LoadError("no text to index")
    if len(chunks) > limit:
        raise LoadError(f"too large: {len(chunks):,} chunks, over the limit of {limit:,} per file {CHUNK_LIMIT_HINT}")
    return doc, chunks


def _prune(run: _Run, store: Store, collection: str, prune: bool) -> None:
    for path in sorted(set(run.state) - run.seen):
        refs = run.state[path]
        if prune:
            store.delete_points(collection, [r.id for r in refs])
            run.outcomes.append(FileOutcome(path, "removed", len(refs)))
        else:
            run.hashes[path] = refs[0].doc_hash


def _finish(
    run: _Run, store: Store, collection: str, root: str, settings: RagcoreSettings, writer: _Writer, t0: float,
    record: ModelRecord,
) -> IngestReport:
    version = corpus_version(run.hashes)
    built_at = utc_now()
    if root == UPLOAD_ROOT:  # uploads join a collection: its folder on disk is still where it was
        root = store.read_meta(collection).get("root") or root
    store.write_meta(
        collection,
        {
            "corpus_version": version,
            "built_at": built_at,
            "root": root,
            "documents": len(run.hashes),
            "settings": {"chunk_size": settings.chunk_size, "chunk_overlap": settings.chunk_overlap},
            "embedding": record.as_meta(), "embedding_model": record.name,  # questions embed with this model
        },
    )
    return IngestReport(
        collection=collection, root=root, outcomes=tuple(run.outcomes), corpus_version=version, built_at=built_at,
        seconds=time.perf_counter() - t0, chunks_written=writer.written, chunks_embedded=writer.embedded,
    )
