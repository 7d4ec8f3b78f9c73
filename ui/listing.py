"""The collection list the app shows, read without making an answer wait.

Reading it (``Engine.collections``) opens every collection's snapshot: 0.1-0.9 s on this machine.
It was read on the answer path whenever the 5-s-old list had expired (the recorder, the cited
passages' sources, the stale-answer notice all ask for the collection's info), which delayed a
finished answer by as much. Now a list up to ``STALE_SERVE_S`` old is returned at once and read
again in a thread that waits until no answer is streaming; ``max_age=0`` (the Collections tab)
and a first reading are done at once, and ``invalidate`` (an ingest ended) drops the list.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from ragcore.types import CollectionInfo

STALE_SERVE_S = 60.0  # a list up to this old is shown while a fresh one is read in a thread
IDLE_WAIT_S = 1.0  # the thread reads only after this long without an answer streaming


class CollectionList:
    def __init__(self, read: Callable[[], list[CollectionInfo]], busy: Callable[[], bool]) -> None:
        self._read_now = read
        self._busy = busy
        self._lock = threading.Lock()
        self._hit: tuple[float, list[CollectionInfo]] | None = None
        self._gen = 0  # bumped by invalidate: a reading begun before it is not kept
        self._refreshing = False

    def get(self, max_age: float) -> list[CollectionInfo]:
        hit = self._hit
        age = time.time() - hit[0] if hit is not None else None
        if hit is not None and age is not None and age < max_age:
            return hit[1]
        if hit is not None and age is not None and max_age > 0 and age < STALE_SERVE_S:
            self._refresh_later()
            return hit[1]
        return self._read()

    def invalidate(self) -> None:
        with self._lock:
            self._gen += 1
            self._hit = None

    def _read(self) -> list[CollectionInfo]:
        gen = self._gen
        cols = self._read_now()
        with self._lock:
            if gen == self._gen:
                self._hit = (time.time(), cols)
        return cols

    def _refresh_later(self) -> None:
        with self._lock:
            if self._refreshing:
                return
            self._refreshing = True

        def work() -> None:
            try:
                # after the answer that may be starting (the call that got here is often its first step)
                idle_since = time.monotonic()
                while time.monotonic() - idle_since < IDLE_WAIT_S:
                    time.sleep(0.1)
                    if self._busy():
                        idle_since = time.monotonic()
                self._read()
            except Exception:  # noqa: BLE001 - the next reading without a list shows the error
                pass
            finally:
                with self._lock:
                    self._refreshing = False

        threading.Thread(target=work, name="ragcore-collections", daemon=True).start()
