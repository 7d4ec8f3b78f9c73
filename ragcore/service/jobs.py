"""Ingest jobs: uploads added to a collection in the background, with progress and cancel.

Jobs run one at a time in one worker thread (an ingest holds the embedded store's write lock;
two at once would only wait for each other). ``DELETE /api/jobs/{id}`` sets the job's cancel flag;
the engine's progress callback then raises :class:`Cancelled`, which stops the ingest after its
last completed batch: what was written stays consistent and a new upload of the same files
completes it (ingest/writer.py).
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable

from ragcore.engine.collections_admin import Cancelled
from ragcore.types import IngestReport

IngestFn = Callable[[list[tuple[str, bytes]], str, Callable[[int, int, str], None]], IngestReport]


@dataclass
class Job:
    id: str
    collection: str
    files: int
    bytes: int
    state: str = "queued"  # queued | running | done | failed | cancelled
    done: int = 0
    total: int = 0
    current: str = ""
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    report: dict[str, Any] | None = None
    error: str | None = None
    cancel_event: threading.Event = field(default_factory=threading.Event, repr=False)

    def progress(self, done: int, total: int, current: str) -> None:
        """The engine's progress callback: raises Cancelled once the job was cancelled."""
        self.done, self.total, self.current = done, total, current
        if self.cancel_event.is_set():
            raise Cancelled()

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "collection": self.collection, "state": self.state, "files": self.files,
                "bytes": self.bytes, "progress": {"done": self.done, "total": self.total or self.files,
                                                   "current": self.current},
                "created": self.created, "started": self.started, "finished": self.finished,
                "report": self.report, "error": self.error}


class Jobs:
    def __init__(self, ingest: IngestFn, keep: int = 50) -> None:
        self._ingest = ingest
        self._keep = keep
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[Job, list[tuple[str, bytes]]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._ids = itertools.count(1)

    def submit(self, collection: str, files: list[tuple[str, bytes]]) -> Job:
        job = Job(id=f"job-{next(self._ids)}-{uuid.uuid4().hex[:8]}", collection=collection, files=len(files),
                  bytes=sum(len(d) for _, d in files))
        with self._lock:
            self._jobs[job.id] = job
            self._forget_old()
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="ragcore-serve-ingest", daemon=True)
                self._thread.start()
        self._queue.put((job, files))
        return job

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def cancel(self, job_id: str) -> Job | None:
        job = self.get(job_id)
        if job is not None and job.state in ("queued", "running"):
            job.cancel_event.set()
        return job

    def close(self) -> None:
        with self._lock:
            for job in self._jobs.values():
                job.cancel_event.set()
        self._queue.put(None)

    def _forget_old(self) -> None:
        finished = [j.id for j in self._jobs.values() if j.finished is not None]
        for jid in finished[: max(0, len(self._jobs) - self._keep)]:
            del self._jobs[jid]

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            job, files = item
            self._run(job, files)

    def _run(self, job: Job, files: list[tuple[str, bytes]]) -> None:
        job.started = time.time()
        if job.cancel_event.is_set():
            job.state = "cancelled"
        else:
            job.state = "running"
            try:
                report = self._ingest(files, job.collection, job.progress)
                job.report = {**report.summary(), "chunks_written": report.chunks_written,
                              "corpus_version": report.corpus_version,
                              "failed_files": [{"path": o.path, "reason": o.reason} for o in report.failed]}
                job.state = "done"
            except Cancelled:
                job.state = "cancelled"
            except Exception as exc:  # the job says why; the service goes on
                job.state, job.error = "failed", f"{type(exc).__name__}: {exc}"
        job.finished = time.time()
