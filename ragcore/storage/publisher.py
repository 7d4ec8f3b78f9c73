"""Publishing query snapshots (snapshot.py): after writes, never on a read.

A snapshot is current when its manifest's stamp equals the collection's stamp now. Reads ask for
the current snapshot and get None when there is none (missing, stale after a crashed writer,
damaged, of an older format): the caller then reads Qdrant, the store of record, and answers
exactly as the snapshot would have. While a writer is at work the last published snapshot is
served (consistent, one version behind).

Publishing happens only after writes, inside the writer's session:

* ``after_meta_write``: every write ends by writing the collection's metadata (ingest, upload,
  removing a document, renaming, a new abstain bar): new files when points changed, else a new
  manifest over the same files;
* ``publish_dirty``: at the end of an outermost write session, any collection whose points
  changed without a metadata write (``write_chunks`` alone, or a one-time copy from local mode);
* ``refresh``: the explicit repair step (``Store.refresh_snapshot``, ``Engine.repair_snapshots``,
  ``ragcore collections --repair``), which rewrites a snapshot that is not current or fails its
  checks (checksums, vector norms: snapshot.py). A publish reads every point from Qdrant, which
  refuses damaged vectors or payloads (reads.py, damage.py): damage is never copied into a snapshot,
  and the snapshot there was is left as it was.
"""

from __future__ import annotations

from typing import Any

from ragcore.encoders.base import ModelRecord
from ragcore.storage.headings import Embed, HeadingStore, heading_texts
from ragcore.storage.local_storage import collection_stamp
from ragcore.storage.reads import PointReader
from ragcore.storage.snapshot import Manifest, SnapshotData, SnapshotError, SnapshotFiles, Stamp, sparse_columns


def model_record(meta: Any) -> ModelRecord | None:
    """The embedding model a collection's metadata records (None: the bundled MiniLM, from before records)."""
    raw = (meta or {}).get("embedding")
    return ModelRecord.from_meta(raw) if isinstance(raw, dict) and raw.get("source") else None


class Publisher:
    def __init__(self, files: SnapshotFiles, conn: Any, reader: PointReader, headings: HeadingStore,
                 embed_headings: Embed | None, dirty: set[str], embed_for_model: Any = None) -> None:
        self.files = files
        self._conn = conn
        self._reader = reader
        self._headings = headings
        # embeds heading and title texts a snapshot would otherwise lack (a collection written before
        # titles were embedded, or copied point by point): once, at publish, instead of on every question
        self._embed = embed_headings
        # a collection built with another model (its metadata's "embedding" record) embeds its headings with
        # that model, into that model's heading store: record -> Embed
        self._embed_for_model = embed_for_model
        self.dirty = dirty  # collections whose points changed since their last snapshot (the writer adds)

    # ------------------------------------------------------------------ reads (never publish)

    def stamp(self, name: str) -> Stamp | None:
        f = self._conn.backend.stamp_file(name)
        return collection_stamp(f) if f is not None else None

    def current(self, name: str) -> Manifest | None:
        """The manifest that describes ``name`` now; while a write is under way, the last published
        one. None: no valid snapshot (the caller reads Qdrant)."""
        m = self.files.manifest(name)
        stamp = self.stamp(name)
        if m is not None and m.stamp == stamp:
            return m
        if stamp is None and not self._conn.opened:
            return None  # no such collection (the file appears when a collection is created)
        return m if self._conn.write_in_progress() else None

    def snapshot(self, name: str) -> SnapshotData | None:
        """The current snapshot's files, None when there is none or they are damaged."""
        m = self.current(name)
        if m is None:
            return None
        try:
            return self.files.data(m)
        except SnapshotError:
            newer = self.current(name)  # another process may just have replaced (and removed) that version
            if newer is not None and newer.version != m.version:
                try:
                    return self.files.data(newer)
                except SnapshotError:
                    pass
            return None

    def is_current(self, name: str, *, verify: bool = False) -> bool:
        """A readable snapshot whose stamp is the collection's own (not merely the last published one);
        ``verify``: and whose files match their checksums and hold sound vectors, at any size."""
        m = self.files.manifest(name)
        if m is None or m.stamp != self.stamp(name):
            return False
        try:
            self.files.verify(m) if verify else self.files.data(m)
        except SnapshotError:
            return False
        return True

    def state(self, name: str) -> str:
        """ok · missing · stale (the store changed since: a writer at work or one that died) · damaged
        (unreadable, or its files fail their checks): what ``ragcore collections`` shows."""
        m = self.files.manifest(name)
        if m is None:
            return "damaged" if self.files.has_manifest(name) else "missing"
        try:
            self.files.data(m)
        except SnapshotError:
            return "damaged"
        return "ok" if m.stamp == self.stamp(name) else "stale"

    # ------------------------------------------------------------------ writes (inside a session)

    def publish(self, name: str, meta: dict[str, Any] | None = None) -> Manifest:
        """Write a snapshot of ``name`` from Qdrant."""
        data = self._reader.load(name)
        meta = self._reader.meta(name) if meta is None else meta
        # every heading text of the collection (topics.heading_of picks among them) with a vector
        texts = heading_texts(data.chunks)
        record = model_record(meta)
        store, embed = self._headings.for_model(record), self._embed
        if record is not None and record.source != "minilm":
            embed = self._embed_for_model(record) if self._embed_for_model is not None else None
        headings = store.ensure(texts, embed) if embed is not None else store.get(sorted(texts))
        client = self._conn.client
        self._conn.backend.settle(client, name)
        stamp = self.stamp(name)
        assert stamp is not None
        self._conn.backend.release(client)
        m = self.files.publish(name, chunks=data.chunks, dense=data.dense, sparse=sparse_columns(data.sparse),
                               headings=headings, meta=meta, stamp=stamp)
        self.dirty.discard(name)
        return m

    def after_meta_write(self, name: str, meta: dict[str, Any]) -> None:
        """Bring the snapshot up to date after a write: new files when points changed, else a new manifest."""
        client = self._conn.client
        if not client.collection_exists(name):
            return
        m = self.files.manifest(name)
        self._conn.backend.settle(client, name)
        stamp = self.stamp(name)
        if name in self.dirty or m is None or stamp is None or m.stamp != stamp:
            self.publish(name, meta)
        else:
            self.files.update_meta(m, meta, stamp)

    def publish_dirty(self) -> None:
        """Publish the collections written without a metadata write (end of an outermost session)."""
        client = self._conn.client
        for name in sorted(self.dirty):
            if client.collection_exists(name):
                self.publish(name)
            else:
                self.dirty.discard(name)

    def refresh(self, name: str) -> bool:
        """The explicit repair step: rewrite ``name``'s snapshot unless it is current (inside a write
        session); returns whether it wrote one."""
        if self.is_current(name, verify=True) and name not in self.dirty:
            return False
        if not self._conn.client.collection_exists(name):
            return False
        self.publish(name)
        return True
