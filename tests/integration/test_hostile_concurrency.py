"""Processes sharing one embedded store (issue 39, item 5). Before: while another process held the
store, a collection without a query snapshot answered "empty or does not exist" (274 of 281 asks),
and a writer beside readers that kept the store open waited its 15 s and failed. Now a reader
waits (bounded) for the store and answers, and readers let a waiting writer in. The long run of
2 servers + CLI readers + a writer is `ragcore bench stress` (bench/results/stress-store.md).
Real Qdrant Edge in a temp folder, real processes, the real ONNX model."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragcore.storage import locking
from tests.conftest import REPO, write_corpus

FILES = {"a.md": "# Backups\n\nThe backup runs every night at two o'clock and keeps thirty days.\n"}

HOLDER = """
import sys, time
from ragcore.settings.config import RagcoreSettings
from ragcore.storage.store import Store
st = Store(RagcoreSettings(data_dir=sys.argv[1]))
with st.session(write=False):  # another process using the store (here: reading it)
    st.count("other")
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
"""

READERS = """
import sys, threading, time
from ragcore.settings.config import RagcoreSettings
from ragcore.storage.store import Store
st = Store(RagcoreSettings(data_dir=sys.argv[1]))
end = time.monotonic() + float(sys.argv[2])
def read():  # reads of a collection without a snapshot, overlapping: this process keeps the store open
    while time.monotonic() < end:
        st.count("nosnap")
threads = [threading.Thread(target=read) for _ in range(3)]
for t in threads: t.start()
print("reading", flush=True)
for t in threads: t.join()
"""


@pytest.fixture
def data(tmp_path: Path, make_engine) -> Path:
    engine = make_engine(data_dir=tmp_path / "data")
    root = write_corpus(tmp_path / "c", FILES)
    engine.ingest([root], "nosnap", calibrate=False)
    engine.ingest([root], "other", calibrate=False)
    engine.close()
    shutil.rmtree(tmp_path / "data" / "snapshots" / "nosnap")  # read from the store by every question
    return tmp_path / "data"


def _start(script: str, data: Path, seconds: float, ready: str) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", script, str(data), str(seconds)], stdout=subprocess.PIPE,
                            text=True, cwd=REPO)
    assert proc.stdout is not None and proc.stdout.readline().strip() == ready
    return proc


def test_a_reader_waits_for_the_store_instead_of_calling_the_collection_empty(data: Path, make_engine) -> None:
    holder = _start(HOLDER, data, 3, "holding")
    try:
        t0 = time.monotonic()
        answer = make_engine(data_dir=data).ask("When does the backup run?", collection="nosnap")
        waited = time.monotonic() - t0
    finally:
        holder.wait(timeout=120)
    assert answer.status != "error", answer.error_message
    assert "two o'clock" in answer.answer and waited > 0.5  # it waited for the other process, then answered


def test_a_writer_is_not_starved_by_readers_that_keep_the_store_open(data: Path, make_engine,
                                                                     tmp_path: Path) -> None:
    readers = _start(READERS, data, 120, "reading")
    try:
        time.sleep(1.0)  # the readers' sessions overlap: without yielding, the store never closes
        assert locking.LOCK_WAIT_S == 15.0
        writer = make_engine(data_dir=data)
        root = write_corpus(tmp_path / "w", {"b.md": "# Restores\n\nA restore takes about ten minutes.\n"})
        report = writer.ingest([root], "written", calibrate=False)  # waits at most 15 s for the store
        assert report.chunks_written == 1
    finally:
        readers.kill()
        readers.wait(timeout=30)
