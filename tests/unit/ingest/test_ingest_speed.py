"""Ingest keeps the model busy: files are read and chunked while earlier chunks are embedded,
the read-ahead is bounded, progress counts only files whose chunks are written, a failure or a
cancel in any stage stops every stage, and the model batches by length without changing a
vector. Behaviour only: no timing is asserted (the machine is shared)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest

import ragcore.ingest.run as ingest_pipeline
from ragcore.encoders.minilm import MAX_TOKENS
from ragcore.storage.store import Store
from tests.conftest import write_corpus


def _small_files(n: int) -> dict[str, str]:
    return {f"f{i:02d}.md": f"# Note {i}\n\nThe item {i} is stored in bin {i} of the east depot.\n" for i in range(n)}


def _ingest_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("ragcore-ingest-")]


@pytest.mark.slow
def test_files_are_read_while_the_model_works_and_read_ahead_is_bounded(tmp_path: Path, make_engine, encoder, monkeypatch) -> None:
    """The first model call waits until the reader stops on its own: by then it has read more
    than one batch (reading overlaps embedding) and far from all files (memory is bounded)."""
    monkeypatch.setattr(ingest_pipeline, "WRITE_BATCH", 2)
    monkeypatch.setattr(ingest_pipeline, "PIPELINE_AHEAD", 2)
    root = write_corpus(tmp_path / "c", _small_files(40))
    engine = make_engine()
    read: list[str] = []
    seen_by_first_call: list[int] = []
    real = encoder.encode_uncached

    def first_call_waits_for_the_reader(texts):
        if not seen_by_first_call:
            last, start = -1, time.monotonic()
            still_since = start
            while time.monotonic() - still_since < 1.0 and time.monotonic() - start < 30:
                if len(read) != last:
                    last, still_since = len(read), time.monotonic()
                time.sleep(0.05)
            seen_by_first_call.append(len(read))
        return real(texts)

    monkeypatch.setattr(encoder, "encode_uncached", first_call_waits_for_the_reader)
    report = engine.ingest([root], "t", calibrate=False,
                           progress=lambda d, t, p: read.append(p) if p.endswith(".md") and ":" not in p else None)
    assert report.count("added") == 40 and report.chunks_written == 40
    # one chunk per file, batches of 2: a strictly sequential ingest would have read 2 files
    assert 4 <= seen_by_first_call[0] <= 16, seen_by_first_call


def test_progress_counts_only_written_files_in_order(tmp_path: Path, make_engine, monkeypatch) -> None:
    monkeypatch.setattr(ingest_pipeline, "WRITE_BATCH", 4)
    files = {**_small_files(6), "long.md": "\n\n".join(f"## Part {i}\n\n" + f"word{i} " * 60 for i in range(6))}
    root = write_corpus(tmp_path / "c", files)
    engine = make_engine(chunk_size=40, chunk_overlap=5)
    written: dict[str, int] = {}
    write = Store.write_chunks

    def recording_write(self, name, chunks, *a, **k):
        write(self, name, chunks, *a, **k)
        for c in chunks:  # recorded after the write returned: these chunks are stored
            written[c.path] = written.get(c.path, 0) + 1

    monkeypatch.setattr(Store, "write_chunks", recording_write)
    calls: list[tuple[int, int, str, dict[str, int]]] = []
    report = engine.ingest([root], "t", calibrate=False, progress=lambda d, t, p: calls.append((d, t, p, dict(written))))
    counts = {o.path: o.chunks for o in report.outcomes}
    order = sorted(counts)
    dones = [d for d, _, _, _ in calls]
    assert dones == sorted(dones) and dones[-1] == len(order) == calls[-1][1]
    for done, _, _, snapshot in calls:
        for path in order[:done]:  # every file counted as done had all its chunks written
            assert snapshot.get(path) == counts[path], (done, path, snapshot)
    assert any(p.startswith("long.md: ") for _, _, p, _ in calls)  # progress inside a long file


def test_a_write_failure_stops_every_stage_and_is_raised(tmp_path: Path, make_engine, monkeypatch) -> None:
    monkeypatch.setattr(ingest_pipeline, "WRITE_BATCH", 2)
    root = write_corpus(tmp_path / "c", _small_files(20))
    engine = make_engine()
    write, calls = Store.write_chunks, []

    def fails_on_second(self, *a, **k):
        calls.append(1)
        if len(calls) == 2:
            raise OSError("disk gone")
        return write(self, *a, **k)

    monkeypatch.setattr(Store, "write_chunks", fails_on_second)
    with pytest.raises(OSError, match="disk gone"):
        engine.ingest([root], "t", calibrate=False)
    assert _ingest_threads() == []  # nothing keeps writing behind the caller's back
    assert len(calls) == 2
    monkeypatch.setattr(Store, "write_chunks", write)
    assert engine.ingest([root], "t", calibrate=False).count("failed") == 0
    assert engine.store.count("t") == 20


class _Cancel(Exception):
    pass


def test_cancel_from_progress_stops_after_written_batches_and_rerun_completes(tmp_path: Path, make_engine, monkeypatch) -> None:
    monkeypatch.setattr(ingest_pipeline, "WRITE_BATCH", 2)
    root = write_corpus(tmp_path / "c", _small_files(20))
    engine = make_engine()

    def cancel_once_something_is_written(done: int, total: int, current: str) -> None:
        if done >= 2:
            raise _Cancel()

    with pytest.raises(_Cancel):
        engine.ingest([root], "t", calibrate=False, progress=cancel_once_something_is_written)
    assert _ingest_threads() == []
    stored = engine.store.count("t")
    assert 2 <= stored < 20
    report = engine.ingest([root], "t", calibrate=False)
    assert report.count("unchanged") == stored and report.count("added") == 20 - stored
    assert engine.store.count("t") == 20


def test_length_batches_keep_every_vector(encoder) -> None:
    texts = ["short", "a somewhat longer sentence about depots and bins", "word " * 400, "x", "mid " * 60] * 3
    together = encoder.encode_uncached(texts)
    alone = np.vstack([encoder.encode_uncached([t]) for t in texts])
    assert np.allclose(together, alone, atol=1e-4)
    counts = encoder.count_tokens(texts)
    assert max(counts) == MAX_TOKENS and counts[0] == 3  # [CLS] short [SEP]; long texts truncated


def test_batches_pack_short_texts_and_cap_tokens(encoder) -> None:
    lengths = [MAX_TOKENS] * 20 + [6] * 300 + [100] * 10
    batches = encoder._batches(lengths)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    budget = encoder.batch_size * MAX_TOKENS
    for b in batches:
        width = max(lengths[i] for i in b)
        assert len(b) * width <= budget or len(b) == 1
        assert [lengths[i] for i in b] == sorted(lengths[i] for i in b)
    assert len(batches) < 20 + 300 // encoder.batch_size  # short texts share runs
