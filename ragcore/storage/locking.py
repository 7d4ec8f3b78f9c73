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
# a reader that needs it (a collection without a valid snapshot) waits this many times longer: an ingest
# elsewhere holds the store for its whole run, and a question is better late than told "busy"
READ_WAIT_FACTOR = 8
LOCK_POLL_S = 0.05
WRITER_FILE = ".writer-waiting"  # beside .lock: held (shared) by every writer waiting for the store

_limit = threading.local()  # this thread's cap on waits (waiting_at_most) and whether it reads


def wait_s() -> float:
    """How long a wait that starts now may last in this thread (read at call time: tests shorten it)."""
    base = LOCK_WAIT_S * (READ_WAIT_FACTOR if getattr(_limit, "reader", False) else 1)
    return min(base, getattr(_limit, "cap", base))


def deadline() -> float:
    """When a wait that starts now gives up."""
    return time.monotonic() + wait_s()


@contextmanager
def waiting_at_most(seconds: float) -> Iterator[None]:
    """Waits for the store in this thread give up after ``seconds`` (a listing does not wait out an ingest)."""
    before = getattr(_limit, "cap", float("inf"))
    _limit.cap = min(before, seconds)
    try:
        yield
    finally:
        _limit.cap = before


@contextmanager
def as_reader() -> Iterator[None]:
    """The waits in this block are a reader's (READ_WAIT_FACTOR times a writer's, under any cap)."""
    before = getattr(_limit, "reader", False)
    _limit.reader = True
    try:
        yield
    finally:
        _limit.reader = before


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


def _held(lock: Path) -> bool:
    """Whether some handle (of any process, this one included) holds a lock on the file ``lock``."""
    if not lock.exists():
        return False
    with open(lock, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def writers_waiting(path: Path) -> bool:
    """Whether a writer (of any process, this one included) waits for the store."""
    return _held(path / WRITER_FILE)


def let_writers_in(path: Path, until: float) -> None:
    """A reader about to open the store waits (bounded) while a writer waits for it."""
    while writers_waiting(path) and time.monotonic() < until:
        time.sleep(LOCK_POLL_S)


def folder_locked(path: Path) -> bool:
    """Whether a process (this one included, through another handle) holds the embedded store's lock."""
    return _held(path / ".lock")


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
        f"The embedded Qdrant folder ({path.name}/ in the data folder) is in use by another process (an ingest or "
        "another write; one "
        f"process at a time, waited {wait_s():.0f} s). Try again when it is done, or share one store between "
        "processes with a Qdrant server: set RAGCORE_QDRANT_URL (see docs/15-troubleshooting-and-faq.md, 'The Qdrant "
        "folder is locked by another process')."
    )
