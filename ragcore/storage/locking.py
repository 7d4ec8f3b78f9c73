"""The embedded store's folder lock, as seen from outside the engine that holds it.

Embedded Qdrant (Edge and local mode) lets one process open its folder at a time, holding an
exclusive ``flock`` on ``<folder>/.lock``. A second process that needs the store itself (a second
writer) waits for that lock, bounded, then stops with a message that names the way to share a
store between processes (a Qdrant server).
"""

from __future__ import annotations

import fcntl
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from ragcore.storage.schema import StoreError

# a process that needs embedded Qdrant itself (a second writer) waits this long for the folder lock
LOCK_WAIT_S = 15.0
LOCK_POLL_S = 0.05
WRITER_FILE = ".writer-waiting"  # beside .lock: held (shared) by every writer waiting for the store

_limit = threading.local()  # a shorter wait for this thread (waiting_at_most)


def deadline() -> float:
    """When a wait that starts now gives up (read at call time, so a test can shorten it)."""
    return time.monotonic() + min(LOCK_WAIT_S, getattr(_limit, "seconds", LOCK_WAIT_S))


@contextmanager
def waiting_at_most(seconds: float) -> Iterator[None]:
    """Waits for the store in this thread give up after ``seconds`` (a listing does not wait out an ingest)."""
    before = getattr(_limit, "seconds", LOCK_WAIT_S)
    _limit.seconds = min(before, seconds)
    try:
        yield
    finally:
        _limit.seconds = before


@contextmanager
def writer_waiting(path: Path) -> Iterator[None]:
    """Say, while a writer waits for the store, that readers should let it in first: a reader that
    opens the store for a moment, again and again, would otherwise win the lock every time."""
    path.mkdir(parents=True, exist_ok=True)
    with open(path / WRITER_FILE, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def writers_waiting(path: Path) -> bool:
    """Whether a writer (of any process, this one included) waits for the store."""
    f_path = path / WRITER_FILE
    if not f_path.exists():
        return False
    with open(f_path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def let_writers_in(path: Path, until: float) -> None:
    """A reader about to open the store waits (bounded) while a writer waits for it."""
    while writers_waiting(path) and time.monotonic() < until:
        time.sleep(LOCK_POLL_S)


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
