"""qdrant-client's local mode (``RAGCORE_EMBEDDED_ENGINE=local``; the default is Qdrant Edge): its SQLite files in write-ahead-log mode (ragcore/storage/local_storage.py): collections
are written with a log, a write whose frames are still only in the log changes the collection's
stamp (so a stale snapshot is noticed), and closing the store after a publish does not (so the next
reader does not rebuild). Real embedded Qdrant in temp folders, the real ONNX model."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from ragcore.storage.local_storage import collection_stamp
from ragcore.storage.snapshot import Stamp, file_stamp
from tests.conftest import write_corpus

FILES = {
    "garden/roses.md": "# Roses\n\n## Pruning roses\n\nPrune roses in late winter, just before the buds swell.\n",
    "kitchen/bread.md": "# Bread\n\n## Proving dough\n\nLet the dough prove for two hours in a warm place until doubled.\n",
}


def _journal(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()


def test_every_embedded_collection_is_written_with_a_log(tmp_path: Path, make_engine) -> None:
    data = tmp_path / "data"
    engine = make_engine(data_dir=data, embedded_engine="local")
    engine.ingest([write_corpus(tmp_path / "corpus", FILES)], "g", calibrate=False)
    engine.close()
    files = sorted((data / "qdrant" / "collection").glob("*/storage.sqlite"))
    assert len(files) >= 2  # the collection and ragcore's metadata collection at least
    assert {f.parent.name: _journal(f) for f in files} == {f.parent.name: "wal" for f in files}
    assert not list((data / "qdrant" / "collection").glob("*/storage.sqlite-wal"))  # emptied and removed at close


def test_a_write_still_in_the_log_changes_the_stamp_and_a_published_one_does_not(tmp_path: Path, make_engine) -> None:
    data = tmp_path / "data"
    engine = make_engine(data_dir=data, embedded_engine="local")
    engine.ingest([write_corpus(tmp_path / "corpus", FILES)], "g", calibrate=False)
    engine.close()
    store = engine.store
    f = data / "qdrant" / "collection" / "g" / "storage.sqlite"
    published = store.snapshots.manifest("g").stamp
    assert collection_stamp(f) == published  # closing after the publish left the file as stamped
    with pytest.raises(KeyboardInterrupt), store.session():  # as a killed writer: nothing republished
        store.delete_points("g", [r.id for r in store.point_refs("g") if r.path == "kitchen/bread.md"])
        assert file_stamp(f) == Stamp(published.ino, published.size, published.mtime_ns)  # the file itself: untouched
        assert collection_stamp(f) != published  # the log holds the deletion
        raise KeyboardInterrupt
    assert collection_stamp(f) != published
    answer = make_engine(data_dir=data, embedded_engine="local").ask("How long does the dough prove?", collection="g")
    assert all(c.chunk.path != "kitchen/bread.md" for c in answer.candidates)  # the stale snapshot was not used


def test_a_log_counts_only_while_it_holds_frames(tmp_path: Path) -> None:
    f = tmp_path / "storage.sqlite"
    assert collection_stamp(f) is None
    f.write_bytes(b"x" * 10)
    alone = collection_stamp(f)
    assert alone == file_stamp(f)
    log = tmp_path / "storage.sqlite-wal"
    log.write_bytes(b"")
    assert collection_stamp(f) == alone  # emptied by a checkpoint
    log.write_bytes(b"frame")
    assert collection_stamp(f) != alone
    log.unlink()
    assert collection_stamp(f) == alone  # removed when the last connection closed
