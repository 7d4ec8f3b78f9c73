"""Qdrant: one collection per corpus, named vectors ``dense`` (384-d cosine) and ``sparse``
(BM25 term weights, Qdrant's IDF modifier).

Embedded on disk by default, in Qdrant's own engine run in process (``edge_client.py``, under
``settings.data_dir/qdrant-edge``; ``embedded_engine="local"`` keeps qdrant-client's local mode
under ``qdrant/``, which holds every point in memory); ``settings.qdrant_url`` switches to a server
with no other change. On a server and in local mode points are written through LlamaIndex's
``QdrantVectorStore``; on Edge, which LlamaIndex has no vector store for, with the payload
``QdrantVectorStore`` writes, so the same collection works with a plain LlamaIndex
``VectorStoreIndex`` on a server, and ``SnapshotVectorStore`` is the embedded LlamaIndex store.

A point's id is the UUID form of its chunk id (a hash of path + span + text), so writing the
same chunk twice is idempotent: that is what makes an interrupted ingest safe to re-run.

Embedded Qdrant lets one process open its folder at a time. So the Store opens it only inside a
session (a write, or reading a collection that has no valid query snapshot) and closes it after;
after each write it publishes the collection's query snapshot (snapshot.py), which every read that
a question makes is served from. Many processes read; one writes; the others see its new snapshot
on their next call. On a Qdrant server (``qdrant_url``) nothing is snapshotted: the server searches.
"""

from __future__ import annotations

import fcntl
import json
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, TypeVar

import numpy as np

from ragcore.settings.config import RagcoreSettings
from ragcore.encoders.minilm import DIMENSION, MODEL_NAME
from ragcore.storage.sections import SectionRef, section_ref
from ragcore.storage.edge_client import EdgeBusy, EdgeClient, EdgePoint, collection_names as edge_collection_names
from ragcore.storage.local_storage import checkpoint, collection_stamp, use_write_ahead_log
from ragcore.storage.chunk_table import PackedChunks
from ragcore.storage.snapshot import Manifest, SnapshotData, SnapshotError, SnapshotFiles, SparseRows, Stamp, sparse_columns
from ragcore.encoders.sparse import Bm25Encoder
from ragcore.types import Chunk, CollectionInfo

if TYPE_CHECKING:  # qdrant_client costs ~1 s to import: only writes and fallback reads need it
    from qdrant_client import QdrantClient

    from ragcore.storage.edge_migrate import CopyProgress

T = TypeVar("T")

DENSE = "dense"
SPARSE = "sparse"
META_COLLECTION = "ragcore__meta"
# Embedded section headings, shared by every collection: a heading's vector depends only on
# its text and the model, so one entry serves every corpus, re-ingest and process.
TOPICS_COLLECTION = "ragcore__topics"
RESERVED_PREFIX = "ragcore__"
# a process that needs embedded Qdrant itself (a second writer) waits this long for the folder lock
LOCK_WAIT_S = 15.0
LOCK_POLL_S = 0.1
# payload keys of a chunk point (besides LlamaIndex's own _node_content / doc_id …)
CHUNK_KEYS = (
    "chunk_id", "path", "doc_hash", "kind", "start_line", "end_line", "section",
    "anchor", "page", "ordinal", "title", "doc_chunks", "context", "fp",
)


class StoreError(RuntimeError):
    """A storage problem with a message that says what to do."""


def point_id(chunk_id: str) -> str:
    return str(uuid.UUID(hex=chunk_id[:32]))


def embed_text(chunk: Chunk) -> str:
    """What the encoders see: the chunk's title and section path, then its text.

    The heading path names the subject that the chunk's sentences often leave implicit
    ("It is set in settings.py"); the stored chunk text stays exactly the source text.
    """
    context = chunk_context(chunk)
    return f"{context}\n{chunk.text}" if context else chunk.text


def chunk_context(chunk: Chunk) -> str:
    """The document title and section path, as the encoders see them before the text."""
    return " › ".join(x for x in (chunk.title, *chunk.section) if x)


@dataclass(frozen=True)
class PointRef:
    """What incremental ingest needs to know about a stored point, without its vectors."""

    id: str
    path: str
    doc_hash: str
    doc_chunks: int
    fp: str = ""  # index fingerprint the point was written with (see ingest.pipeline)


@dataclass(frozen=True)
class CollectionData:
    """Everything the in-process search index needs, loaded in one scroll."""

    chunks: Sequence[Chunk]  # a tuple, or PackedChunks when loaded from the store
    dense: np.ndarray  # (n, 384) float32, L2-normalised
    sparse: Sequence[tuple[np.ndarray, np.ndarray]]  # per chunk: term ids (int64), BM25 weights (float32)


def _create_collection(client: QdrantClient, name: str, **config: Any) -> None:
    """Create a collection; an embedded one's new file gets the write-ahead log too (local_storage.py)."""
    client.create_collection(name, **config)
    use_write_ahead_log(client)


def _qm():
    from qdrant_client import models

    return models


def chunk_from_payload(payload: dict[str, Any]) -> Chunk:
    text = payload.get("text")
    if text is None:  # LlamaIndex keeps the text inside _node_content
        text = json.loads(payload.get("_node_content", "{}")).get("text", "")
    return Chunk(
        chunk_id=payload["chunk_id"],
        text=text,
        path=payload["path"],
        doc_hash=payload["doc_hash"],
        kind=payload["kind"],
        start_line=int(payload["start_line"]),
        end_line=int(payload["end_line"]),
        section=tuple(payload.get("section") or ()),
        anchor=payload.get("anchor"),
        page=payload.get("page"),
        ordinal=int(payload.get("ordinal", 0)),
        title=payload.get("title"),
    )


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
    ) -> None:
        self.settings = settings
        self._client = client
        # embeds heading and title texts a snapshot would otherwise lack (a collection written before
        # titles were embedded, or copied point by point): once, at publish, instead of on every question
        self._embed_headings = embed_headings
        self._lock = threading.RLock()
        self._bm25 = Bm25Encoder()
        self._depth = 0  # nested sessions
        self._writing = 0  # of which writes
        self._owned = False  # the client was opened by a session, which closes it
        self._dirty: set[str] = set()  # collections written since their last snapshot
        self._rebuild_lock = threading.Lock()
        self._copy_progress: CopyProgress | None = None  # set only inside migrate_pending_copy
        use = self.is_embedded and client is None and getattr(settings, "snapshots", True)
        self.is_edge = self.is_embedded and client is None and settings.embedded_engine == "edge"
        self.snapshots = SnapshotFiles(Path(settings.data_dir) / "snapshots") if use else None

    # ------------------------------------------------------------------ connection

    @property
    def is_embedded(self) -> bool:
        return not self.settings.qdrant_url

    @property
    def client(self) -> QdrantClient:
        """The Qdrant client; outside a :meth:`session` it stays open until :meth:`close`."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._open()
                    self._owned = self._depth > 0
        return self._client

    @property
    def opened(self) -> bool:
        """Whether a Qdrant client is open now (tests check that a question did not open one)."""
        return self._client is not None

    @contextmanager
    def session(self, *, write: bool = True) -> Iterator[QdrantClient]:
        """Hold Qdrant open for a group of operations (sessions nest). With snapshots, the outermost
        session closes the client it opened, which releases the embedded folder's lock."""
        with self._lock:
            self._depth += 1
            self._writing += write
        try:
            yield self.client
        finally:
            with self._lock:
                self._depth -= 1
                self._writing -= write
                if self._depth == 0 and self._owned and self.snapshots is not None and self._client is not None:
                    self._client.close()
                    self._client = None
                    self._owned = False

    @property
    def path(self) -> Path:
        """The embedded store's folder (Edge's or local mode's)."""
        return self.settings.store_path

    def migration_pending(self) -> bool:
        """Whether opening this store will first copy an older local-mode folder into Qdrant Edge
        (once; edge_migrate.py). Two file checks: nothing is opened."""
        from ragcore.storage.edge_migrate import migration_pending

        return self.is_edge and self._client is None and migration_pending(self.settings.qdrant_path, self.path)

    def migrate_pending_copy(self, progress: CopyProgress | None = None) -> bool:
        """Open the store now, so that the one-time copy runs here with ``progress`` rather than
        silently inside whatever first needs the store; returns whether a copy was pending."""
        if not self.migration_pending():
            return False
        with self._lock:
            self._copy_progress = progress
            try:
                with self.session(write=False):
                    pass
            finally:
                self._copy_progress = None
        return True

    def _open(self) -> QdrantClient:
        s = self.settings
        if self.is_edge:
            return self._open_edge()  # type: ignore[return-value]
        from qdrant_client import QdrantClient

        if s.qdrant_url:
            return QdrantClient(url=s.qdrant_url, api_key=s.qdrant_api_key, timeout=30)
        path = s.qdrant_path
        path.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            # Embedded Qdrant takes its folder lock only after loading every collection, so
            # retrying the client itself would reload the store each time: wait on the lock.
            wait_for_folder_lock(path, deadline)
            try:
                client = QdrantClient(path=str(path))
            except RuntimeError as exc:
                if "already accessed" not in str(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise StoreError(_busy_message(path)) from exc
                continue
            use_write_ahead_log(client)  # local mode commits per point: 3x the writes (local_storage.py)
            return client

    def _open_edge(self) -> EdgeClient:
        from ragcore.storage.edge_migrate import migrate_local

        path = self.settings.edge_path
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            wait_for_folder_lock(path, deadline)
            try:
                client = EdgeClient(path)
            except EdgeBusy as exc:  # taken between the wait and the open: wait again
                if time.monotonic() >= deadline:
                    raise StoreError(_busy_message(path)) from exc
                continue
            try:
                migrate_local(self.settings.qdrant_path, client, self._copy_progress)
            except BaseException:
                client.close()
                raise
            return client

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
                self._owned = False

    def _with_client(self, fn: Callable[[QdrantClient], T], *, write: bool = False) -> T:
        with self.session(write=write) as client:
            return fn(client)

    # ------------------------------------------------------------------ snapshots

    def _storage_file(self, name: str) -> Path:
        if self.is_edge:
            return self.settings.edge_path / name / "stamp"  # replaced before every write (edge_client.py)
        return self.settings.qdrant_path / "collection" / name / "storage.sqlite"

    def _stamp(self, name: str) -> Stamp | None:
        return collection_stamp(self._storage_file(name))

    def _settled_stamp(self, name: str) -> Stamp | None:
        """The stamp to publish with: the write-ahead log emptied into the file first (inside a session)."""
        client = self.client
        if isinstance(client, EdgeClient):
            client.flush(name)
        else:
            checkpoint(client, name)
        return self._stamp(name)

    def _write_in_progress(self) -> bool:
        """A write session here, or another process holding the folder (a writer, or a reader rebuilding)."""
        if self._writing > 0:
            return True
        if self._client is not None:
            return False  # we hold the folder ourselves
        return folder_locked(self.path)

    def _busy_elsewhere(self) -> bool:
        """Another process holds embedded Qdrant (and this one has no snapshot to read instead)."""
        return self.snapshots is not None and self._client is None and self._writing == 0 \
            and folder_locked(self.path)

    def _current(self, name: str) -> Manifest | None:
        """The manifest that describes ``name`` now. Missing or stale: rebuilt from Qdrant, except
        while a write is under way, when the last published one (if any) is served."""
        if self.snapshots is None:
            return None
        m = self.snapshots.manifest(name)
        stamp = self._stamp(name)
        if m is not None and m.stamp == stamp:
            return m
        if stamp is None and self._client is None:
            return None  # no such collection (the file appears when a collection is created)
        if self._write_in_progress():
            return m
        with self._rebuild_lock:  # one rebuild at a time: a second asker waits, then finds it done
            m = self.snapshots.manifest(name)
            if m is not None and m.stamp == self._stamp(name):
                return m
            with self.session(write=False) as client:
                return self._publish(name) if client.collection_exists(name) else None

    def snapshot(self, name: str) -> SnapshotData | None:
        """What questions need of ``name``, from its snapshot (written first when missing, stale or
        damaged). None with snapshots off, on a server, or when there is no such collection."""
        m = self._current(name)
        if m is None:
            return None
        try:
            return self.snapshots.data(m)  # type: ignore[union-attr]
        except SnapshotError:
            newer = self._current(name)  # another process may just have replaced (and removed) that version
            if newer is not None and newer.version != m.version:
                try:
                    return self.snapshots.data(newer)  # type: ignore[union-attr]
                except SnapshotError:
                    pass
            if self._write_in_progress():
                return None
            with self.session(write=False):
                m = self._publish(name)
            return self.snapshots.data(m)  # type: ignore[union-attr]

    def _publish(self, name: str, meta: dict[str, Any] | None = None) -> Manifest:
        """Write a snapshot of ``name`` from Qdrant (inside a session)."""
        assert self.snapshots is not None
        data = self.load(name)
        meta = self._qdrant_meta(name) if meta is None else meta
        # every heading text of the collection (topics.heading_of picks among them) with a stored vector
        texts = {t.strip() for c in data.chunks for t in (*c.section, c.title or "") if t and t.strip()}
        headings = self.heading_vectors(sorted(texts))
        missing = sorted(texts - headings.keys())
        if missing and self._embed_headings is not None:
            vecs = self._embed_headings(missing)
            self.write_heading_vectors(missing, vecs)
            headings.update(zip(missing, vecs))
        stamp = self._settled_stamp(name)
        assert stamp is not None
        if isinstance(self.client, EdgeClient):
            self.client.release()
        m = self.snapshots.publish(name, chunks=data.chunks, dense=data.dense, sparse=sparse_columns(data.sparse),
                                   headings=headings, meta=meta, stamp=stamp)
        self._dirty.discard(name)
        return m

    def _after_meta_write(self, name: str, meta: dict[str, Any]) -> None:
        """Bring the snapshot up to date after a write: new files when points changed, else a new manifest."""
        if self.snapshots is None or not self.client.collection_exists(name):
            return
        m = self.snapshots.manifest(name)
        stamp = self._settled_stamp(name)
        if name in self._dirty or m is None or stamp is None or m.stamp != stamp:
            self._publish(name, meta)
        else:
            self.snapshots.update_meta(m, meta, stamp)

    # ------------------------------------------------------------------ schema

    def _local_names(self) -> list[str] | None:
        """Collection names from embedded Qdrant's own meta.json, without opening it (None: unreadable)."""
        if self.snapshots is None or self._client is not None:
            return None
        if self.is_edge:
            from ragcore.storage.edge_migrate import migration_pending

            # local-mode collections not yet copied over: the client's open migrates them
            return None if migration_pending(self.settings.qdrant_path, self.path) else edge_collection_names(self.path)
        path = self.settings.qdrant_path / "meta.json"
        if not path.exists():
            return []
        try:
            return list(json.loads(path.read_text("utf-8")).get("collections", {}))
        except (OSError, ValueError, AttributeError):
            return None  # being rewritten right now: ask Qdrant

    def exists(self, name: str) -> bool:
        names = self._local_names()
        if names is not None:
            return name in names
        return self._with_client(lambda c: c.collection_exists(name))

    def ensure_collection(self, name: str) -> None:
        if name.startswith(RESERVED_PREFIX) or not name.replace("-", "").replace("_", "").isalnum():
            raise StoreError(f"Invalid collection name {name!r}: use letters, digits, - and _.")
        qm = _qm()
        with self.session() as client:
            if client.collection_exists(name):
                return
            _create_collection(
                client, name,
                vectors_config={DENSE: qm.VectorParams(size=DIMENSION, distance=qm.Distance.COSINE)},
                sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
            )
            self._dirty.add(name)
            if not self.is_embedded:  # payload indexes only matter (and only exist) on a server
                for key in ("path", "doc_hash"):
                    client.create_payload_index(name, key, qm.PayloadSchemaType.KEYWORD)

    def vector_store(self, name: str):
        """LlamaIndex's ``QdrantVectorStore`` over this collection (hybrid, our BM25), on a server or in
        local mode. Qdrant Edge has none: ``Engine.vector_store`` gives ``SnapshotVectorStore`` there."""
        if self.is_edge:
            raise StoreError("LlamaIndex's QdrantVectorStore cannot open Qdrant Edge, the embedded store: use "
                             "Engine.vector_store(name) or SnapshotVectorStore(store, name)")
        from llama_index.vector_stores.qdrant import QdrantVectorStore

        def sparse_fn(texts: list[str]) -> tuple[list[list[int]], list[list[float]]]:
            vecs = [self._bm25.encode_document(t) for t in texts]
            return [list(v.indices) for v in vecs], [list(v.values) for v in vecs]

        def sparse_query_fn(texts: list[str]) -> tuple[list[list[int]], list[list[float]]]:
            vecs = [self._bm25.encode_query(t) for t in texts]
            return [list(v.indices) for v in vecs], [list(v.values) for v in vecs]

        return QdrantVectorStore(
            collection_name=name,
            client=self.client,
            enable_hybrid=True,
            sparse_doc_fn=sparse_fn,
            sparse_query_fn=sparse_query_fn,
            dense_vector_name=DENSE,
            sparse_vector_name=SPARSE,
            batch_size=256,
        )

    # ------------------------------------------------------------------ writes

    def write_chunks(
        self, name: str, chunks: Sequence[Chunk], dense: np.ndarray, doc_chunks: dict[str, int], fingerprint: str = ""
    ) -> None:
        """Upsert chunks with their dense vectors; sparse vectors are computed on the way in."""
        from ragcore.llamaindex.nodes import chunk_to_node

        nodes = []
        for c, vec in zip(chunks, dense):
            node = chunk_to_node(
                c, {"doc_chunks": doc_chunks[c.path], "fp": fingerprint, "context": chunk_context(c)},
                node_id=point_id(c.chunk_id),
            )
            node.embedding = vec.tolist()
            # a plain LlamaIndex reader of the collection embeds "context\ntext" (see embed_text),
            # as the ingest did; the LLM reads the text alone
            node.excluded_embed_metadata_keys = [k for k in node.metadata if k != "context"]
            node.metadata_template = "{value}"
            node.text_template = "{metadata_str}\n{content}"
            nodes.append(node)
        if nodes:
            with self.session() as client:
                self._dirty.add(name)
                if isinstance(client, EdgeClient):
                    client.upsert(name, self._edge_points(nodes))
                else:
                    self.vector_store(name).add(nodes)

    def _edge_points(self, nodes: Sequence[Any]) -> list[EdgePoint]:
        """The points ``QdrantVectorStore`` would write for ``nodes``: the same payload
        (``node_to_metadata_dict``), dense vector and BM25 of the node's embedding text."""
        from llama_index.core.schema import MetadataMode
        from llama_index.core.vector_stores.utils import node_to_metadata_dict

        out = []
        for node in nodes:
            sv = self._bm25.encode_document(node.get_content(metadata_mode=MetadataMode.EMBED))
            vector = {DENSE: node.get_embedding(), SPARSE: sv}
            out.append(EdgePoint(node.node_id, vector, node_to_metadata_dict(node, remove_text=False, flat_metadata=False)))
        return out

    def copy_points(self, old: str, new: str, batch: int = 256) -> int:
        """Every point of ``old`` written to ``new`` as it is (inside a write session); returns how many."""
        with self.session() as client:
            offset: Any = None
            moved = 0
            while True:
                points, offset = client.scroll(old, limit=batch, offset=offset, with_payload=True, with_vectors=True)
                if points:
                    self._dirty.add(new)
                    if not isinstance(client, EdgeClient):  # a server and local mode take their own models
                        qm = _qm()
                        points = [qm.PointStruct(id=p.id, vector=p.vector, payload=p.payload) for p in points]
                    client.upsert(new, points, wait=True)
                    moved += len(points)
                if offset is None:
                    return moved

    def delete_points(self, name: str, ids: Sequence[str]) -> None:
        qm = _qm()
        with self.session() as client:
            self._dirty.add(name)
            for i in range(0, len(ids), 1000):
                client.delete(name, points_selector=qm.PointIdsList(points=list(ids[i : i + 1000])), wait=True)

    def drop(self, name: str) -> None:
        qm = _qm()
        with self.session() as client:
            if client.collection_exists(name):
                client.delete_collection(name)
            if client.collection_exists(META_COLLECTION):
                client.delete(META_COLLECTION, points_selector=qm.PointIdsList(points=[_meta_id(name)]))
            self._dirty.discard(name)
            if self.snapshots is not None:
                self.snapshots.remove(name)

    # ------------------------------------------------------------------ reads

    def _scroll(self, name: str, *, with_payload: Any, with_vectors: Any) -> Iterator[Any]:
        for batch in self._scroll_batches(name, with_payload=with_payload, with_vectors=with_vectors):
            yield from batch

    def _scroll_batches(self, name: str, *, with_payload: Any, with_vectors: Any) -> Iterator[list[Any]]:
        with self.session(write=False) as client:
            offset = None
            while True:
                points, offset = client.scroll(
                    name, limit=1024, offset=offset, with_payload=with_payload, with_vectors=with_vectors
                )
                yield points
                if offset is None:
                    break

    def point_refs(self, name: str) -> list[PointRef]:
        """What incremental ingest knows of stored points: always read from Qdrant, the store of record."""
        with self.session(write=False) as client:
            if not client.collection_exists(name):
                return []
            return [
                PointRef(str(p.id), p.payload["path"], p.payload["doc_hash"], int(p.payload.get("doc_chunks", 0)),
                         p.payload.get("fp") or "")
                for p in self._scroll(name, with_payload=["path", "doc_hash", "doc_chunks", "fp"], with_vectors=False)
            ]

    def doc_hashes(self, name: str) -> dict[str, str]:
        """Content hash of every stored document, by path (from the snapshot when there is one)."""
        snap = self.snapshot(name) if self.exists(name) else None
        if snap is not None:
            saved = getattr(snap.chunks, "persisted", lambda _: None)("doc_hashes.json")
            return dict(saved) if saved is not None else {c.path: c.doc_hash for c in snap.chunks}
        return {r.path: r.doc_hash for r in self.point_refs(name)}

    def stored_vectors(self, name: str, ids: Sequence[str]) -> dict[str, tuple[list[float], str]]:
        """Dense vector and embedding context of stored points, by point id (missing ids absent)."""
        out: dict[str, tuple[list[float], str]] = {}
        with self.session(write=False) as client:
            for i in range(0, len(ids), 1000):
                for p in client.retrieve(name, list(ids[i : i + 1000]), with_vectors=[DENSE], with_payload=["context"]):
                    out[str(p.id)] = (p.vector[DENSE], (p.payload or {}).get("context") or "")
        return out

    def load(self, name: str) -> CollectionData:
        """Every chunk with its vectors, scrolled from Qdrant (queries read the snapshot instead)."""
        # Compact all the way, so a million chunks load in a few GB: chunks kept as their table rows
        # (PackedChunks, ~1/3 of Chunk objects), the matrix filled a batch at a time, the sparse
        # vectors as one CSR (lists of Python floats would take ~12 GB, tuples ~4 GB)
        chunks = PackedChunks()
        lengths: list[int] = []
        terms: list[np.ndarray] = [np.zeros(0, np.int64)]  # one array per batch, joined once at the end
        weights: list[np.ndarray] = [np.zeros(0, np.float32)]
        with self.session(write=False) as client:
            mat = np.empty((client.count(name, exact=True).count, DIMENSION), np.float32)
            for batch in self._scroll_batches(name, with_payload=True, with_vectors=True):
                if not batch:  # an empty collection scrolls one empty page: [] cannot fill a (0, 384) slice
                    continue
                if len(chunks) + len(batch) > len(mat):  # points written since the count (not inside a write)
                    mat = np.concatenate([mat, np.empty((len(chunks) + len(batch) - len(mat), DIMENSION), np.float32)])
                mat[len(chunks) : len(chunks) + len(batch)] = [p.vector[DENSE] for p in batch]
                t: list[int] = []
                w: list[float] = []
                for p in batch:
                    chunks.append(chunk_from_payload(p.payload))
                    sv = p.vector.get(SPARSE)
                    lengths.append(len(sv.indices) if sv is not None else 0)
                    if sv is not None:
                        t.extend(sv.indices)
                        w.extend(sv.values)
                terms.append(np.asarray(t, np.int64))
                weights.append(np.asarray(w, np.float32))
        indptr = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))
        return CollectionData(chunks, mat[: len(chunks)], SparseRows(indptr, np.concatenate(terms), np.concatenate(weights)))

    def section_refs(self, name: str) -> list[SectionRef]:
        """Where every chunk sits (path, line, section path, title), without text or vectors."""
        snap = self.snapshot(name)
        if snap is not None:
            return [section_ref(c) for c in snap.chunks]
        if not self.exists(name):
            return []
        return [
            SectionRef(p.payload["path"], int(p.payload["start_line"]), tuple(p.payload.get("section") or ()),
                       p.payload.get("title"), p.payload.get("anchor"), p.payload.get("page"))
            for p in self._scroll(name, with_payload=["path", "start_line", "section", "title", "anchor", "page"],
                                  with_vectors=False)
        ]

    # ------------------------------------------------------------------ heading vectors (see topics.py)

    def heading_vectors(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of these heading texts (texts never embedded are absent)."""
        if not texts:
            return {}
        out: dict[str, np.ndarray] = {}
        ids = {_heading_id(t): t for t in texts}
        keys = list(ids)
        with self.session(write=False) as client:
            if not client.collection_exists(TOPICS_COLLECTION):
                return {}
            for i in range(0, len(keys), 1000):
                for p in client.retrieve(TOPICS_COLLECTION, keys[i : i + 1000], with_vectors=True, with_payload=False):
                    out[ids[str(p.id)]] = np.asarray(p.vector, dtype=np.float32)
        return out

    def write_heading_vectors(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        if not texts:
            return
        qm = _qm()
        with self.session() as client:
            if not client.collection_exists(TOPICS_COLLECTION):
                _create_collection(client, TOPICS_COLLECTION,
                                   vectors_config=qm.VectorParams(size=DIMENSION, distance=qm.Distance.COSINE))
            points = [qm.PointStruct(id=_heading_id(t), vector=v.tolist(), payload={"text": t})
                      for t, v in zip(texts, vectors)]
            for i in range(0, len(points), 512):
                client.upsert(TOPICS_COLLECTION, points[i : i + 512], wait=True)

    def chunks_of(self, name: str, path: str) -> list[Chunk]:
        snap = self.snapshot(name)
        if snap is not None:
            rows = getattr(snap.chunks, "path_rows", None)  # the table's document column: no scan of the rows
            got = [snap.chunks[int(i)] for i in rows(path)] if rows else [c for c in snap.chunks if c.path == path]
        else:
            qm = _qm()
            flt = qm.Filter(must=[qm.FieldCondition(key="path", match=qm.MatchValue(value=path))])
            got = []
            with self.session(write=False) as client:
                offset = None
                while True:
                    batch, offset = client.scroll(name, scroll_filter=flt, limit=1024, offset=offset, with_payload=True)
                    got.extend(chunk_from_payload(p.payload) for p in batch)
                    if offset is None:
                        break
        return sorted(got, key=lambda c: (c.page or 0, c.start_line, c.ordinal))

    def count(self, name: str) -> int:
        if not self.exists(name):
            return 0
        m = self._current(name)
        if m is not None:
            return m.chunks
        if self._busy_elsewhere():
            return 0  # being created by another process right now: not there yet
        return self._with_client(lambda c: c.count(name, exact=True).count)

    # ------------------------------------------------------------------ collection metadata

    def write_meta(self, name: str, meta: dict[str, Any]) -> None:
        qm = _qm()
        with self.session() as client:
            if not client.collection_exists(META_COLLECTION):
                _create_collection(client, META_COLLECTION, vectors_config=qm.VectorParams(size=1, distance=qm.Distance.DOT))
            # merged into what is there: an ingest must not erase, say, a calibrated abstain bar
            payload = {**self._qdrant_meta(name), "name": name, "embedding_model": MODEL_NAME, **meta}
            client.upsert(META_COLLECTION, [qm.PointStruct(id=_meta_id(name), vector=[1.0], payload=payload)], wait=True)
            self._after_meta_write(name, payload)

    def _qdrant_meta(self, name: str) -> dict[str, Any]:
        with self.session(write=False) as client:
            if not client.collection_exists(META_COLLECTION):
                return {}
            got = client.retrieve(META_COLLECTION, [_meta_id(name)], with_payload=True)
            return dict(got[0].payload) if got else {}

    def read_meta(self, name: str) -> dict[str, Any]:
        if self.snapshots is None or self._client is not None:
            return self._qdrant_meta(name)  # Qdrant is open anyway: read the store of record
        if not self.exists(name):
            return {}  # (a dropped collection's metadata is deleted with it)
        m = self._current(name)
        if m is not None:
            return dict(m.meta)
        if self._busy_elsewhere():
            return {}  # being created by another process right now: not there yet
        return self._qdrant_meta(name)

    def collection_names(self) -> list[str]:
        names = self._local_names()
        if names is None:
            names = self._with_client(lambda c: [x.name for x in c.get_collections().collections])
        return sorted(n for n in names if not n.startswith(RESERVED_PREFIX))

    def info(self, name: str) -> CollectionInfo:
        meta = self.read_meta(name)
        return CollectionInfo(
            name=name,
            documents=int(meta.get("documents", 0)),
            chunks=self.count(name),
            corpus_version=meta.get("corpus_version"),
            built_at=meta.get("built_at"),
            root=meta.get("root"),
            embedding_model=meta.get("embedding_model"),
            settings=meta.get("settings", {}),
        )


def folder_locked(path: Path) -> bool:
    """Whether a process (this one included, through another handle) holds the embedded store's lock."""
    lock = path / ".lock"
    if not lock.exists():
        return False
    with open(lock, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def wait_for_folder_lock(path: Path, deadline: float) -> None:
    """Return once no other process holds the embedded store's lock (or raise at ``deadline``)."""
    lock = path / ".lock"
    while lock.exists():
        with open(lock, "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                if time.monotonic() >= deadline:
                    raise StoreError(_busy_message(path)) from None
                time.sleep(LOCK_POLL_S)
                continue
            fcntl.flock(f, fcntl.LOCK_UN)
            return


def _busy_message(path: Path) -> str:
    return (
        f"The embedded Qdrant folder {path} is in use by another process (an ingest or another write; one "
        f"process at a time, waited {LOCK_WAIT_S:.0f} s). Try again when it is done, or share one store between "
        "processes with a Qdrant server: set RAGCORE_QDRANT_URL (see README, 'Where data lives')."
    )


def _heading_id(text: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ragcore-heading:{MODEL_NAME}:{text}"))


def _meta_id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ragcore:{name}"))


def utc_now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()
