"""The process-wide runtime (one Engine per process, the ingest job, the cached collection list and
staleness) and the one wording of an error for the user. Kept apart from state.py, which builds it
and holds the per-session parts, so that the first-start and warm-up modules that state.py calls
can name it without importing state.py back."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from ragcore.engine.collections_admin import Cancelled, Staleness, failed_files, record_cancelled, record_failed, staleness
from ragcore.engine.engine import Engine
from ragcore.settings.config import RagcoreSettings
from ragcore.storage.store import StoreError
from ragcore.types import CollectionInfo, IngestReport

from .jobs import IngestJob
from .listing import CollectionList
from .notebook import NotebookError, NotebookStore

STALE_TTL_S = 30.0  # how long a staleness check is trusted (it hashes the folder's files)


@dataclass
class Runtime:
    engine: Engine
    settings: RagcoreSettings  # from the environment, at process start
    lock: threading.RLock = field(default_factory=threading.RLock)
    demo_checked: bool = False
    demo_report: IngestReport | None = None
    demo_error: str | None = None
    job: IngestJob | None = None
    busy: int = 0  # answers being streamed right now (the warm-up pauses meanwhile)
    _listing: CollectionList = field(init=False, repr=False)
    _stale: dict[str, tuple[float, Staleness]] = field(default_factory=dict)

    @property
    def notebooks(self) -> NotebookStore:
        return NotebookStore(self.settings.notebooks_dir)

    def __post_init__(self) -> None:
        self._listing = CollectionList(self.engine.collections, lambda: self.busy > 0)

    def collections(self, *, max_age: float = 5.0) -> list[CollectionInfo]:
        """Read again when older than ``max_age`` s, in a thread while an older list is shown (ui/listing.py)."""
        return self._listing.get(max_age)

    def invalidate_collections(self) -> None:
        self._listing.invalidate()

    def info(self, name: str) -> CollectionInfo | None:
        return next((c for c in self.collections() if c.name == name), None)

    def start_ingest(self, job: IngestJob, work: Callable[[IngestJob], IngestReport]) -> IngestJob:
        """Run ``work`` in a thread (one ingest at a time per process); returns the job that runs."""
        with self.lock:
            if self.job is not None and self.job.running:
                return self.job

            def target() -> None:
                try:
                    job.report = work(job)
                    record_failed(self.engine, job.collection, [o.path for o in job.report.failed])
                except Cancelled:
                    job.cancelled = True
                    try:
                        record_cancelled(self.engine, job.collection, job.root)
                    except Exception:  # noqa: BLE001 - the record is a courtesy; the data is safe
                        pass
                    try:  # what the cancel message says was kept: the collection's own count
                        info = next((c for c in self.engine.collections() if c.name == job.collection), None)
                        job.kept = (info.documents, info.chunks) if info is not None else (0, 0)
                    except Exception:  # noqa: BLE001 - then the message says less, not something wrong
                        pass
                except Exception as exc:  # shown to the user by the page
                    job.error = friendly(exc, "The ingest")
                finally:
                    job.finished = time.time()
                    self.invalidate_collections()
                    self._stale.pop(job.collection, None)

            job.thread = threading.Thread(target=target, name=f"ragcore-ingest-{job.collection}", daemon=True)
            self.job = job
            job.thread.start()
            return job

    def staleness(self, name: str, *, max_age: float = STALE_TTL_S) -> Staleness | None:
        """Whether the collection's folder changed since it was built (cached; None while it ingests)."""
        if self.job is not None and self.job.running and self.job.collection == name:
            return None
        hit = self._stale.get(name)
        if hit is not None and time.time() - hit[0] < max_age:
            return hit[1]
        try:
            result = staleness(self.engine, name, ignore=failed_files(self.engine, name))
        except Exception:  # noqa: BLE001 - a check that fails must not break a page
            return None
        self._stale[name] = (time.time(), result)
        return result

    def forget_staleness(self, name: str | None = None) -> None:
        if name is None:
            self._stale.clear()
        else:
            self._stale.pop(name, None)


def friendly(exc: BaseException, action: str) -> str:
    if isinstance(exc, StoreError):
        return str(exc)
    if isinstance(exc, NotebookError):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"{exc}. The path is read on the machine that runs the app: check it and try again."
    if isinstance(exc, PermissionError):
        return f"{action} failed: permission denied ({exc}). Check the file permissions."
    return (
        f"{action} failed ({type(exc).__name__}: {exc}). Try again; if it keeps failing, "
        "check the terminal that runs the app."
    )
