"""Damage in one collection's files (issue 39, items 3 and 4): a truncated write-ahead log, a
missing ``segment.json``, flipped bytes in the stored vectors or payload, flipped bytes in a query
snapshot. Before: `ragcore collections` exited 1 listing none of the healthy collections,
/api/collections, /v1/models and chat on a healthy collection answered 500, flipped vector bytes
gave cosines of 2.3e38 with `status ok` and `--repair` copied them into the snapshot, and flipped
payload bytes gave a raw Qdrant message with no way out. Now the damaged collection is listed with
its state and the command that recovers it, the others keep working, and damage is refused, never
propagated. Real Qdrant Edge in a temp folder, the real ONNX model, files damaged for real."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import httpx
import numpy as np
import pytest

from ragcore.cli.main import main
from ragcore.settings.service import ServiceSettings
from tests.conftest import write_corpus
from tests.integration.service.conftest import serve_in_thread

OK = {"a.md": "# Sessions\n\nSessions are stored in the database by default. They expire after two weeks.\n"}
BROKEN = {"b.md": "# Cache\n\nCaching keeps pages in memory for a while. The cache backend is configurable.\n"}


@pytest.fixture
def data(tmp_path: Path, make_engine):
    """Collections "healthy" (with its snapshot), "nosnap" (its snapshot removed: read from the store)
    and "broken" (to damage), written by one engine that is then closed like a finished process."""
    engine = make_engine(data_dir=tmp_path / "data")
    engine.ingest([write_corpus(tmp_path / "ok", OK)], "healthy", calibrate=False)
    engine.ingest([write_corpus(tmp_path / "ok2", OK)], "nosnap", calibrate=False)
    engine.ingest([write_corpus(tmp_path / "b", BROKEN)], "broken", calibrate=False)
    engine.close()
    shutil.rmtree(tmp_path / "data" / "snapshots" / "nosnap")
    return engine, tmp_path


def _segment(tmp: Path, name: str) -> Path:
    (seg,) = (tmp / "data" / "qdrant-edge" / name / "shard" / "segments").iterdir()
    return seg


def _flip(path: Path, offsets) -> None:
    with open(path, "r+b") as f:  # in place: the file keeps its inode, as on a failing disk
        for off in offsets:
            f.seek(off)
            b = f.read(1)
            f.seek(off)
            f.write(bytes([b[0] ^ 0x40]))


def _cli(capsys, tmp: Path, *argv: str) -> tuple[int, str, str]:
    code = main(["--data-dir", str(tmp / "data"), *argv])
    got = capsys.readouterr()
    return code, got.out, got.err


def _drop_snapshot(tmp: Path, name: str) -> None:
    shutil.rmtree(tmp / "data" / "snapshots" / name)


DAMAGE = {
    "missing segment.json": lambda tmp: (_segment(tmp, "broken") / "segment.json").unlink(),
    "truncated write-ahead log": lambda tmp: (tmp / "data" / "qdrant-edge" / "broken" / "shard" / "wal" / "open-1")
    .open("r+b").truncate(0),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_one_damaged_collection_breaks_no_other(data, capsys, damage: str) -> None:
    engine, tmp = data
    DAMAGE[damage](tmp)
    _drop_snapshot(tmp, "broken")  # the damage is met when the store is read (no snapshot answers for it)

    code, out, _ = _cli(capsys, tmp, "collections")
    assert code == 0, out
    assert "healthy" in out and "nosnap" in out
    assert "'broken' cannot be read: its files in the store are damaged" in out
    assert f"ragcore ingest {tmp / 'b'} --collection broken --rebuild" in out
    code, out, _ = _cli(capsys, tmp, "collections", "--json")
    listed = {c["name"]: c for c in json.loads(out)}
    assert code == 0 and listed["healthy"]["state"] == "ready" and listed["nosnap"]["state"] == "ready"
    assert listed["broken"]["state"] == "damaged" and "--rebuild" in listed["broken"]["problem"]
    assert listed["nosnap"]["snapshot"] == "missing" and listed["healthy"]["snapshot"] == "ok"

    for name in ("healthy", "nosnap"):
        assert "database" in engine.ask("Where are sessions stored?", collection=name).answer
    broken = engine.ask("What does caching keep?", collection="broken")
    assert broken.status == "error" and "--rebuild" in broken.error_message and str(tmp) not in broken.error_message.split(
        "Recover it with")[0]

    served = serve_in_thread(engine, ServiceSettings())
    try:
        with httpx.Client(base_url=served.url, timeout=120) as http:
            got = http.get("/api/collections")
            assert got.status_code == 200 and {c["name"] for c in got.json()} >= {"healthy", "nosnap", "broken"}
            listed = {c["name"]: c for c in got.json()}  # the damaged one with its state and what recovers it
            assert listed["broken"]["state"] == "damaged" and "--rebuild" in listed["broken"]["problem"]
            assert listed["healthy"]["state"] == "ready" and listed["healthy"]["problem"] is None
            assert http.get("/v1/models").status_code == 200
            chat = http.post("/v1/chat/completions", json={"model": "nosnap", "messages": [
                {"role": "user", "content": "Where are sessions stored?"}]})
            assert chat.status_code == 200 and "database" in chat.json()["choices"][0]["message"]["content"]
    finally:
        served.stop()

    code, _, err = _cli(capsys, tmp, "collections", "--repair")
    assert code == 0 and "could not repair broken" in err and "rewrote the query snapshot of nosnap" in err
    engine.ingest([tmp / "b"], "broken", calibrate=False, rebuild=True)  # the command it names recovers it
    assert "memory" in engine.ask("What does caching keep?", collection="broken").answer


def test_flipped_vector_bytes_are_refused_not_scored_nor_copied(data, capsys) -> None:
    """Before: a dense cosine of 2.3e38 and `status ok`; `--repair` published the damaged vectors."""
    engine, tmp = data
    manifest = (tmp / "data" / "snapshots" / "broken" / "manifest.json").read_text()
    vectors = _segment(tmp, "broken") / "vector_storage-dense" / "vectors" / "chunk_0.mmap"
    _flip(vectors, range(3, 1536, 4))  # the high byte of every float of the first vector
    with engine.store.session():
        engine.store.client.bump("broken")  # the snapshot no longer matches the store (as after a write)

    answer = engine.ask("What does caching keep?", collection="broken")
    assert answer.status == "error" and "stored vectors are not finite or not unit length" in answer.error_message
    code, _, err = _cli(capsys, tmp, "collections", "--repair")
    assert code == 0 and "could not repair broken" in err and "--rebuild" in err
    assert (tmp / "data" / "snapshots" / "broken" / "manifest.json").read_text() == manifest  # not propagated
    code, out, _ = _cli(capsys, tmp, "collections", "--json")
    assert {c["name"]: c for c in json.loads(out)}["broken"]["snapshot"] == "stale"


def test_flipped_payload_bytes_name_the_way_out(data, capsys) -> None:
    """Before: ask, `--repair` and ingest all failed with "Failed to decompress LZ4 value" and nothing
    suggested `--rebuild`."""
    engine, tmp = data
    page = _segment(tmp, "broken") / "payload_storage" / "page_0.dat"
    raw = page.read_bytes()[:4096]
    _flip(page, [i for i in range(4096) if raw[i]][:400:3])
    _drop_snapshot(tmp, "broken")

    answer = engine.ask("What does caching keep?", collection="broken")
    assert answer.status == "error" and "damaged" in answer.error_message and "--rebuild" in answer.error_message
    assert "LZ4" not in answer.error_message.split("(")[0]
    code, _, err = _cli(capsys, tmp, "collections", "--repair")
    assert code == 0 and "could not repair broken" in err and "--rebuild" in err
    code, _, err = _cli(capsys, tmp, "ingest", str(tmp / "b"), "-c", "broken", "--no-calibrate", "-q")
    assert code == 1 and "--rebuild" in err
    code, _, err = _cli(capsys, tmp, "ingest", str(tmp / "b"), "-c", "broken", "--no-calibrate", "-q", "--rebuild")
    assert code == 0, err
    assert "memory" in engine.ask("What does caching keep?", collection="broken").answer


def test_a_damaged_snapshot_is_shown_and_rewritten(data, capsys) -> None:
    """Flipped bytes in a snapshot's vectors: its checksum and the vectors' norms fail, questions read
    the store, `ragcore collections` says "damaged" and `--repair` rewrites it."""
    engine, tmp = data
    (version,) = [p for p in (tmp / "data" / "snapshots" / "healthy").iterdir() if p.is_dir()]
    dense = np.load(version / "dense.npy")
    header = (version / "dense.npy").stat().st_size - dense.nbytes
    _flip(version / "dense.npy", [header + 3])  # the exponent of the first float
    code, out, _ = _cli(capsys, tmp, "collections", "--json")
    assert code == 0 and {c["name"]: c for c in json.loads(out)}["healthy"]["snapshot"] == "damaged"
    _, text, _ = _cli(capsys, tmp, "collections")
    assert "query snapshot damaged" in text
    answer = engine.ask("Where are sessions stored?", collection="healthy")
    assert answer.status == "ok" and max(abs(e.dense_score or 0) for e in answer.evidence) <= 1.0001
    code, _, err = _cli(capsys, tmp, "collections", "--repair")
    assert "rewrote the query snapshot of healthy" in err
    code, out, _ = _cli(capsys, tmp, "collections", "--json")
    assert {c["name"]: c for c in json.loads(out)}["healthy"]["snapshot"] == "ok"
