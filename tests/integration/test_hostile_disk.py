"""A full disk (issue 26, case 2): ingest checks free space before writing and before each
batch, and stops with a message naming the folder, the space needed and the space left,
instead of dying of SIGBUS in Qdrant Edge's mapped files. On real small tmpfs mounts (the
test needs root to mount one; it is skipped, with the reason, where it cannot)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Iterator

import pytest

from ragcore.ingest.space import MB, NoSpaceError, as_space_error, free_bytes
from tests.conftest import DOCS, REPO, write_corpus


def _mount(path: Path, size_mb: int) -> None:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a {size_mb} MB tmpfs here (needs root and mount rights): "
                    f"{done.stderr.strip() or done.returncode}")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[callable]:
    mounted: list[Path] = []

    def make(size_mb: int) -> Path:
        where = tmp_path / f"disk{len(mounted)}"
        _mount(where, size_mb)
        mounted.append(where)
        return where

    yield make
    for where in mounted:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def _fill(disk: Path, leave_mb: float) -> Path:
    """A file that leaves ``leave_mb`` free on ``disk`` (tmpfs allocates what is written)."""
    filler = disk / f"filler-{uuid.uuid4().hex[:6]}"
    size = free_bytes(disk) - int(leave_mb * MB)
    with open(filler, "wb") as fh:
        block = b"\0" * MB
        while size > 0:
            fh.write(block[: min(size, MB)])
            size -= MB
    return filler


def _corpus(root: Path, n: int) -> Path:
    return write_corpus(root, {
        f"doc{i:03d}.md": f"# Topic {i}\n\n" + " ".join(f"Sentence {j} about subject {i} and its settings." for j in range(60))
        for i in range(n)
    })


def _assert_space_message(text: str, folder: Path) -> None:
    assert "Not enough free space in" in text and str(folder) in text, text
    assert re.search(r"needs about \d+\.\d MB and \d+\.\d MB (is|are) left", text), text


def test_the_cli_refuses_before_writing_instead_of_dying(small_disk, tmp_path: Path) -> None:
    """Before: exit 135 (SIGBUS) with no message once the guide's 18 files filled 20 MB."""
    disk = small_disk(20)
    data = disk / "data"
    env = {**os.environ, "RAGCORE_DATA_DIR": str(data), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "ragcore.cli.main", "ingest", str(DOCS), "-c", "guide", "-q"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 1, (done.returncode, done.stderr[-2000:])
    _assert_space_message(done.stderr, data)
    assert not (data / "qdrant-edge" / "guide").exists()  # nothing was written


def test_a_disk_that_fills_up_mid_ingest_stops_at_a_batch(small_disk, make_engine, tmp_path: Path) -> None:
    disk = small_disk(100)  # room for two collections (a 32 MB Qdrant Edge file each) and the check's margin
    engine = make_engine(data_dir=disk / "data")
    engine.ingest([_corpus(tmp_path / "first", 2)], "kept", calibrate=False)
    before = engine.ask("What is subject 1 about?", collection="kept")
    fillers: list[Path] = []

    def progress(done: int, total: int, current: str) -> None:
        if current and not fillers:  # another program fills the disk while files are read
            fillers.append(_fill(disk, leave_mb=8))

    with pytest.raises(NoSpaceError) as info:
        engine.ingest([_corpus(tmp_path / "second", 20)], "growing", progress=progress, calibrate=False)
    _assert_space_message(str(info.value), disk / "data")

    fillers[0].unlink()
    after = engine.ask("What is subject 1 about?", collection="kept")
    assert after.status == before.status and after.answer == before.answer  # the old collection is intact
    report = engine.ingest([_corpus(tmp_path / "second", 20)], "growing", calibrate=False)
    assert report.summary()["failed"] == 0 and engine.store.info("growing").documents == 20


def test_enospc_becomes_the_message(small_disk) -> None:
    disk = small_disk(4)
    with pytest.raises(OSError) as full:
        with open(disk / "big", "wb") as fh:
            for _ in range(8):
                fh.write(b"\0" * MB)
                fh.flush()
    err = as_space_error(full.value, disk)
    assert err is not None
    _assert_space_message(str(err), disk)
    assert as_space_error(ValueError("other"), disk) is None
