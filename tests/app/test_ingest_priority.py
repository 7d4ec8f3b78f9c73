"""An ingest the app starts runs below the app's priority (issue 42, item 5): in a child process at a higher
niceness, its progress relayed into the job, its Cancel honoured, its result answerable in the app's process.

Real parts: the Runtime the app builds, embedded Qdrant in a temp folder, the real ONNX model (the child
loads its own). Not timed: ``ragcore bench browser-ingest`` measures what the priority buys."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from ragcore.engine.engine import Engine
from ragcore.settings.config import RagcoreSettings
from tests.conftest import DOCS
from ui.runtime import Runtime
from ui.state import start_folder_ingest

pytestmark = pytest.mark.slow
PAGES = ("05-scores-top-k-and-threshold.md", "06-citations-and-the-answer-contract.md", "02-ingesting-documents.md")


def _runtime(tmp_path: Path, encoder) -> Runtime:
    settings = RagcoreSettings(data_dir=tmp_path / "data")
    return Runtime(engine=Engine(settings, encoder=encoder), settings=settings)


def _folder(tmp_path: Path, pages=PAGES) -> Path:
    folder = tmp_path / "pages"
    folder.mkdir()
    for rel in pages:
        shutil.copy(DOCS / rel, folder / rel)
    return folder


def _wait(job, timeout_s: float = 600) -> None:
    deadline = time.monotonic() + timeout_s
    while job.running and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not job.running, "the ingest did not end"


def test_an_app_started_ingest_runs_in_a_lower_priority_process_and_its_result_is_answerable(tmp_path, encoder):
    rt = _runtime(tmp_path, encoder)
    try:
        folder = _folder(tmp_path)
        s = rt.settings.with_(collection="pages")
        job = start_folder_ingest(rt, folder, "pages", s)
        _wait(job)
        assert job.error is None and job.report is not None, job.error
        pid, nice = job.worker
        assert pid != os.getpid()
        assert nice > os.getpriority(os.PRIO_PROCESS, 0), (nice, "the ingest ran at the app's own priority")
        # the progress the page shows came through: every file, every chunk, the named steps
        assert job.done == job.total == len(PAGES) and job.chunks_written == job.report.chunks_written > 0
        assert job.phase == "calibrating the abstain bar"
        # reported = wall time: the report covers the whole job, the child's start included
        assert job.report.seconds <= job.elapsed + 0.5 and job.report.seconds >= 0.8 * job.elapsed
        # the app's own engine reads what the child wrote
        info = rt.info("pages")
        assert info is not None and info.documents == len(PAGES)
        found = rt.engine.retrieve("What does the threshold apply to?", collection="pages")
        assert any(c.chunk.path == PAGES[0] for c in found.kept)
    finally:
        rt.engine.close()


def test_cancel_stops_the_child_and_keeps_what_was_written(tmp_path, encoder):
    rt = _runtime(tmp_path, encoder)
    try:
        pages = sorted(p.name for p in DOCS.glob("*.md"))
        folder = _folder(tmp_path, pages)
        job = start_folder_ingest(rt, folder, "pages", rt.settings.with_(collection="pages"))
        job.cancel()  # heard at the child's first progress message
        _wait(job)
        assert job.cancelled and job.report is None and job.error is None, job.error
        assert job.worker is not None and job.worker[0] != os.getpid()
        assert job.kept is not None and job.kept[0] < len(pages)
        assert "cancelled after" in job.cancel_summary()
    finally:
        rt.engine.close()
