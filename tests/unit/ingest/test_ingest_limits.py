"""Ingest limits and bounded work: the per-file chunk limit, the line pre-check, long files
written in batches (with progress inside the file), a failure between batches repaired by the
next run, and what happens to stored chunks of files that turn bad."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

import ragcore.ingest.run as ingest_pipeline
from ragcore.storage.store import Store
from tests.conftest import write_corpus


def _long_text(n_paragraphs: int, topic: str = "ledger") -> str:
    return "\n\n".join(
        f"Paragraph {i} about the {topic}: the clerk records entry {i} in the {topic} and checks the "
        f"running total of item {i} twice before closing the day, as the rules of the office require."
        for i in range(n_paragraphs)
    ) + "\n"


def _consistent(engine, collection: str) -> dict[str, list]:
    by_path = collections.defaultdict(list)
    for r in engine.store.point_refs(collection):
        by_path[r.path].append(r)
    for path, rs in by_path.items():
        assert len({r.doc_hash for r in rs}) == 1, f"{path} has chunks of two versions"
        assert len(rs) == rs[0].doc_chunks, f"{path} is incomplete"
    return by_path


def test_file_over_the_chunk_limit_is_reported_with_the_setting(tmp_path: Path, make_engine) -> None:
    root = write_corpus(tmp_path / "c", {"long.md": _long_text(60), "short.md": "# Short\n\nA short note.\n"})
    engine = make_engine(max_file_chunks=5, chunk_size=60, chunk_overlap=10)
    report = engine.ingest([root], "t", calibrate=False)
    failed = {o.path: o.reason for o in report.failed}
    assert set(failed) == {"long.md"}
    assert "over the limit of 5 per file" in failed["long.md"] and "RAGCORE_MAX_FILE_CHUNKS" in failed["long.md"]
    assert {p for p, _ in engine.documents("t")} == {"short.md"}


def test_many_short_lines_are_refused_before_they_are_built(tmp_path: Path, make_engine) -> None:
    # 1,000,000 one-character lines at full scale; the same shape, scaled down
    root = write_corpus(tmp_path / "c", {"lines.txt": "a\n" * 20_000, "blank.txt": "\n" * 20_000 + "one line\n"})
    engine = make_engine(max_file_chunks=10, chunk_size=100, chunk_overlap=10)
    report = engine.ingest([root], "t", calibrate=False)
    failed = {o.path: o.reason for o in report.failed}
    assert set(failed) == {"lines.txt"}  # blank lines do not count against the limit
    assert "20,000 lines" in failed["lines.txt"] and "RAGCORE_MAX_FILE_CHUNKS" in failed["lines.txt"]


def test_long_file_is_written_in_batches_with_progress(tmp_path: Path, make_engine, monkeypatch) -> None:
    monkeypatch.setattr(ingest_pipeline, "WRITE_BATCH", 8)
    root = write_corpus(tmp_path / "c", {"long.md": _long_text(40)})
    engine = make_engine(chunk_size=40, chunk_overlap=5)
    sizes: list[int] = []
    write = Store.write_chunks
    monkeypatch.setattr(Store, "write_chunks", lambda self, name, chunks, *a, **k: (sizes.append(len(chunks)), write(self, name, chunks, *a, **k))[1])
    calls: list[tuple[int, int, str]] = []
    report = engine.ingest([root], "t", progress=lambda d, t, p: calls.append((d, t, p)))
    n = report.outcomes[0].chunks
    assert n > 24 and max(sizes) == 8 and sum(sizes) == n
    inside = [p for d, t, p in calls if p.startswith("long.md: ")]
    assert inside == [f"long.md: {k} chunks written" for k in range(8, n - n % 8 + 1, 8) if k < n or n % 8 == 0][: len(inside)]
    assert len(inside) >= 3  # progress is heard during the file, not only between files


def test_failure_between_batches_of_one_file_is_repaired(tmp_path: Path, make_engine, monkeypatch) -> None:
    """A crash after some batches of a changed long file: the old version must survive intact
    next to the partial new one, and the next run must finish the job reusing written vectors.
    (An exception stands in for the crash here; tests/unit/ingest/test_ingest_pipeline.py does a real SIGKILL.)"""
    monkeypatch.setattr(ingest_pipeline, "WRITE_BATCH", 8)
    root = write_corpus(tmp_path / "c", {"long.md": _long_text(30, "ledger"), "b.md": "# B\n\nAnother note.\n"})
    engine = make_engine(chunk_size=40, chunk_overlap=5)
    engine.ingest([root], "t", calibrate=False)
    old = _consistent(engine, "t")["long.md"]
    (root / "long.md").write_text(_long_text(30, "archive"), encoding="utf-8")

    write, calls = Store.write_chunks, []

    def dies_on_third_batch(self, *a, **k):
        calls.append(1)
        if len(calls) == 3:
            raise OSError("disk gone")
        return write(self, *a, **k)

    monkeypatch.setattr(Store, "write_chunks", dies_on_third_batch)
    with pytest.raises(OSError):
        engine.ingest([root], "t", calibrate=False)
    monkeypatch.setattr(Store, "write_chunks", write)
    refs = [r for r in engine.store.point_refs("t") if r.path == "long.md"]
    assert {r.id for r in old} <= {r.id for r in refs}  # the old version was not touched
    assert len({r.doc_hash for r in refs}) == 2  # and part of the new one is there

    report = engine.ingest([root], "t", calibrate=False)
    assert report.count("failed") == 0
    assert report.chunks_embedded <= report.chunks_written - 16  # two batches' vectors reused
    assert len({r.doc_hash for r in _consistent(engine, "t")["long.md"]}) == 1


def test_a_file_that_turns_into_an_outside_link_loses_its_old_chunks(tmp_path: Path, make_engine) -> None:
    """A read error keeps stored chunks (bad input loses nothing); a link out of the corpus does
    not: what it points at must not stay indexed either."""
    outside = write_corpus(tmp_path / "o", {"secret.md": "# Secret\n\nThe vault code is 4242.\n"})
    root = write_corpus(tmp_path / "c", {"a.md": "# A\n\nAlpha text.\n", "gone.md": "# G\n\nGamma text.\n"})
    engine = make_engine()
    engine.ingest([root], "t", calibrate=False)
    (root / "gone.md").unlink()
    (root / "gone.md").symlink_to(outside / "secret.md")
    report = engine.ingest([root], "t", calibrate=False)
    assert [o.status for o in report.outcomes if o.path == "gone.md"] == ["failed", "removed"]
    assert {p for p, _ in engine.documents("t")} == {"a.md"}


def test_file_that_vanishes_before_it_is_read(tmp_path: Path, make_engine) -> None:
    root = write_corpus(tmp_path / "c", {"a.md": "# A\n\nAlpha text.\n", "b.md": "# B\n\nBeta text.\n"})
    engine = make_engine()

    def progress(done: int, total: int, path: str) -> None:
        if path == "b.md":
            (root / "b.md").unlink()

    report = engine.ingest([root], "t", progress=progress, calibrate=False)
    assert {o.path: o.reason for o in report.failed} == {"b.md": "file not found"}
    assert report.count("added") == 1
