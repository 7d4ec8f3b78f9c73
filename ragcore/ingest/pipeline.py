"""Incremental, crash-safe ingestion: files → chunks → vectors → Qdrant.

State lives in the chunk points themselves (each carries its path, the file's content hash
and how many chunks the file has), not in a side file that could disagree with them:

* a file is *unchanged* when the collection holds exactly ``doc_chunks`` points for its
  current hash and none for any other hash;
* a changed file's new chunks are written first, then the points of its old version are
  deleted — a crash in between leaves both versions, which the next run sees as "not
  unchanged" and repairs;
* point ids are derived from chunk ids, so rewriting a chunk is idempotent (no duplicates);
* files that are gone are removed (``prune``), so no orphans survive.

A file that cannot be read is reported as failed and its previously ingested chunks are
kept: bad input loses nothing.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Iterator, Sequence

import numpy as np

from ..config import RagcoreSettings
from ..embeddings import DIMENSION, MODEL_NAME, OnnxMiniLM
from ..sparse import SPARSE_VERSION
from ..store import PointRef, Store, chunk_context, embed_text, point_id, utc_now
from ..topics import ensure_heading_vectors, heading_of
from ..types import Chunk, FileOutcome, IngestReport
from .chunking import CHUNKER_VERSION, chunk_document
from .loaders import LoadError, kind_for, load_bytes, read_bytes

Progress = Callable[[int, int, str], None]  # (files done, files total, current path)

SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache", ".pytest_cache"}
WRITE_BATCH = 256
UPLOAD_ROOT = "(upload)"


@dataclass(frozen=True)
class SourceFile:
    rel: str
    path: Path | None = None  # on disk, or
    data: bytes | None = None  # uploaded


def discover(paths: Sequence[Path]) -> tuple[Path, list[SourceFile]]:
    """Supported files under ``paths`` and the root their relative paths are taken from."""
    paths = [Path(p).expanduser().resolve() for p in paths]
    for p in paths:
        if not p.exists():
            raise FileNotFoundError(f"No such file or folder: {p}")
    if len(paths) == 1 and paths[0].is_dir():
        root = paths[0]
    else:
        root = Path(os.path.commonpath([p if p.is_dir() else p.parent for p in paths]))
    found: dict[str, SourceFile] = {}
    for p in paths:
        for f in _walk(p) if p.is_dir() else [p]:
            if kind_for(f) is None or f.name.startswith("."):
                continue
            rel = PurePosixPath(f.relative_to(root)).as_posix()
            found[rel] = SourceFile(rel=rel, path=f)
    return root, [found[k] for k in sorted(found)]


def _walk(folder: Path) -> Iterator[Path]:
    """Files under ``folder``, skipping VCS, virtualenv and cache folders and hidden ones."""
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            yield Path(dirpath) / name


class _Writer:
    """Buffers chunks across files, embeds and writes them in batches, then drops stale points.

    A chunk whose point already exists with the same embedding context keeps its stored dense
    vector: after a settings or version change (new fingerprint) every file is re-chunked, but
    only chunks that really changed are embedded again; BM25 vectors are always recomputed
    (they cost nothing next to the model).
    """

    def __init__(self, store: Store, encoder: OnnxMiniLM, collection: str, fingerprint: str, existing: set[str]) -> None:
        self.store, self.encoder, self.collection = store, encoder, collection
        self.fingerprint = fingerprint
        self.existing = existing
        self.buf: list[Chunk] = []
        self.doc_chunks: dict[str, int] = {}
        self.pending_stale: list[str] = []  # ids to delete once their files are fully written
        self.written = 0
        self.embedded = 0

    def add_file(self, chunks: list[Chunk], stale: list[str]) -> None:
        if chunks:
            self.doc_chunks[chunks[0].path] = len(chunks)
            self.buf.extend(chunks)
        self.pending_stale.extend(stale)
        if len(self.buf) >= WRITE_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            texts = [embed_text(c) for c in self.buf]
            ids = [point_id(c.chunk_id) for c in self.buf]
            stored = self.store.stored_vectors(self.collection, [i for i in ids if i in self.existing])
            vecs = np.zeros((len(self.buf), DIMENSION), dtype=np.float32)
            todo = []
            for k, (c, pid) in enumerate(zip(self.buf, ids)):
                hit = stored.get(pid)
                if hit is not None and hit[1] == chunk_context(c):
                    vecs[k] = hit[0]
                else:
                    todo.append(k)
            if todo:
                vecs[todo] = self.encoder.encode_uncached([texts[k] for k in todo])
            self.store.write_chunks(self.collection, self.buf, vecs, self.doc_chunks, self.fingerprint)
            self.written += len(self.buf)
            self.embedded += len(todo)
            self.buf = []
        # only now is every chunk of these files in the store: the old versions can go
        if self.pending_stale:
            self.store.delete_points(self.collection, self.pending_stale)
        self.pending_stale = []


def index_fingerprint(settings: RagcoreSettings) -> str:
    """What a stored chunk depends on besides its file: chunker, BM25 and model versions and
    the chunk settings. A point written under another fingerprint is re-derived."""
    key = f"{CHUNKER_VERSION}|{SPARSE_VERSION}|{MODEL_NAME}|{settings.chunk_size}|{settings.chunk_overlap}"
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def corpus_version(file_hashes: dict[str, str]) -> str:
    h = hashlib.sha256()
    for path in sorted(file_hashes):
        h.update(f"{path}\0{file_hashes[path]}\n".encode())
    return h.hexdigest()[:16]


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
) -> IngestReport:
    t0 = time.perf_counter()
    store.ensure_collection(collection)
    state: dict[str, list[PointRef]] = defaultdict(list)
    for ref in store.point_refs(collection):
        state[ref.path].append(ref)

    fingerprint = index_fingerprint(settings)
    writer = _Writer(store, encoder, collection, fingerprint, {r.id for refs in state.values() for r in refs})
    outcomes: list[FileOutcome] = []
    hashes: dict[str, str] = {}
    seen: set[str] = set()
    headings: set[str] = set()
    for i, src in enumerate(sources):
        seen.add(src.rel)
        if progress:
            progress(i, len(sources), src.rel)
        refs = state.get(src.rel, [])
        try:
            data = src.data if src.data is not None else read_bytes(src.path, max_bytes=settings.max_file_bytes)
            digest = hashlib.sha256(data).hexdigest()
            if refs and all(r.doc_hash == digest and r.fp == fingerprint for r in refs) and len(refs) == refs[0].doc_chunks:
                outcomes.append(FileOutcome(src.rel, "unchanged", len(refs)))
                hashes[src.rel] = digest
                continue
            doc = load_bytes(data, src.rel, max_bytes=settings.max_file_bytes)  # bytes read (and hashed) once
            chunks = chunk_document(doc, chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap)
            if not chunks:
                raise LoadError("no text to index")
        except LoadError as exc:
            outcomes.append(FileOutcome(src.rel, "failed", len(refs), reason=exc.reason))
            if refs:  # keep what an earlier ingest stored
                hashes[src.rel] = refs[0].doc_hash
            continue
        new_ids = {point_id(c.chunk_id) for c in chunks}
        writer.add_file(chunks, [r.id for r in refs if r.id not in new_ids])
        headings.update(h for c in chunks if (h := heading_of(c.section, c.title)))
        hashes[src.rel] = doc.doc_hash
        outcomes.append(FileOutcome(src.rel, "updated" if refs else "added", len(chunks)))
    writer.flush()
    if headings:  # the topic index (topics.py) needs them at the first question; embed them now
        if progress:
            progress(len(sources), len(sources), f"embedding {len(headings)} section headings")
        ensure_heading_vectors(store, encoder, headings)

    if prune:
        gone = sorted(set(state) - seen)
        for path in gone:
            store.delete_points(collection, [r.id for r in state[path]])
            outcomes.append(FileOutcome(path, "removed", len(state[path])))
    else:
        for path, refs in state.items():
            if path not in seen:
                hashes[path] = refs[0].doc_hash
    if progress:
        progress(len(sources), len(sources), "")

    version = corpus_version(hashes)
    built_at = utc_now()
    if root == UPLOAD_ROOT:  # uploads join a collection: its folder on disk is still where it was
        root = store.read_meta(collection).get("root") or root
    store.write_meta(
        collection,
        {
            "corpus_version": version,
            "built_at": built_at,
            "root": root,
            "documents": len(hashes),
            "settings": {"chunk_size": settings.chunk_size, "chunk_overlap": settings.chunk_overlap},
        },
    )
    return IngestReport(
        collection=collection, root=root, outcomes=tuple(outcomes), corpus_version=version, built_at=built_at,
        seconds=time.perf_counter() - t0, chunks_written=writer.written, chunks_embedded=writer.embedded,
    )

