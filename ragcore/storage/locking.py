"""The embedded store's folder lock, as seen from outside the engine that holds it.

Embedded Qdrant (Edge and local mode) lets one process open its folder at a time, holding an
exclusive ``flock`` on ``<folder>/.lock``. A second process that needs the store itself (a second
writer) waits for that lock, bounded, then stops with a message that names the way to share a
store between processes (a Qdrant server).
"""

from __future__ import annotations

import fcntl
import time
from pathlib import Path

from ragcore.storage.schema import StoreError

# a process that needs embedded Qdrant itself (a second writer) waits this long for the folder lock
LOCK_WAIT_S = 15.0
LOCK_POLL_S = 0.1


def deadline() -> float:
    """When a wait that starts now gives up (read at call time, so a test can shorten it)."""
    return time.monotonic() + LOCK_WAIT_S


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


def wait_for_folder_lock(path: Path, until: float) -> None:
    """Return once no other process holds the embedded store's lock (or raise at ``until``)."""
    lock = path / ".lock"
    while lock.exists():
        with open(lock, "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                if time.monotonic() >= until:
                    raise StoreError(busy_message(path)) from None
                time.sleep(LOCK_POLL_S)
                continue
            fcntl.flock(f, fcntl.LOCK_UN)
            return


def busy_message(path: Path) -> str:
    return (
        f"The embedded Qdrant folder {path} is in use by another process (an ingest or another write; one "
        f"process at a time, waited {LOCK_WAIT_S:.0f} s). Try again when it is done, or share one store between "
        "processes with a Qdrant server: set RAGCORE_QDRANT_URL (see docs/15-troubleshooting-and-faq.md, 'The Qdrant "
        "folder is locked by another process')."
    )
