"""``ingest_in_process``: a folder ingest in a child process at a higher niceness, its progress relayed into an
IngestJob's callbacks, its Cancel honoured, its result readable by the calling engine (issue 42, item 5).

Real parts: embedded Qdrant in a temp folder, the real ONNX model (the child loads its own). Not timed:
``ragcore bench browser-ingest`` measures what the priority buys; tests/app/test_ingest_child.py runs it
from the app."""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from ragcore.engine.collections_admin import Cancelled
from ragcore.engine import ingest_process
from ragcore.engine.ingest_process import ingest_in_process
from tests.conftest import DOCS
from ui.jobs import IngestJob

pytestmark = pytest.mark.slow
PAGES = ("05-scores-top-k-and-threshold.md", "06-citations-and-the-answer-contract.md", "02-ingesting-documents.md")


def _folder(tmp_path: Path, pages=PAGES) -> Path:
    folder = tmp_path / "pages"
    folder.mkdir()
    for rel in pages:
        shutil.copy(DOCS / rel, folder / rel)
    return folder


def test_the_child_runs_at_a_lower_priority_and_its_result_is_readable(tmp_path, make_engine):
    engine = make_engine()
    folder = _folder(tmp_path)
    job = IngestJob(collection="pages", label="x", sizes={p: (folder / p).stat().st_size for p in PAGES})
    seen: list[tuple[int, int]] = []
    report = ingest_in_process(engine, [folder], "pages", settings=engine.settings.with_(collection="pages"),
                               progress=job.progress, chunk_progress=job.chunk_progress, started=lambda *a: seen.append(a))
    job.finished = job.clock()
    pid, nice = seen[0]
    assert pid != os.getpid() and nice > os.getpriority(os.PRIO_PROCESS, 0)
    # the progress a page shows came through: every file, every chunk, the named steps
    assert job.done == job.total == len(PAGES) and job.chunks_written == report.chunks_written > 0
    assert job.phase == "calibrating the abstain bar"
    assert report.seconds <= job.elapsed + 0.5  # the whole call's time, the child's start included
    found = engine.retrieve("What does the threshold apply to?", collection="pages")
    assert any(c.chunk.path == PAGES[0] for c in found.kept)


def test_a_callback_that_raises_cancelled_stops_the_child_where_it_is(tmp_path, make_engine):
    engine = make_engine()
    pages = sorted(p.name for p in DOCS.glob("*.md"))
    folder = _folder(tmp_path, pages)
    held = threading.Event()

    def progress(done: int, total: int, current: str) -> None:
        if done >= 2:  # the child waits for this answer: nothing is written past it
            held.set()
            raise Cancelled()

    with pytest.raises(Cancelled):
        ingest_in_process(engine, [folder], "pages", settings=engine.settings.with_(collection="pages"), progress=progress)
    assert held.is_set()
    info = next(c for c in engine.collections() if c.name == "pages")
    assert info.documents < len(pages)


def test_cancel_ends_a_child_that_sends_nothing_and_a_rerun_completes_the_collection(tmp_path, make_engine, monkeypatch):
    """The steps after the chunks send no progress for minutes on a large corpus: Cancel then ends the child
    after its grace period (a killed writer), and ingesting the folder again completes the collection."""
    monkeypatch.setattr(ingest_process, "CANCEL_GRACE_S", 0.5)
    engine = make_engine()
    pages = sorted(p.name for p in DOCS.glob("*.md"))
    folder = _folder(tmp_path, pages)
    cancel = threading.Event()
    seen: list[tuple[int, int]] = []

    def progress(done: int, total: int, current: str) -> None:
        if done >= 2 and not cancel.is_set():
            cancel.set()
            time.sleep(5)  # the child waits for this answer, silent as in a long step: only the grace ends it

    with pytest.raises(Cancelled):
        ingest_in_process(engine, [folder], "pages", settings=engine.settings.with_(collection="pages"),
                          progress=progress, started=lambda *a: seen.append(a), cancel=cancel)
    with pytest.raises(ProcessLookupError):
        os.kill(seen[0][0], 0)  # ended (and reaped)
    report = engine.ingest([folder], "pages", calibrate=False)
    assert engine.store.info("pages").documents == len(pages) and not report.failed
