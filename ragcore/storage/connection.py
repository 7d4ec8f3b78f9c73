"""The Store's connection to its backend: a client opened on demand, held for nested sessions.

Embedded Qdrant lets one process open its folder at a time. With query snapshots the client (and
with it the folder's lock) is held only inside a session: the outermost session closes the client
it opened. Without snapshots (or with a client passed in) a client, once open, stays open until
``close``. ``write_in_progress`` tells a reader whether the published snapshot is the one to
serve while a writer is at work.

Readers let a waiting writer in (locking.writer_waiting): a reader does not open the store while
a writer of another process waits for it, and a process whose overlapping reads keep the store
open lets it close before it starts a new read, so a writer is not starved by readers.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

from ragcore.storage.backend import CopyProgress, StoreBackend
from ragcore.storage.locking import (
    LOCK_POLL_S, as_reader, deadline, folder_locked, let_writers_in, writer_waiting, writers_waiting,
)


class Connection:
    def __init__(self, backend: StoreBackend, client: Any = None, *, per_session: bool) -> None:
        self.backend = backend
        self._client = client
        self._per_session = per_session  # close the client when the outermost session ends
        self._lock = threading.RLock()
        self._closed = threading.Condition(self._lock)  # notified when a session closes the client
        self._mine = threading.local()  # this thread's session depth
        self._depth = 0  # nested sessions
        self._writing = 0  # of which writes
        self._owned = False  # the client was opened by a session, which closes it
        self._progress: CopyProgress | None = None  # set only while an up-front migration runs
        self.opens = 0  # clients opened so far (tests check that reads opened none)

    @property
    def client(self) -> Any:
        """The client; outside a session it stays open until :meth:`close`."""
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._open()
                    self.opens += 1
                    self._owned = self._depth > 0
        return self._client

    def _open(self) -> Any:
        if not self._per_session:
            return self.backend.open(self._progress)
        if self._writing > 0:  # readers of other processes let this writer in
            with writer_waiting(self.backend.path):
                return self.backend.open(self._progress)
        with as_reader():  # a reader waits out an ingest elsewhere (bounded), after letting waiting writers in
            let_writers_in(self.backend.path, deadline())
            return self.backend.open(self._progress)

    def _yield_to_writers(self) -> None:
        """Before a new read (not nested in this thread): while this process holds the store and a
        writer elsewhere waits for it, wait (bounded) for the reads under way to close it."""
        until = deadline()
        with self._lock:
            while (self._client is not None and self._owned and time.monotonic() < until
                   and writers_waiting(self.backend.path)):
                self._closed.wait(LOCK_POLL_S)

    @property
    def opened(self) -> bool:
        return self._client is not None

    @property
    def depth(self) -> int:
        return self._depth

    @contextmanager
    def session(self, *, write: bool = True) -> Iterator[Any]:
        """Hold the client open for a group of operations (sessions nest)."""
        mine = getattr(self._mine, "depth", 0)
        if not write and not mine and self._per_session:
            self._yield_to_writers()
        with self._lock:
            self._depth += 1
            self._writing += write
        self._mine.depth = mine + 1
        try:
            yield self.client
        finally:
            self._mine.depth = mine
            with self._lock:
                self._depth -= 1
                self._writing -= write
                if self._depth == 0 and self._owned and self._per_session and self._client is not None:
                    self._client.close()
                    self._client = None
                    self._owned = False
                    self._closed.notify_all()

    @contextmanager
    def progress(self, progress: CopyProgress | None) -> Iterator[None]:
        """Report a one-time copy that an open inside this block makes (backend_edge.py)."""
        with self._lock:
            self._progress = progress
            try:
                yield
            finally:
                self._progress = None

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
                self._owned = False

    def write_in_progress(self) -> bool:
        """A write session here, or another process holding the folder (a writer)."""
        if self._writing > 0:
            return True
        if self._client is not None:
            return False  # we hold the folder ourselves
        return folder_locked(self.backend.path)
