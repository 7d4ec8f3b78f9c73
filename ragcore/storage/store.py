"""Qdrant: one collection per corpus, named vectors ``dense`` (384-d cosine) and ``sparse``
(BM25 term weights, Qdrant's IDF modifier), behind one facade.

``Store`` is what the rest of ragcore calls; it delegates each job to a module of its own:

    backend.py (+ backend_edge.py, backend_qdrant.py)  the engine: Qdrant Edge embedded (the default,
                                                      under ``data_dir/qdrant-edge``), qdrant-client's
                                                      local mode (``qdrant/``) or a server (``qdrant_url``)
    connection.py, locking.py                         opening the client, sessions, the folder lock
    edge_migrate.py                                   the one-time copy of a local-mode folder into Edge
    reads.py, writes.py                               points and metadata in Qdrant, the store of record
    publisher.py, snapshot.py                         query snapshots: published after writes, read by questions
    headings.py                                       the shared heading-vector cache

Embedded Qdrant lets one process open its folder at a time. So the Store opens it only inside a
session (a write, or reading a collection that has no valid query snapshot) and closes it after;
after each write it publishes the collection's query snapshot, which every read that a question
makes is served from. Many processes read; one writes; the others see its new snapshot on their
next call. Reads never publish: a collection without a valid snapshot is read from Qdrant until
the next write, or until :meth:`refresh_snapshot` (the explicit repair step) rewrites it. On a
Qdrant server nothing is snapshotted: the server searches.
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from ragcore.encoders.sparse import Bm25Encoder
from ragcore.settings.config import RagcoreSettings
from ragcore.storage.backend import CopyProgress, backend_for
from ragcore.storage.connection import Connection
from ragcore.storage import locking
from ragcore.storage.damage import damaged
from ragcore.storage.headings import HeadingStore
from ragcore.storage.locking import folder_locked  # noqa: F401 (re-exported: tests and tools check the lock by it)
from ragcore.storage.publisher import Publisher
from ragcore.storage.reads import PointReader
from ragcore.storage.schema import (  # noqa: F401 (re-exported: the names callers have always imported from here)
    DENSE, META_COLLECTION, RESERVED_PREFIX, SPARSE, TOPICS_COLLECTION, CollectionData, PointRef, StoreError,
    chunk_context, embed_text, is_incomplete, point_id, utc_now,
)
from ragcore.storage.sections import SectionRef, section_ref
from ragcore.storage.snapshot import DIMENSION, SnapshotData, SnapshotFiles
from ragcore.storage.writes import PointWriter
from ragcore.types import Chunk, CollectionInfo

if TYPE_CHECKING:
    from qdrant_client import QdrantClient


class Store:
    """The Qdrant collections of one data folder, and their query snapshots (snapshot.py).

    Embedded, the Qdrant client (and with it the folder's lock) is held only inside
    :meth:`session`: for a write, or to read a collection that has no valid snapshot. Reads that a
    snapshot can answer (what a question needs, metadata, counts, collection names) never open
    Qdrant, so any number of processes can read while one writes; they pick up the writer's new
    snapshot on their next call. ``settings.snapshots`` off (or a Qdrant server) is the old way:
    every read goes to Qdrant, and an embedded client stays open for the Store's lifetime.
    """

    def __init__(
        self, settings: RagcoreSettings, client: QdrantClient | None = None,
        embed_headings: Callable[[Sequence[str]], np.ndarray] | None = None,
        embed_for_model: Callable[[Any], Callable[[Sequence[str]], np.ndarray]] | None = None,
    ) -> None:
        self.settings = settings
        self.backend = backend_for(settings, client)
        use = self.is_embedded and client is None and getattr(settings, "snapshots", True)
        self.is_edge = self.backend.kind == "edge"
        self.snapshots = SnapshotFiles(Path(settings.data_dir) / "snapshots") if use else None
        self._conn = Connection(self.backend, client, per_session=self.snapshots is not None)
        self._reader = PointReader(self._conn)
        self.headings = HeadingStore(self._conn, self.backend)
        self._dirty: set[str] = set()  # collections written since their last snapshot
        self._publisher = Publisher(self.snapshots, self._conn, self._reader, self.headings, embed_headings,
                                    self._dirty, embed_for_model) if self.snapshots is not None else None
        self._writer = PointWriter(self._conn, Bm25Encoder(), self._dirty, self._publisher)

    # ------------------------------------------------------------------ connection

    @property
    def is_embedded(self) -> bool:
        return not self.settings.qdrant_url

    @property
    def client(self) -> QdrantClient:
        """The Qdrant client; outside a :meth:`session` it stays open until :meth:`close`."""
        return self._conn.client

    @property
    def opened(self) -> bool:
        """Whether a Qdrant client is open now (tests check that a question did not open one)."""
        return self._conn.opened

    @property
    def path(self) -> Path:
        """The embedded store's folder (Edge's or local mode's)."""
        return self.settings.store_path

    @contextmanager
    def session(self, *, write: bool = True) -> Iterator[QdrantClient]:
        """Hold Qdrant open for a group of operations (sessions nest). With snapshots, the outermost
        session publishes what its writes left unpublished, then closes the client it opened, which
        releases the embedded folder's lock."""
        with self._conn.session(write=write) as client:
            yield client
            if self._conn.depth == 1:
                self._after_session(write)

    def _after_session(self, wrote: bool) -> None:
        """At the end of an outermost session (not after an error): publish what its writes left
        unpublished. A read session publishes only what a one-time copy from local mode wrote."""
        if self._publisher is None:
            return
        copied, self.backend.copied = self.backend.copied, ()
        self._dirty.update(copied)  # the copy is a write like any other
        if self._dirty and (wrote or copied):
            self._publisher.publish_dirty()

    def close(self) -> None:
        self._conn.close()

    def migration_pending(self) -> bool:
        """Whether opening this store will first copy an older local-mode folder into Qdrant Edge
        (once; edge_migrate.py). Two file checks: nothing is opened."""
        return not self._conn.opened and self.backend.migration_pending()

    def migrate_pending_copy(self, progress: CopyProgress | None = None) -> bool:
        """Open the store now, so that the one-time copy runs here with ``progress`` rather than
        silently inside whatever first needs the store (and the copied collections' snapshots are
        published); returns whether a copy was pending."""
        if not self.migration_pending():
            return False
        with self._conn.progress(progress), self.session():
            pass
        return True

    # ------------------------------------------------------------------ snapshots

    def snapshot(self, name: str) -> SnapshotData | None:
        """What questions need of ``name``, from its current snapshot. None with snapshots off, on a
        server, when there is no such collection, or when its snapshot is missing, stale or damaged:
        the caller then reads Qdrant (:meth:`load`). Never writes one (:meth:`refresh_snapshot` does)."""
        return self._publisher.snapshot(name) if self._publisher is not None else None

    def snapshot_current(self, name: str) -> bool:
        """Whether ``name`` has a readable snapshot of its present state (True where none is kept)."""
        if self._publisher is None or not self.exists(name):
            return True
        return self._publisher.is_current(name)

    def refresh_snapshot(self, name: str) -> bool:
        """The explicit repair step: rewrite ``name``'s snapshot when it is missing, stale or damaged
        (a write session: it waits for another writer's lock); returns whether it wrote one."""
        if self._publisher is None or not self.exists(name):
            return False
        with self.session():
            return self._publisher.refresh(name)

    def _manifest_meta(self, name: str) -> Mapping[str, Any] | None:
        m = self._publisher.current(name) if self._publisher is not None else None
        return m.meta if m is not None else None

    # ------------------------------------------------------------------ schema

    def first_write_elsewhere(self, name: str) -> bool:
        """Whether another process is writing ``name``, a collection created and never published since (a
        new collection's first ingest, in the app's ingest process or a CLI; one whose snapshot is merely
        missing is read from Qdrant, waiting for the writer). Its readers then see the empty collection it
        was before that write, as a published snapshot would show it, instead of waiting for the writer's
        lock, which the writer holds for the whole ingest (the Library page waited 120 s and failed on its
        Collections tab)."""
        if self._publisher is None or self._conn.opened or not self.snapshots.being_created(name):
            return False
        return locking.folder_locked(self.path)

    def _names_on_disk(self) -> list[str] | None:
        """Collection names from the embedded folder, without opening it (None: ask Qdrant)."""
        if self.snapshots is None or self._conn.opened:
            return None
        return self.backend.names_on_disk()

    def exists(self, name: str) -> bool:
        names = self._names_on_disk()
        if names is not None:
            return name in names
        return self._reader.exists(name)

    def collection_names(self) -> list[str]:
        names = self._names_on_disk()
        if names is None:
            names = self._reader.names()
        return sorted(n for n in names if not n.startswith(RESERVED_PREFIX))

    def ensure_collection(self, name: str, dimension: int = DIMENSION) -> None:
        """Create the collection's schema (if new) with dense vectors ``dimension`` wide (its model's)."""
        self._writer.ensure_collection(name, dimension)

    def vector_store(self, name: str):
        """LlamaIndex's ``QdrantVectorStore`` over this collection (hybrid, our BM25), on a server or in
        local mode. Qdrant Edge has none: ``Engine.vector_store`` gives ``SnapshotVectorStore`` there."""
        if self.is_edge:
            return self.backend.vector_store(None, name, None)  # raises: says what to use instead
        return self.backend.vector_store(self.client, name, Bm25Encoder())

    # ------------------------------------------------------------------ writes

    def write_chunks(
        self, name: str, chunks: Sequence[Chunk], dense: np.ndarray, doc_chunks: dict[str, int], fingerprint: str = ""
    ) -> None:
        """Upsert chunks with their dense vectors; sparse vectors are computed on the way in."""
        self._writer.write_chunks(name, chunks, dense, doc_chunks, fingerprint)

    def copy_points(self, old: str, new: str, batch: int = 256) -> int:
        """Every point of ``old`` written to ``new`` as it is (inside a write session); returns how many."""
        return self._writer.copy_points(old, new, batch)

    def delete_points(self, name: str, ids: Sequence[str]) -> None:
        self._writer.delete_points(name, ids)

    def drop(self, name: str) -> None:
        self._writer.drop(name)

    def write_meta(self, name: str, meta: dict[str, Any]) -> None:
        with self.session():
            self._writer.write_meta(name, meta, self._reader.meta(name))

    # ------------------------------------------------------------------ reads

    def point_refs(self, name: str) -> list[PointRef]:
        """What incremental ingest knows of stored points: always read from Qdrant, the store of record."""
        return self._reader.point_refs(name)

    def doc_hashes(self, name: str) -> dict[str, str]:
        """Content hash of every stored document, by path (from the snapshot when there is one)."""
        snap = self.snapshot(name) if self.exists(name) else None
        if snap is not None:
            saved = getattr(snap.chunks, "persisted", lambda _: None)("doc_hashes.json")
            return dict(saved) if saved is not None else {c.path: c.doc_hash for c in snap.chunks}
        if self.first_write_elsewhere(name):
            return {}
        return {r.path: r.doc_hash for r in self.point_refs(name)}

    def stored_vectors(self, name: str, ids: Sequence[str]) -> dict[str, tuple[list[float], str]]:
        """Dense vector and embedding context of stored points, by point id (missing ids absent)."""
        return self._reader.stored_vectors(name, ids)

    def load(self, name: str) -> CollectionData:
        """Every chunk with its vectors, scrolled from Qdrant (queries read the snapshot instead)."""
        return self._reader.load(name)

    def section_refs(self, name: str) -> list[SectionRef]:
        """Where every chunk sits (path, line, section path, title), without text or vectors."""
        snap = self.snapshot(name)
        if snap is not None:
            return [section_ref(c) for c in snap.chunks]
        if not self.exists(name) or self.first_write_elsewhere(name):
            return []
        return self._reader.section_refs(name)

    def chunks_of(self, name: str, path: str) -> list[Chunk]:
        snap = self.snapshot(name)
        if snap is not None:
            rows = getattr(snap.chunks, "path_rows", None)  # the table's document column: no scan of the rows
            got = [snap.chunks[int(i)] for i in rows(path)] if rows else [c for c in snap.chunks if c.path == path]
        elif self.first_write_elsewhere(name):
            return []
        else:
            got = self._reader.chunks_of(name, path)
        return sorted(got, key=lambda c: (c.page or 0, c.start_line, c.ordinal))

    def count(self, name: str) -> int:
        if not self.exists(name):
            return 0
        m = self._publisher.current(name) if self._publisher is not None else None
        if m is not None:
            return m.chunks
        if self.first_write_elsewhere(name):
            return 0  # (as its snapshot before that write would say: no chunks published yet)
        # no snapshot: read the store of record, waiting (bounded) for a process that holds it. Never
        # "0" because the store is busy: a question would call the collection empty
        return self._reader.count(name)

    def read_meta(self, name: str) -> dict[str, Any]:
        if self.snapshots is None or self._conn.opened:
            return self._reader.meta(name)  # Qdrant is open anyway: read the store of record
        if not self.exists(name):
            return {}  # (a dropped collection's metadata is deleted with it)
        meta = self._manifest_meta(name)
        if meta is not None:
            return dict(meta)
        if self.first_write_elsewhere(name):
            return {}
        return self._reader.meta(name)  # (waits, bounded, for a process that holds the store: as count)

    def info(self, name: str, *, wait_s: float | None = None) -> CollectionInfo:
        """The collection's stats. What cannot be read of it (damaged files, or a store held by another
        process beyond ``wait_s``) is its ``problem``, said with the command that recovers it: one
        collection's damage never breaks the listing of the others (damage.py)."""
        meta: dict[str, Any] = {}
        chunks, problem = 0, None
        try:
            with locking.waiting_at_most(wait_s if wait_s is not None else float("inf")):
                meta = self.read_meta(name)
                chunks = self.count(name)
        except StoreError as exc:
            meta = meta or dict(self._manifest_meta(name) or {})
            problem = str(exc)
        except Exception as exc:  # noqa: BLE001 - whatever else fails here stays this collection's problem
            meta = meta or dict(self._manifest_meta(name) or {})
            problem = str(damaged(name, exc, self.path, meta.get("root")))
        return CollectionInfo(
            name=name, documents=int(meta.get("documents", 0)), chunks=chunks,
            corpus_version=meta.get("corpus_version"), built_at=meta.get("built_at"), root=meta.get("root"),
            embedding_model=meta.get("embedding_model"), settings=meta.get("settings", {}),
            incomplete=is_incomplete(meta) or (problem is None and meta.get("corpus_version") is None),
            snapshot=self._publisher.state(name) if self._publisher is not None else None, problem=problem,
            source=meta.get("source") or {},
        )

    # ------------------------------------------------------------------ heading vectors (headings.py)

    def heading_vectors(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of these heading texts (texts never embedded are absent)."""
        return self.headings.get(texts)

    def write_heading_vectors(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self.headings.put(texts, vectors)
