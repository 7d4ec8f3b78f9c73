"""Ingest jobs: uploads added to a collection in the background, with progress and cancel.

Jobs run one at a time in one worker thread (an ingest holds the embedded store's write lock;
two at once would only wait for each other). ``DELETE /api/jobs/{id}`` sets the job's cancel flag;
the engine's progress callback then raises :class:`Cancelled`, which stops the ingest after its
last completed batch: what was written stays consistent and a new upload of the same files
completes it (ingest/run.py).

With several workers (``ragcore serve --workers N``) a request may reach a worker other than the
one running the job, so a job's state is also written to ``<data dir>/serve-jobs/<id>.json``
(at most twice a second) and a cancel that reaches another worker leaves ``<id>.cancel`` beside
it, which the running job's progress callback looks for.

A saved job names the process running it (pid and start time). A job read back as queued or running
whose process is gone (the server was killed, or stopped before the job ended) is ``interrupted``:
the reply says so, with how far it got, that what it wrote is kept and how to complete the
collection, and the file is rewritten so it stays said.
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import re
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ragcore.engine.collections_admin import Cancelled
from ragcore.service.gitreport import git_job_report
from ragcore.types import IngestReport

_ID = re.compile(r"job-\d+-[0-9a-f]{8}")


def _start_time(pid: int) -> str | None:
    """A process's start time (clock ticks since boot, /proc): a pid reused by a later process differs."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


_owners: dict[int, dict[str, Any]] = {}


def _owner() -> dict[str, Any]:
    """This process, as its saved jobs name it (per pid: a forked worker is a process of its own)."""
    pid = os.getpid()
    if pid not in _owners:
        _owners[pid] = {"pid": pid, "start": _start_time(pid)}
    return _owners[pid]


def _alive(owner: Any) -> bool:
    if not isinstance(owner, dict) or not isinstance(owner.get("pid"), int):
        return True  # saved before owners were recorded: nothing to judge by
    if owner.get("start") is not None:
        return _start_time(owner["pid"]) == owner["start"]
    try:
        os.kill(owner["pid"], 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _settle(state: dict[str, Any], path: Path) -> dict[str, Any]:
    """A saved job left queued or running by a process that is gone: interrupted, said and saved."""
    if state.get("state") not in ("queued", "running") or _alive(state.get("owner")):
        return state
    p = state.get("progress") or {}
    was = state["state"]
    state = {**state, "state": "interrupted", "finished": state.get("finished") or time.time(), "error": (
        f"interrupted: the server process running this job stopped while it was {was}, after {p.get('done', 0)} of "
        f"{p.get('total', state.get('files', 0))} files. What it wrote is kept; upload the files again to "
        "complete the collection (files already in it are skipped).")}
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(state))
        os.replace(tmp, path)
    except OSError:
        pass  # said in the reply all the same
    return state
IngestFn = Callable[[list[tuple[str, bytes]], str, Callable[[int, int, str], None]], IngestReport]


@dataclass
class Job:
    id: str
    collection: str
    files: int
    bytes: int
    state: str = "queued"  # queued | running | done | failed | cancelled | interrupted (its process died)
    done: int = 0
    total: int = 0
    current: str = ""
    created: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    report: dict[str, Any] | None = None
    error: str | None = None
    cancel_event: threading.Event = field(default_factory=threading.Event, repr=False)
    folder: Path | None = field(default=None, repr=False)
    _saved: float = field(default=0.0, repr=False)

    def progress(self, done: int, total: int, current: str) -> None:
        """The engine's progress callback: raises Cancelled once the job was cancelled (here or
        by another worker)."""
        self.done, self.total, self.current = done, total, current
        if self.folder is not None and (self.folder / f"{self.id}.cancel").exists():
            self.cancel_event.set()
        if self.cancel_event.is_set():
            raise Cancelled()
        if time.monotonic() - self._saved > 0.5:
            self.save()

    def save(self) -> None:
        """The state, for the other workers (written whole, then renamed: a reader never sees half)."""
        if self.folder is None:
            return
        self._saved = time.monotonic()
        tmp = self.folder / f".{self.id}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({**self.public(), "owner": _owner()}))  # the owner stays on disk, not in replies
        os.replace(tmp, self.folder / f"{self.id}.json")

    def public(self) -> dict[str, Any]:
        return {"id": self.id, "collection": self.collection, "state": self.state, "files": self.files,
                "bytes": self.bytes, "progress": {"done": self.done, "total": self.total or self.files,
                                                   "current": self.current},
                "created": self.created, "started": self.started, "finished": self.finished,
                "report": self.report, "error": self.error}


class Jobs:
    def __init__(self, ingest: IngestFn, keep: int = 50, folder: Path | None = None) -> None:
        self._ingest = ingest
        self._folder = folder
        self._keep = keep
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[Job, list[tuple[str, bytes]]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._ids = itertools.count(1)

    def submit(self, collection: str, files: list[tuple[str, bytes]]) -> Job:
        if self._folder is not None:
            self._folder.mkdir(parents=True, exist_ok=True)
        uploads = files if isinstance(files, list) else []  # else a callable (submit_call)
        job = Job(id=f"job-{next(self._ids)}-{uuid.uuid4().hex[:8]}", collection=collection, files=len(uploads),
                  bytes=sum(len(d) for _, d in uploads), folder=self._folder)
        job.save()
        with self._lock:
            self._jobs[job.id] = job
            self._forget_old()
            if self._thread is None:
                self._thread = threading.Thread(target=self._work, name="ragcore-serve-ingest", daemon=True)
                self._thread.start()
        self._queue.put((job, files))
        return job

    def submit_call(self, collection: str, run: Callable[[Callable[[int, int, str], None]], IngestReport]) -> Job:
        """A job that runs ``run(progress)`` (a git ref's ingest: gitroutes.py) instead of adding uploads."""
        return self.submit(collection, run)  # type: ignore[arg-type]

    def get(self, job_id: str) -> dict[str, Any] | None:
        """The job's public state: this worker's, else the one another worker saved."""
        with self._lock:
            job = self._jobs.get(job_id)
        if job is not None:
            return job.public()
        path = self._saved_path(job_id)
        if path is None or not path.is_file():
            return None
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(state, dict):
            return None
        return {k: v for k, v in _settle(state, path).items() if k != "owner"}

    def cancel(self, job_id: str) -> dict[str, Any] | None:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is not None:
            if job.state in ("queued", "running"):
                job.cancel_event.set()
            return job.public()
        state = self.get(job_id)
        path = self._saved_path(job_id)
        if state is not None and path is not None and state["state"] in ("queued", "running"):
            path.with_suffix(".cancel").touch()  # the worker running it stops at its next progress step
        return state

    def _saved_path(self, job_id: str) -> Path | None:
        # an id is ours only if it has our shape: a client cannot name another file
        if self._folder is None or not _ID.fullmatch(job_id):
            return None
        return self._folder / f"{job_id}.json"

    def close(self) -> None:
        with self._lock:
            for job in self._jobs.values():
                job.cancel_event.set()
        self._queue.put(None)

    def _forget_old(self) -> None:
        finished = [j.id for j in self._jobs.values() if j.finished is not None]
        for jid in finished[: max(0, len(self._jobs) - self._keep)]:
            del self._jobs[jid]
            path = self._saved_path(jid)
            for p in (path, path.with_suffix(".cancel")) if path is not None else ():
                p.unlink(missing_ok=True)

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
            job.save()
            try:
                report = files(job.progress) if callable(files) else self._ingest(files, job.collection, job.progress)
                job.report = {**report.summary(), "chunks_written": report.chunks_written,
                              "corpus_version": report.corpus_version,
                              "failed_files": [{"path": o.path, "reason": o.reason} for o in report.failed]}
                if report.source.get("commit"):  # a git ref's ingest (gitroutes.py)
                    job.report.update(git_job_report(report))
                job.state = "done"
            except Cancelled:
                job.state = "cancelled"
            except Exception as exc:  # the job says why; the service goes on
                job.state, job.error = "failed", f"{type(exc).__name__}: {exc}"
        job.finished = time.time()
        job.save()
