"""Managing collections on top of an Engine and its Store: rename, remove one document,
record a cancelled ingest, and tell whether the files on disk changed since the collection was
built (which files were added, changed, removed).

Only the Engine's and the Store's public methods and the Qdrant client of a store session are
used; nothing here opens a store of its own. Each action is one write session (``Store.session``):
embedded Qdrant is opened once for it and released after, and the collection's query snapshot
follows when the action writes the collection's metadata.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragcore.ingest.read.loaders import read_bytes
from ragcore.ingest.discover import discover
from ragcore.ingest.run import UPLOAD_ROOT, corpus_version
from ragcore.engine.engine import Engine
from ragcore.storage.store import StoreError, is_incomplete, utc_now  # noqa: F401 (is_incomplete re-exported)

COPY_BATCH = 256  # points per scroll/upsert while renaming: bounds memory for large collections


class Cancelled(Exception):
    """Raised from an ingest's progress callback to stop it; what was written stays (see ingest/run.py)."""


class AdminError(StoreError):
    """A management action that cannot be done (the message says why and what to do)."""


# --------------------------------------------------------------------------- rename


def rename_collection(engine: Engine, old: str, new: str) -> int:
    """Copy every point (vectors and payload) of ``old`` into ``new``, copy its metadata, drop ``old``.

    Qdrant has no rename. ``new`` must not exist. Returns the number of points moved. If the copy
    fails half-way, ``new`` is dropped again and ``old`` is untouched.
    """
    store = engine.store
    if old == new:
        raise AdminError(f"The collection is already called {new!r}.")
    if not store.exists(old):
        raise AdminError(f"There is no collection {old!r}.")
    if store.exists(new):
        raise AdminError(f"A collection {new!r} already exists: choose another name, or delete it first.")
    with store.session():
        store.ensure_collection(new)  # validates the name and creates the schema
        try:
            moved = store.copy_points(old, new, COPY_BATCH)
            if moved != store.count(old):
                raise AdminError(f"Copying {old!r} to {new!r} moved {moved} of {store.count(old)} points; nothing was changed.")
            meta = {k: v for k, v in store.read_meta(old).items() if k != "name"}
            store.write_meta(new, meta)
        except BaseException:
            engine.drop(new)
            raise
        engine.drop(old)
    engine.hybrid_search.invalidate(new)
    return moved


# --------------------------------------------------------------------------- one document


def delete_document(engine: Engine, collection: str, path: str) -> int:
    """Remove one document's chunks; the collection's corpus version and document count follow.

    The file itself is not touched: a later ingest of the folder brings it back if it is still there.
    """
    store = engine.store
    with store.session():
        refs = store.point_refs(collection)
        ids = [r.id for r in refs if r.path == path]
        if not ids:
            raise AdminError(f"{path} is not in the collection {collection!r}.")
        store.delete_points(collection, ids)
        hashes = {r.path: r.doc_hash for r in refs if r.path != path}
        store.write_meta(collection, {"corpus_version": corpus_version(hashes), "documents": len(hashes),
                                      "built_at": utc_now()})
    engine.hybrid_search.invalidate(collection)
    return len(ids)


# --------------------------------------------------------------------------- cancelled ingests


def record_cancelled(engine: Engine, collection: str, root: str | None) -> None:
    """After a cancelled ingest: remember the folder (so the collection can be brought up to date)
    and when it was cut short. The ingest writes its metadata only when it completes, so a new
    collection would otherwise have no root, and an existing one would claim to be complete."""
    store = engine.store
    with store.session():
        if not store.exists(collection):
            return
        meta = store.read_meta(collection)
        hashes = {r.path: r.doc_hash for r in store.point_refs(collection)}
        update: dict[str, Any] = {"cancelled_at": utc_now(), "documents": len(hashes)}
        if root and root != UPLOAD_ROOT and not meta.get("root"):
            update["root"] = root
        store.write_meta(collection, update)
    engine.hybrid_search.invalidate(collection)


# --------------------------------------------------------------------------- staleness


@dataclass(frozen=True)
class Staleness:
    collection: str
    root: str | None
    checked: bool  # False: no folder to compare with (uploads, or the folder is gone)
    added: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    incomplete: bool = False  # a cancelled ingest
    reason: str = ""  # why it could not be checked

    @property
    def stale(self) -> bool:
        return self.incomplete or bool(self.added or self.changed or self.removed)

    def summary(self) -> str:
        if not self.checked:
            return self.reason
        parts = [f"{len(v)} {k}" for k, v in (("added", self.added), ("changed", self.changed), ("removed", self.removed)) if v]
        if self.incomplete:
            parts.insert(0, "the last ingest was cancelled")
        return ", ".join(parts) if parts else "up to date"


def staleness(engine: Engine, collection: str, *, ignore: frozenset[str] = frozenset()) -> Staleness:
    """Compare the files under the collection's ingest folder with what the collection holds.

    ``ignore``: paths known not to be indexable (files an ingest reported as failed): they are
    not "added". Files are compared by content hash (sha256), the ingest's own test.
    """
    store = engine.store
    meta = store.read_meta(collection)
    incomplete = is_incomplete(meta)
    root = meta.get("root")
    if not root or root == UPLOAD_ROOT:
        return Staleness(collection, root, False, incomplete=incomplete,
                         reason="built from uploaded files: there is no folder to compare with")
    if (meta.get("source") or {}).get("mode") in ("ref", "commit"):  # the work tree is not what it holds
        return Staleness(collection, root, False, incomplete=incomplete,
                         reason="built from a git ref: its staleness is the ref's (git source)")
    if not Path(root).is_dir():
        return Staleness(collection, root, False, incomplete=incomplete,
                         reason=f"the folder {root} is gone: re-ingest it from where it is now")
    stored = store.doc_hashes(collection)  # from the query snapshot: a check does not open Qdrant
    _, files = discover([Path(root)])
    on_disk: dict[str, str] = {}
    max_bytes = engine.settings.max_file_bytes
    for src in files:
        if src.problem is not None or src.path is None or src.rel in ignore:
            continue
        try:
            on_disk[src.rel] = hashlib.sha256(read_bytes(src.path, max_bytes=max_bytes, follow_symlinks=False)).hexdigest()
        except Exception:  # noqa: BLE001 - unreadable or too large: the ingest reports it, not a change
            continue
    added = sorted(set(on_disk) - set(stored) - ignore)
    removed = sorted(p for p in set(stored) - set(on_disk) if p not in ignore and not _still_there(Path(root), p))
    changed = sorted(p for p in set(on_disk) & set(stored) if on_disk[p] != stored[p])
    return Staleness(collection, root, True, tuple(added), tuple(changed), tuple(removed), incomplete)


def _still_there(root: Path, rel: str) -> bool:
    """A stored file that discovery skipped but that still exists (e.g. too large now) is not 'removed'."""
    return (root / rel).is_file()


def record_failed(engine: Engine, collection: str, failed: list[str]) -> None:
    """Remember the files an ingest could not index, so a staleness check does not call them new."""
    if engine.store.exists(collection):
        engine.store.write_meta(collection, {"failed_files": sorted(failed)})


def failed_files(engine: Engine, collection: str) -> frozenset[str]:
    return frozenset(engine.store.read_meta(collection).get("failed_files") or ())
