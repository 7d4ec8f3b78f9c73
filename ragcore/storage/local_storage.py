"""Embedded Qdrant's SQLite files: a write-ahead log, checkpoints, and the stamp of a collection.

Qdrant's local mode commits each point in a transaction of its own. In SQLite's default
rollback-journal mode every commit syncs the disk; with a write-ahead log and
``synchronous=NORMAL`` a commit appends to ``storage.sqlite-wal`` and the disk is synced at
checkpoints. A commit is still atomic and survives a killed process (the next open replays the
log); a power cut can lose the last commits before a checkpoint, never the file's consistency,
and a re-run ingest writes whatever is missing. Measured on 1,000-point writes into a 10,000-point
collection: 292 points/s without the log, 921 with it (``ragcore bench writes``, bench/results/writes.md).

With a log, a write changes the log first and the main file only at a checkpoint. So a
collection's stamp (what a query snapshot records, to notice that the store has changed since)
covers both files, the log only while it holds frames, and a snapshot is stamped right after a
checkpoint has emptied the log, which closing the client later leaves as it is.

The connections are qdrant-client's own (``QdrantLocal.collections[name].storage.storage``, not
a public API): where a release moves them, nothing is tuned and writes keep the default journal.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ragcore.storage.snapshot import Stamp, file_stamp

LOG_SUFFIX = "-wal"


def _connections(client: Any) -> dict[str, Any]:
    """Each local collection's SQLite connection, by collection name (empty on a server)."""
    import sqlite3  # local mode only: a question answered from a snapshot never needs it

    local = getattr(client, "_client", None)
    out = {}
    for name, coll in dict(getattr(local, "collections", None) or {}).items():
        conn = getattr(getattr(coll, "storage", None), "storage", None)
        if isinstance(conn, sqlite3.Connection):
            out[name] = conn
    return out


def use_write_ahead_log(client: Any, *, on: bool = True) -> None:
    """Put every local collection's file in WAL mode (kept in the file) with NORMAL syncing (per
    connection, so again after each open or new collection). ``on=False`` restores SQLite's
    defaults, the rollback journal with FULL syncing (``ragcore bench writes`` compares the two)."""
    for conn in _connections(client).values():
        conn.execute(f"PRAGMA journal_mode={'WAL' if on else 'DELETE'}")
        conn.execute(f"PRAGMA synchronous={'NORMAL' if on else 'FULL'}")


def checkpoint(client: Any, name: str) -> None:
    """Move the log's frames into ``name``'s file and empty the log, before stamping it."""
    conn = _connections(client).get(name)
    if conn is not None:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def collection_stamp(path: Path) -> Stamp | None:
    """The stamp of a collection file and its log: a log without frames (empty, or removed when
    the last connection closed) counts as none, one with frames changes the stamp."""
    main = file_stamp(path)
    if main is None:
        return None
    log = file_stamp(path.with_name(path.name + LOG_SUFFIX))
    if log is None or log.size == 0:
        return main
    return Stamp(main.ino, main.size, main.mtime_ns, log.size, log.mtime_ns)
