"""The threads that run questions and retrievals: daemon threads, started as they are needed.

Why not ``concurrent.futures.ThreadPoolExecutor``: its threads are not daemons, and an ``atexit``
hook joins every one of them, so a question stuck in a call that cannot be cancelled (a model
endpoint that never sends its headers, within a long timeout) kept ``ragcore serve`` alive after
uvicorn had shut down. A daemon thread ends with the process. A task here is a plain callable that
reports its own result (to the event loop, through ``call_soon_threadsafe``): no
``concurrent.futures.Future`` and its lock per request.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Callable

log = logging.getLogger("ragcore.service")


class DaemonPool:
    """At most ``size`` daemon threads taking tasks in order. Callers bound the work in flight
    (the service's question slots): with one thread per slot a task never waits for a thread."""

    def __init__(self, size: int, name: str = "ragcore-serve") -> None:
        self.size, self.name = size, name
        self._tasks: "queue.SimpleQueue[Callable[[], None] | None]" = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._idle = 0  # threads waiting for a task
        self._closed = False

    def submit(self, task: Callable[[], None]) -> None:
        """Run ``task()`` on a pool thread (it must report its result itself; an exception it
        lets out is logged)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the service is shutting down")
            if self._idle == 0 and len(self._threads) < self.size:
                t = threading.Thread(target=self._work, name=f"{self.name}-{len(self._threads)}", daemon=True)
                self._threads.append(t)
                self._idle += 1
                t.start()
            self._idle -= 1  # this task will take an idle thread
        self._tasks.put(task)

    def shutdown(self) -> None:
        """Let every thread end after its current task (it does not wait for them); no new task."""
        with self._lock:
            self._closed = True
        for _ in range(len(self._threads)):
            self._tasks.put(None)

    def _work(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            try:
                task()
            except BaseException:  # noqa: BLE001 - a task reports its own errors; this one escaped
                log.exception("a service task failed")
            with self._lock:
                self._idle += 1
