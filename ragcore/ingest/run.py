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

import hashlib
import time
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Sequence

from ragcore.settings.config import RagcoreSettings
from ragcore.encoders.base import ModelRecord
from ragcore.encoders.minilm import MODEL_NAME, OnnxMiniLM
from ragcore.encoders.sparse import SPARSE_VERSION
from ragcore.storage.store import PointRef, Store, point_id, utc_now
from ragcore.storage.vector_cache import VectorCache
from ragcore.storage.sections import heading_of
from ragcore.types import Chunk, FileOutcome, IngestReport, LoadedDocument, to_jsonable
from ragcore.ingest import space
from ragcore.storage.schema import check_collection_name
from ragcore.ingest.batch_writer import BatchWriter, ChunkProgress  # noqa: F401  (ChunkProgress: the engine's import)
from ragcore.ingest.chunking import CHUNKER_VERSION, DEFAULT_MAX_CHUNK_CHARS, chunk_document
from ragcore.ingest.discover import SourceFile, _name_problem, _printable, discover  # noqa: F401  (discover: the engine's import)
from ragcore.ingest.read.loaders import LineLimitError, LoadError, load_bytes, read_bytes

Progress = Callable[[int, int, str], None]  # (files done, files total, current path or step)

# Chunks embedded and written at a time: bounds memory, and is the step of progress within a
# long file and of what a kill can lose (~15 s of model time on a busy 2-core machine, ~2 s idle).
WRITE_BATCH = 64
PIPELINE_AHEAD = 4  # batches read ahead of the model
# embedded batches that may wait for the store (~1,000 chunks with their vectors: a few MB): the
# writing thread's start-up (creating the collection, importing LlamaIndex and qdrant-client; 3-8 s
# under load) no longer stops the model or the endpoint after PIPELINE_AHEAD batches
WRITE_AHEAD = 16
UPLOAD_ROOT = "(upload)"
CHUNK_LIMIT_HINT = "(setting max_file_chunks, env RAGCORE_MAX_FILE_CHUNKS)"

# Control characters in a name (newline, ESC of terminal escape codes, C1) would reach
# terminals, logs and "path:12-20" citations as they are: such files are refused by name.
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


def model_key(record: ModelRecord) -> str:
    """The model's part of the fingerprint (and of a vector's cache key): the bundled MiniLM's name,
    else the model's spec and prefixes."""
    return MODEL_NAME if record.source == "minilm" else f"{record.spec}|{record.query_prefix}|{record.document_prefix}"


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
    remove: Sequence[str] = (), cache: VectorCache | None = None,
) -> IngestReport:
    """Ingest ``sources`` into ``collection`` (``remove``: paths dropped even without ``prune``; ``cache``: a
    repository's shared vectors, gitingest.py); ``progress(done, total, current)`` hears each
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
    # the collection is created by the writer's own thread (batch_writer.py) while the first files are read
    run = _Run(state=dict(state), fingerprint=index_fingerprint(settings, model_key(record)))
    existing = {r.id for refs in state.values() for r in refs}
    total = len(sources)
    on_written = (lambda done, current: progress(done, total, current)) if progress else None
    # an endpoint (openai_embed.py) gets one request's worth of chunks per batch, its requests in flight at
    # once and the headings embedded along the way: it waits on round trips, not on this machine. The
    # local model keeps its batches and its headings at the end (the default's vectors stay the same).
    workers = getattr(encoder, "ingest_workers", 0)
    batch = getattr(encoder, "ingest_batch", WRITE_BATCH)
    writer = BatchWriter(store, encoder, collection, run.fingerprint, existing, batch=batch, ahead=PIPELINE_AHEAD,
                     on_written=on_written, on_chunks=chunk_progress, workers=workers,
                     heading_store=store.headings.for_model(record) if workers else None, write_ahead=WRITE_AHEAD,
                     cache=cache)
    writer.space_folder = folder
    new = not state and not store.read_meta(collection).get("corpus_version")
    mark = encoder.aimd.mark() if hasattr(encoder, "sustained") else None  # an endpoint: what it sustains is reported
    try:
        _write_files(sources, run, settings, writer, progress)
    except BaseException as exc:  # a disk that filled up anyway: say so, with the folder and the space left
        writer.close()
        _after_failure(store, collection, record, new, writer.written)
        if isinstance(exc, Exception):
            raise (space.as_space_error(exc, folder) if folder is not None else None) or exc
        raise
    finally:
        writer.close()
    _embed_headings(run, store, record, encoder, progress, total)
    _prune(run, store, collection, prune, frozenset(remove))
    if progress:
        progress(total, total, "")
    sustained = encoder.sustained(mark) if mark is not None else None  # type: ignore[attr-defined]
    return _finish(run, store, collection, root, settings, writer, t0, encoder.record(), sustained)


def _embed_headings(run: _Run, store: Store, record, encoder, progress: Progress | None, total: int) -> None:
    """The topic index (topics.py) needs the new section headings at the first question: embed them now,
    as a named step of the progress (storage/headings.py keeps them per model)."""
    if not run.headings:
        return
    if progress:
        progress(total, total, f"embedding {len(run.headings)} section headings")
    store.headings.for_model(record).ensure(run.headings, encoder.encode_uncached)


def _write_files(sources: Sequence[SourceFile], run: _Run, settings: RagcoreSettings, writer: BatchWriter,
                 progress: Progress | None) -> None:
    for src in sources:
        if progress:
            progress(writer.done, len(sources), src.rel)
        chunks, stale = _ingest_file(src, run, settings)
        writer.add_file(src.rel, chunks, stale)
    writer.flush()


def _after_failure(store: Store, collection: str, record: ModelRecord, new: bool, written: int) -> None:
    """A new collection whose first ingest failed: gone when nothing reached it (it would be listed,
    empty, as if built with the bundled model); else it records its model, so that the chunks kept
    are asked with the model that embedded them and the next run continues with it."""
    if not new:
        return
    try:
        if written == 0:
            if store.exists(collection):
                store.drop(collection)
        else:
            store.write_meta(collection, {"embedding": record.as_meta(), "embedding_model": record.name})
    except Exception:  # noqa: BLE001 - the ingest's own error is the one to report
        pass


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


def _prune(run: _Run, store: Store, collection: str, prune: bool, remove: frozenset[str] = frozenset()) -> None:
    for path in sorted(set(run.state) - run.seen):
        refs = run.state[path]
        if prune or path in remove:
            store.delete_points(collection, [r.id for r in refs])
            run.outcomes.append(FileOutcome(path, "removed", len(refs)))
        else:
            run.hashes[path] = refs[0].doc_hash


def _finish(
    run: _Run, store: Store, collection: str, root: str, settings: RagcoreSettings, writer: BatchWriter, t0: float,
    record: ModelRecord, sustained: object = None,
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
        endpoint=to_jsonable(sustained) if sustained is not None else None,
    )
