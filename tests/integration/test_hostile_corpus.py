"""A hostile corpus, built at run time: 35+ kinds of bad or odd input next to good files.

One real ingest (ONNX model, embedded Qdrant in tmp) must finish in bounded time, report
every bad file with its reason, index nothing from outside the corpus and keep the good
files answerable. ``bench/scripts/hostile_ingest.py`` builds the same corpus at full size
and measures peak memory.
"""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from bench.support.hostile_corpus import (  # noqa: F401  (the corpus, shared with the benchmark)
    OUTSIDE_MARK, PASSWD_MARK, ROOT_USER, Corpus, Sizes, build_hostile_corpus, deep_folders,
)


def _ingest_with_deadline(engine, corpus: Corpus, seconds: float):
    """Run the ingest in a thread: a regression that hangs fails the test instead of CI."""
    result: dict = {}

    def progress(done: int, total: int, path: str) -> None:
        if path == "vanishing.md":
            (corpus.root / "vanishing.md").unlink()  # gone between discovery and read

    def run() -> None:
        try:
            result["report"] = engine.ingest([corpus.root], "h", progress=progress, calibrate=False)
        except BaseException as exc:  # surfaced below
            result["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"ingest still running after {seconds} s: it hangs"
    if "error" in result:
        raise result["error"]
    return result["report"]


@pytest.mark.slow
def test_hostile_corpus(tmp_path: Path, make_engine) -> None:
    s = Sizes()
    corpus = build_hostile_corpus(tmp_path, s)
    with socket.socket(socket.AF_UNIX) as sock, \
            deep_folders(corpus.root, s.folder_depth, {"bottom.md": "The cable ship carries grapnels to mend cables.\n"}) as deep:  # fmt: skip
        sock.bind(str(corpus.root / "sock.md"))
        corpus.bad["sock.md"] = "not a regular file (a socket)"
        corpus.good[deep + "bottom.md"] = "What does the cable ship carry to mend cables?"
        assert len(corpus.bad) + len(corpus.good) + len(corpus.ignored) >= 45
        engine = make_engine(max_file_bytes=s.max_file_bytes, max_file_chunks=s.max_file_chunks)
        report = _ingest_with_deadline(engine, corpus, seconds=300)

    failed = {o.path: o.reason for o in report.outcomes if o.status == "failed"}
    for rel, reason in corpus.bad.items():
        assert rel in failed, f"{rel!r} not reported"
        assert reason in (failed[rel] or ""), f"{rel!r}: {failed[rel]!r} does not say {reason!r}"
    assert set(failed) == set(corpus.bad), "files reported failed that should have been taken"
    added = {o.path for o in report.outcomes if o.status == "added"}
    assert added == set(corpus.good)
    assert not corpus.ignored & {o.path for o in report.outcomes}

    stored = dict(engine.documents("h"))
    assert set(stored) == set(corpus.good)
    for rel in stored:
        for chunk in engine.document_chunks(rel, "h"):
            assert PASSWD_MARK not in chunk.text and OUTSIDE_MARK not in chunk.text
    for rel, question in corpus.good.items():
        found = [c.chunk.path for c in engine.retrieve(question, collection="h").kept[:5]]
        assert rel in found or (rel == "inside.md" and "good.md" in found), f"{question!r} → {found}"


@pytest.mark.skipif(ROOT_USER, reason="running as root: file permissions do not stop root from reading")
def test_unreadable_file_and_folder_are_reported_and_keep_their_chunks(tmp_path: Path, make_engine) -> None:
    c = Corpus(root=tmp_path / "c")
    c.write("a.md", "# A\n\nAlpha text about the alpha topic.\n")
    c.write("locked.md", "# L\n\nLocked text about the locked topic.\n")
    c.write("sub/b.md", "# B\n\nBeta text about the beta topic.\n")
    engine = make_engine()
    engine.ingest([c.root], "u", calibrate=False)
    (c.root / "locked.md").chmod(0)
    (c.root / "sub").chmod(0)
    try:
        report = engine.ingest([c.root], "u", calibrate=False)
    finally:
        (c.root / "sub").chmod(0o700)
        (c.root / "locked.md").chmod(0o600)
    assert {o.path: o.reason for o in report.failed} == {
        "locked.md": "permission denied", "sub": "folder could not be read: permission denied"}
    assert report.count("removed") == 0  # bad input loses nothing
    assert {p for p, _ in engine.documents("u")} == {"a.md", "locked.md", "sub/b.md"}
