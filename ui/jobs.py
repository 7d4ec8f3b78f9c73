"""A background ingest: its progress (files, chunks, rate, ETA) and its Cancel (pure Python).

The ingest runs in a thread of the app's process (one at a time), so a page rerun, another
page or another browser session never aborts it. ``Engine.ingest(progress=job.progress)``
calls the callback between files and after every written batch of a long file; once Cancel
was pressed the callback raises :class:`ragcore.engine.collections_admin.Cancelled`, which stops the
ingest after its last completed batch (what was written stays consistent; a re-run completes it).
"""

from __future__ import annotations

import itertools
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

from ragcore.engine.collections_admin import Cancelled
from ragcore.types import IngestReport

_IDS = itertools.count(1)
_CHUNKS_RE = re.compile(r"^(?P<path>.*): (?P<n>\d+) chunks written$")


@dataclass
class IngestJob:
    collection: str
    label: str
    root: str | None = None  # the folder, for a cancelled ingest's record
    sizes: Mapping[str, int] = field(default_factory=dict)  # bytes of each file (relative path) to ingest
    id: int = field(default_factory=lambda: next(_IDS))
    done: int = 0  # files finished
    total: int = 0
    current: str = ""  # the file being read, or the step ("embedding 40 section headings")
    chunks_in_file: int = 0  # chunks of the current file written so far
    report: IngestReport | None = None
    error: str | None = None
    cancelled: bool = False
    started: float = field(default_factory=time.time)
    finished: float | None = None
    thread: threading.Thread | None = None
    cancel_event: threading.Event = field(default_factory=threading.Event)
    clock: Callable[[], float] = time.time

    @property
    def running(self) -> bool:
        return self.finished is None

    def cancel(self) -> None:
        self.cancel_event.set()

    def progress(self, done: int, total: int, current: str) -> None:
        """The Engine's progress callback; raises Cancelled once Cancel was pressed."""
        m = _CHUNKS_RE.match(current or "")
        if m:
            self.current, self.chunks_in_file = m.group("path"), int(m.group("n"))
        else:
            if current != self.current:
                self.chunks_in_file = 0
            self.current = current
        self.done, self.total = done, total
        if self.cancel_event.is_set():
            raise Cancelled()

    # ------------------------------------------------------------------ what the page shows

    @property
    def elapsed(self) -> float:
        return (self.finished or self.clock()) - self.started

    @property
    def fraction(self) -> float:
        """Done by bytes when the sizes are known (files differ a lot), else by files."""
        total_bytes = sum(self.sizes.values())
        if total_bytes > 0:
            names = sorted(self.sizes)
            done_bytes = sum(self.sizes[n] for n in names[: self.done])
            return min(done_bytes / total_bytes, 1.0)
        return min(self.done / self.total, 1.0) if self.total else 0.0

    @property
    def eta_s(self) -> float | None:
        f = self.fraction
        if f <= 0.02 or self.elapsed < 2:
            return None  # too early to tell
        return max(self.elapsed * (1 - f) / f, 0.0)

    @property
    def rate(self) -> float:
        """Files per minute so far."""
        return self.done / self.elapsed * 60 if self.elapsed > 0 else 0.0

    def status_line(self) -> str:
        parts = [f"{self.done}/{self.total or '?'} files"]
        if self.current:
            cur = self.current if len(self.current) <= 60 else "…" + self.current[-59:]
            parts.append(cur + (f" ({self.chunks_in_file} chunks written)" if self.chunks_in_file else ""))
        if self.done:
            parts.append(f"{self.rate:.0f} files/min")
        eta = self.eta_s
        parts.append(f"about {fmt_duration(eta)} left" if eta is not None else "estimating time left…")
        parts.append(f"{fmt_duration(self.elapsed)} elapsed")
        return " · ".join(parts)


def fmt_duration(s: float | None) -> str:
    if s is None:
        return "–"
    s = int(round(s))
    if s < 60:
        return f"{s} s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m} min {s:02d} s"
    h, m = divmod(m, 60)
    return f"{h} h {m:02d} min"
