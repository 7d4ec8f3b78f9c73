"""A background ingest: its progress (files, chunks, rate, ETA) and its Cancel (pure Python).

The ingest runs in a thread of the app's process (one at a time), so a page rerun, another
page or another browser session never aborts it; a folder ingest's thread only relays the progress of a
child process at a lower priority, which does the work (ragcore/engine/ingest_process.py). ``Engine.ingest(progress=job.progress)``
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
_HEADINGS_RE = re.compile(r"^embedding (?P<n>\d+) section headings$")
# The work after the last chunk, in chunk-times, so that the estimate covers the whole job (on a 772-page
# corpus "about 0 s left" stood for ~6 minutes while the section headings were embedded):
# a heading costs ~0.035 of a chunk to embed (291 Git-doc headings 2.35 s against their 291 chunks 64.1 s,
# the same model and batch, measured twice); until the phase starts its count is guessed at the 0.5 headings a
# chunk seen on the Django and Git sets (0.73 and 0.46); the abstain bar's calibration costs about as much as
# embedding CALIBRATION_CHUNKS chunks plus CALIBRATION_PER_CHUNK of a chunk-time per chunk of the collection (its
# questions are searched in it): 66 chunk-times on 1,365 Django chunks (bench/results/ingest.md), 211 on the 525
# pages' 7,278 (76 s at 0.36 s a chunk, bench/results/browser-ingest.md), where a flat 40 said "about 1 s left"
# for the calibration's last 68 s.
STARTING = "starting the ingest process"  # the step a job starts at, until its process reports
HEADING_COST = 0.035
HEADINGS_PER_CHUNK = 0.5
CALIBRATION_CHUNKS = 40
CALIBRATION_PER_CHUNK = 0.024


def calibration_cost(chunks: int) -> float:
    """The calibration's time, in chunk-times, on a collection of ``chunks`` chunks."""
    return CALIBRATION_CHUNKS + CALIBRATION_PER_CHUNK * chunks


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
    chunks_written: int = 0  # chunks embedded and written (the unit that takes the time)
    chunks_queued: int = 0  # chunks of the files read so far
    # files read (and chunked) so far: replaced, never changed in place, because the page's thread sums
    # over it while the ingest thread adds to it ("Set changed size during iteration", 20 times in one ingest)
    read: frozenset = frozenset()
    phase: str = "reading and embedding"  # named in the status line; "embedding N section headings", "calibrating …"
    phase_started: float | None = None
    first_batch: tuple[float, int] | None = None  # (when, chunks written) at the first written batch
    headings: int | None = None  # section headings to embed, once the phase says
    kept: tuple[int, int] | None = None  # (documents, chunks) the collection holds after a cancel
    report: IngestReport | None = None
    error: str | None = None
    cancelled: bool = False
    started: float = field(default_factory=time.time)
    finished: float | None = None
    thread: threading.Thread | None = None
    worker: tuple[int, int] | None = None  # (pid, niceness) of the process that ingests, when it is not the app's
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
        h = _HEADINGS_RE.match(current or "")
        if h or (current or "").startswith("calibrating"):
            self.headings = int(h.group("n")) if h else self.headings or 0
            self.phase, self.phase_started, self.current = current, self.clock(), ""
        elif m:
            self.current, self.chunks_in_file = m.group("path"), int(m.group("n"))
        else:
            if current != self.current:
                self.chunks_in_file = 0
            self.current = current
            if current in self.sizes and current not in self.read:
                self.read = self.read | {current}
        self.done, self.total = done, total
        if self.cancel_event.is_set():
            raise Cancelled()

    def worker_started(self, pid: int, nice: int) -> None:
        """The ingest process's first message: it runs, the model loads next."""
        self.worker = (pid, nice)
        if self.current in ("", STARTING):
            self.current = "loading the embedding model"

    def chunk_progress(self, written: int, queued: int) -> None:
        """The Engine's chunk callback: after each written batch; raises Cancelled once Cancel was pressed."""
        if self.first_batch is None and written:
            self.first_batch = (self.clock(), written)
        self.chunks_written, self.chunks_queued = written, queued
        if self.cancel_event.is_set():
            raise Cancelled()

    # ------------------------------------------------------------------ what the page shows

    @property
    def elapsed(self) -> float:
        return (self.finished or self.clock()) - self.started

    @property
    def chunks_expected(self) -> int | None:
        """Chunks this ingest will write: those of the files read so far, plus the unread files'
        bytes at the rate of chunks per byte seen so far (exact once every file was read)."""
        if not self.chunks_queued:
            return None
        read_bytes = sum(self.sizes.get(n, 0) for n in self.read)
        unread = sum(v for n, v in self.sizes.items() if n not in self.read)
        if unread <= 0 or read_bytes <= 0:
            return self.chunks_queued
        return self.chunks_queued + round(unread * self.chunks_queued / read_bytes)

    @property
    def fraction(self) -> float:
        """Done by chunks written (the model's work) once the first batch is written; before,
        by bytes of the files done (files differ a lot), else by files."""
        eta = self.eta_s
        if eta is not None:  # the whole job, the phases after the chunks included
            return min(self.elapsed / (self.elapsed + eta), 1.0) if self.elapsed + eta > 0 else 0.0
        expected = self.chunks_expected
        if expected:
            return min(self.chunks_written / expected, 1.0)
        total_bytes = sum(self.sizes.values())
        if total_bytes > 0:
            names = sorted(self.sizes)
            done_bytes = sum(self.sizes[n] for n in names[: self.done])
            return min(done_bytes / total_bytes, 1.0)
        return min(self.done / self.total, 1.0) if self.total else 0.0

    @property
    def eta_s(self) -> float | None:
        """Time left for the whole job: the chunks still to embed at the rate seen so far, then the
        section headings and the calibration in chunk-times (see HEADING_COST)."""
        if not self.chunks_written or self.elapsed < 2:
            return None  # too early to tell: no batch written yet
        per_chunk = self.seconds_per_chunk
        expected = self.chunks_expected or self.chunks_written
        if self.phase_started is None:
            after = expected * HEADINGS_PER_CHUNK * HEADING_COST + calibration_cost(expected)
            return max(expected - self.chunks_written, 0) * per_chunk + after * per_chunk
        in_phase = self.clock() - self.phase_started
        left = calibration_cost(expected) * per_chunk
        if self.phase.startswith("embedding"):
            left += (self.headings or 0) * HEADING_COST * per_chunk
        return max(left - in_phase, 1.0)  # the phase is under way: never "0 s left" before the end

    @property
    def chunk_seconds(self) -> float:
        """Seconds spent reading and embedding chunks (the phases after it are not chunk work)."""
        return (self.phase_started or self.finished or self.clock()) - self.started

    @property
    def seconds_per_chunk(self) -> float:
        """A chunk's time, measured from the first written batch on. What comes before it (the ingest
        process's start, the model's load, the first files read, 110 s at load 18) is paid once: counted
        into the rate, it made the estimates of a 525-page ingest too long by a third and more at 10% of
        the work (bench/results/browser-ingest.md)."""
        end = self.phase_started or self.finished or self.clock()
        if self.first_batch is not None:
            t0, w0 = self.first_batch
            if self.chunks_written > w0 and end > t0:
                return (end - t0) / (self.chunks_written - w0)
        return self.chunk_seconds / self.chunks_written if self.chunks_written else 0.0

    @property
    def rate(self) -> float:
        """Chunks per minute (the rate the time left is computed with)."""
        per = self.seconds_per_chunk
        return 60 / per if per > 0 else 0.0

    def status_line(self) -> str:
        expected = self.chunks_expected
        parts = []
        if expected:
            approx = "" if len(self.read) >= len(self.sizes) else "~"
            parts.append(f"{self.chunks_written:,} of {approx}{expected:,} chunks embedded")
        parts.append(f"{self.done}/{self.total or '?'} files")
        if self.phase_started is not None:
            parts.append(self.phase)
        elif self.current:
            parts.append(self.current if len(self.current) <= 60 else "…" + self.current[-59:])
        if self.chunks_written:
            parts.append(f"{self.rate:,.0f} chunks/min")
        eta = self.eta_s
        parts.append(f"about {fmt_duration(eta)} left" if eta is not None else "estimating time left…")
        parts.append(f"{fmt_duration(self.elapsed)} elapsed")
        return " · ".join(parts)

    def cancel_summary(self) -> str:
        """What a cancelled ingest kept, as the collection says after it (not as the counter did)."""
        head = f"Ingest into '{self.collection}' cancelled after {fmt_duration(self.elapsed)}"
        if self.kept is None:
            return head + f" ({self.done} of {self.total} files were complete); what was written is kept."
        docs, chunks = self.kept
        return (f"{head}: the collection keeps {docs} document{'s' if docs != 1 else ''} ({chunks:,} chunks) written "
                "before the cancel. Ingest the folder again to complete it (finished files are skipped).")


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
