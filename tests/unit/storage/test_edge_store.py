"""Qdrant Edge as the embedded store of record (ragcore/storage/edge_client.py, edge_migrate.py): the
client speaks the part of QdrantClient's API the Store uses, writes the payload LlamaIndex's
QdrantVectorStore writes, stamps every write before it happens, lets one process in, and copies a
local-mode folder over once. Real qdrant-edge-py and real local-mode Qdrant in temp folders, the
real ONNX model."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from qdrant_client import models as qm

from ragcore.settings.config import RagcoreSettings
from ragcore.storage.edge_client import EdgeBusy, EdgeClient, collection_names
from ragcore.storage.edge_migrate import MARKER, migration_pending
from ragcore.storage.snapshot import file_stamp
from ragcore.storage.store import Store
from tests.conftest import REPO, write_corpus

FILES = {
    "garden/roses.md": "# Roses\n\n## Pruning roses\n\nPrune roses in late winter, just before the buds swell.\n",
    "kitchen/bread.md": "# Bread\n\n## Proving dough\n\nLet the dough prove for two hours in a warm place until doubled.\n",
}


def _named(client: EdgeClient, name: str = "c") -> None:
    client.create_collection(
        name, vectors_config={"dense": qm.VectorParams(size=3, distance=qm.Distance.COSINE)},
        sparse_vectors_config={"sparse": qm.SparseVectorParams(modifier=qm.Modifier.IDF)})


def _point(i: int, path: str) -> qm.PointStruct:
    return qm.PointStruct(id=f"00000000-0000-0000-0000-{i:012d}",
                          vector={"dense": [1.0, float(i), 0.0], "sparse": qm.SparseVector(indices=[i, 99], values=[1.0, 2.0])},
                          payload={"path": path, "nested": {"section": ["A", "B"]}, "text": "é ✓"})


def test_the_client_round_trips_points_as_qdrant_client_does(tmp_path: Path) -> None:
    client = EdgeClient(tmp_path / "edge")
    try:
        _named(client)
        assert client.collection_exists("c") and not client.collection_exists("d")
        client.upsert("c", [_point(i, f"doc{i % 2}.md") for i in range(1, 8)])
        assert client.count("c").count == 7
        seen, offset, pages = [], None, 0
        while True:  # pages of 3 chain through the offsets, each point once
            batch, offset = client.scroll("c", limit=3, offset=offset, with_payload=["path"], with_vectors=False)
            seen += batch
            pages += 1
            if offset is None:
                break
        assert pages == 3 and len({p.id for p in seen}) == 7
        assert all(set(p.payload) == {"path"} and p.vector is None for p in seen)
        [rec] = client.retrieve("c", [_point(3, "").id, "00000000-0000-0000-0000-999999999999"],
                                with_payload=True, with_vectors=True)
        assert rec.id == _point(3, "").id and rec.payload == {"path": "doc1.md", "nested": {"section": ["A", "B"]}, "text": "é ✓"}
        assert list(rec.vector["sparse"].indices) == [3, 99] and list(rec.vector["sparse"].values) == [1.0, 2.0]
        assert rec.vector["dense"] == pytest.approx([0.3162, 0.9487, 0.0], abs=1e-4)  # cosine: stored normalised
        flt = qm.Filter(must=[qm.FieldCondition(key="path", match=qm.MatchValue(value="doc0.md"))])
        assert len(client.scroll("c", limit=100, scroll_filter=flt)[0]) == 3
        client.delete("c", points_selector=qm.PointIdsList(points=[_point(2, "").id, _point(4, "").id]))
        assert client.count("c").count == 5
        with pytest.raises(NotImplementedError):
            client.scroll("c", scroll_filter=qm.Filter(should=[qm.FieldCondition(key="path", match=qm.MatchValue(value="x"))]))
        with pytest.raises(ValueError, match="not found"):
            client.count("nope")
    finally:
        client.close()


def test_an_unnamed_vector_comes_back_as_a_list_and_collections_are_listed_from_the_folder(tmp_path: Path) -> None:
    root = tmp_path / "edge"
    client = EdgeClient(root)
    try:
        client.create_collection("h", vectors_config=qm.VectorParams(size=2, distance=qm.Distance.DOT))
        client.upsert("h", [qm.PointStruct(id="00000000-0000-0000-0000-000000000001", vector=[0.5, 2.0], payload={"t": 1})])
        [rec] = client.retrieve("h", ["00000000-0000-0000-0000-000000000001"], with_vectors=True)
        assert rec.vector == [0.5, 2.0]
        _named(client, "c")
        (root / "half").mkdir()  # a creation that died before schema.json: not a collection
        assert collection_names(root) == ["c", "h"] == [c.name for c in client.get_collections().collections]
        assert client.delete_collection("h") and collection_names(root) == ["c"] and not (root / "h").exists()
        _named(client, "half")  # created again over the leftover
        assert client.count("half").count == 0
    finally:
        client.close()


def test_every_write_replaces_the_stamp_before_it_happens(tmp_path: Path) -> None:
    client = EdgeClient(tmp_path / "edge")
    try:
        _named(client)
        stamps = [file_stamp(client.stamp_path("c"))]
        client.upsert("c", [_point(1, "a.md")])
        stamps.append(file_stamp(client.stamp_path("c")))
        client.delete("c", points_selector=qm.PointIdsList(points=[_point(1, "a.md").id]))
        stamps.append(file_stamp(client.stamp_path("c")))
        client.count("c")  # reads leave it alone
        assert file_stamp(client.stamp_path("c")) == stamps[-1]
        assert len(set(stamps)) == 3 and None not in stamps
    finally:
        client.close()


HOLD = textwrap.dedent("""
    import sys, time
    from ragcore.storage.edge_client import EdgeClient
    c = EdgeClient(sys.argv[1]); print("holding", flush=True); time.sleep(30)
""")


def test_one_process_at_a_time(tmp_path: Path) -> None:
    root = tmp_path / "edge"
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(root)], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert p.stdout is not None and p.stdout.readline().strip() == "holding"
        with pytest.raises(EdgeBusy, match="already accessed"):
            EdgeClient(root)
    finally:
        p.kill()
        p.wait()
    EdgeClient(root).close()  # the holder was killed: its lock went with it


def test_edge_writes_the_payload_and_vectors_qdrant_vector_store_writes(tmp_path: Path, make_engine) -> None:
    """The same chunks through local mode (LlamaIndex's QdrantVectorStore) and through Edge: the
    points agree field for field, so a collection moves to a Qdrant server as it is."""
    corpus = write_corpus(tmp_path / "corpus", FILES)
    stores = {}
    for engine_name in ("local", "edge"):
        e = make_engine(data_dir=tmp_path / engine_name, embedded_engine=engine_name)
        e.ingest([corpus], "g", calibrate=False)
        with e.store.session() as client:
            pts, _ = client.scroll("g", limit=100, with_payload=True, with_vectors=True)
        stores[engine_name] = {str(p.id): p for p in pts}
    local, edge = stores["local"], stores["edge"]
    assert set(local) == set(edge) and len(local) == 2
    for pid, lp in local.items():
        ep = edge[pid]
        assert ep.payload == lp.payload
        assert list(ep.vector["sparse"].indices) == list(lp.vector["sparse"].indices)
        assert list(ep.vector["sparse"].values) == pytest.approx(list(lp.vector["sparse"].values))
        assert ep.vector["dense"] == pytest.approx(lp.vector["dense"], abs=1e-6)


def test_a_local_mode_folder_is_copied_over_once_and_left_as_it_was(tmp_path: Path, make_engine) -> None:
    data = tmp_path / "data"
    old = make_engine(data_dir=data, embedded_engine="local")
    old.ingest([write_corpus(tmp_path / "corpus", FILES)], "g", calibrate=False)
    old.store.write_meta("g", {"abstain_bar": 0.42})
    old.close()
    local_files = sorted(p.relative_to(data) for p in (data / "qdrant").rglob("*") if p.is_file())
    assert migration_pending(data / "qdrant", data / "qdrant-edge")

    new = make_engine(data_dir=data)  # Edge, the default
    assert new.store.collection_names() == ["g"]
    assert new.store.read_meta("g")["abstain_bar"] == 0.42
    answer = new.ask("How long does the dough prove?", collection="g")
    assert answer.status == "ok" and answer.citations[0].path == "kitchen/bread.md"
    marker = json.loads((data / "qdrant-edge" / MARKER).read_text())
    assert marker["collections"]["g"] == 2 and marker["collections"]["ragcore__meta"] == 1
    assert not migration_pending(data / "qdrant", data / "qdrant-edge")
    assert sorted(p.relative_to(data) for p in (data / "qdrant").rglob("*") if p.is_file()) == local_files


def _old_local_folder(tmp_path: Path, make_engine) -> Path:
    """A data folder as a version before Edge left it: collection "g" in local mode only."""
    data = tmp_path / "data"
    old = make_engine(data_dir=data, embedded_engine="local")
    old.ingest([write_corpus(tmp_path / "corpus", FILES)], "g", calibrate=False)
    old.close()
    return data


def test_the_copy_can_run_up_front_with_progress(tmp_path: Path, make_engine) -> None:
    data = _old_local_folder(tmp_path, make_engine)
    store = Store(RagcoreSettings(data_dir=data))
    seen: list[tuple[str, int, int]] = []
    try:
        assert store.migration_pending()
        assert store.migrate_pending_copy(lambda *a: seen.append(a)) is True
        assert ("g", 2, 2) in seen and all(0 <= n <= total for _, n, total in seen)
        assert not store.migration_pending() and store.migrate_pending_copy() is False
        assert store.collection_names() == ["g"] and store.count("g") == 2
    finally:
        store.close()


def test_the_cli_says_the_copy_is_running(tmp_path: Path, make_engine, monkeypatch, capsys) -> None:
    from ragcore.cli.main import main

    monkeypatch.setenv("RAGCORE_DATA_DIR", str(_old_local_folder(tmp_path, make_engine)))
    assert main(["collections"]) == 0
    cap = capsys.readouterr()
    assert "copying this data folder's collections into Qdrant Edge, once" in cap.err and "  g: 2 points" in cap.err
    assert "g" in cap.out
    assert main(["collections"]) == 0  # done once: nothing more to say
    assert "copying" not in capsys.readouterr().err


def _app_copies(data_dir: str) -> None:
    from ragcore.settings.config import RagcoreSettings
    from ragcore.storage.store import Store
    from ui.state import _copy_old_store

    store = Store(RagcoreSettings(data_dir=data_dir))
    try:
        _copy_old_store(store)
    finally:
        store.close()


def test_the_app_shows_the_copy_moving(tmp_path: Path, make_engine) -> None:
    """ui.state's first-start step in a real Streamlit script run (AppTest), on an old folder."""
    from streamlit.testing.v1 import AppTest

    data = _old_local_folder(tmp_path, make_engine)
    at = AppTest.from_function(_app_copies, args=(str(data),), default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    (box,) = at.status
    assert box.label == "Copied this data folder's collections into Qdrant Edge." and box.state == "complete"
    assert "g: 2 of 2 points copied" in [t.value for t in at.text]
    assert not migration_pending(data / "qdrant", data / "qdrant-edge")
    at.run()  # a rerun on the copied folder shows nothing
    assert not at.status


def test_an_interrupted_copy_is_done_again_from_the_start(tmp_path: Path, make_engine) -> None:
    data = tmp_path / "data"
    old = make_engine(data_dir=data, embedded_engine="local")
    old.ingest([write_corpus(tmp_path / "corpus", FILES)], "g", calibrate=False)
    old.close()
    half = EdgeClient(data / "qdrant-edge")  # as if an open died mid-copy: one point, no marker
    _named(half, "g")
    half.upsert("g", [_point(1, "stray.md")])
    half.close()
    store = Store(RagcoreSettings(data_dir=data))
    try:
        assert store.count("g") == 2
        assert sorted({r.path for r in store.point_refs("g")}) == ["garden/roses.md", "kitchen/bread.md"]
    finally:
        store.close()


def test_threads_that_find_a_shard_unopened_open_it_once(tmp_path: Path) -> None:
    """The service answers on several threads: two that both found a collection's shard unopened
    loaded it twice, and the second load failed on the write-ahead log's lock ("Can't init WAL:
    WouldBlock", seen as a 500 on GET /api/collections). Many threads released at once, each
    asking for a count, over a few rounds of a released client; the real shard's load is slowed
    down (it is fast here) so the window the threads race through is wide enough to hit."""
    import threading
    import time
    from types import SimpleNamespace

    client = EdgeClient(tmp_path / "edge")
    real = client._qe

    def slow_load(path: str):
        time.sleep(0.05)
        return real.EdgeShard.load(path)

    client._qe = SimpleNamespace(**{n: getattr(real, n) for n in dir(real) if not n.startswith("__")})
    client._qe.EdgeShard = SimpleNamespace(**{n: getattr(real.EdgeShard, n) for n in dir(real.EdgeShard)
                                              if not n.startswith("__")})
    client._qe.EdgeShard.load = slow_load
    try:
        client.create_collection("h", vectors_config=qm.VectorParams(size=2, distance=qm.Distance.DOT))
        errors: list[BaseException] = []
        for _ in range(5):
            client.release()  # every shard closed: the next call opens it again
            gate = threading.Barrier(8)

            def count() -> None:
                gate.wait()
                try:
                    assert client.count("h", exact=True).count == 0
                except BaseException as exc:  # noqa: BLE001 (collected for the assertion below)
                    errors.append(exc)

            threads = [threading.Thread(target=count) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        assert not errors, errors[:2]
    finally:
        client.close()
