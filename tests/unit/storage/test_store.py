"""The Store facade (ragcore/storage/store.py) over its backends: the payload a chunk is stored
with, the same answers from Qdrant Edge and local mode, snapshots published after writes and
never by a read. Real embedded Qdrant in temp folders, the real ONNX model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ragcore.settings.config import RagcoreSettings
from ragcore.storage.backend_edge import EdgeBackend
from ragcore.storage.backend_qdrant import QdrantBackend
from ragcore.storage.snapshot import MANIFEST
from ragcore.storage.store import Store, point_id
from ragcore.types import Chunk
from tests.conftest import write_corpus

FILES = {
    "garden/roses.md": "# Roses\n\n## Pruning roses\n\nPrune roses in late winter, just before the buds swell.\n",
    "kitchen/bread.md": "# Bread\n\n## Proving dough\n\nLet the dough prove for two hours in a warm place.\n",
}
# a stored chunk point's payload keys, in order: the format on disk (LlamaIndex's QdrantVectorStore's)
PAYLOAD_KEYS = [
    "chunk_id", "path", "doc_hash", "kind", "start_line", "end_line", "section", "anchor", "page", "ordinal", "title",
    "doc_chunks", "fp", "context", "_node_content", "_node_type", "document_id", "doc_id", "ref_doc_id",
]


def _ingested(tmp_path: Path, make_engine, **settings):
    engine = make_engine(data_dir=tmp_path / "data", **settings)
    engine.ingest([write_corpus(tmp_path / "corpus", FILES)], "g", calibrate=False)
    return engine


def _payloads(store: Store, name: str) -> list[dict]:
    with store.session(write=False) as client:
        points, _ = client.scroll(name, limit=100, with_payload=True)
    return [dict(p.payload) for p in points]


def _snapshot_files(data: Path) -> dict[str, int]:
    """Every file under snapshots/ with its mtime: what a publish would change."""
    return {str(p.relative_to(data)): p.stat().st_mtime_ns for p in sorted((data / "snapshots").rglob("*"))}


@pytest.mark.parametrize("engine_name", ["edge", "local"])
def test_a_real_chunk_round_trips_through_its_stored_payload(tmp_path: Path, make_engine, engine_name: str) -> None:
    engine = _ingested(tmp_path, make_engine, embedded_engine=engine_name)
    chunks = {c.chunk_id: c for c in engine.store.load("g").chunks}
    payloads = _payloads(engine.store, "g")
    assert len(payloads) == len(chunks) == 2
    for payload in payloads:
        assert list(payload) == PAYLOAD_KEYS  # not one key more, less or moved
        chunk = Chunk.from_payload(payload)
        assert chunk == chunks[payload["chunk_id"]] and chunk.text.startswith("## ")
        extra = {k: payload[k] for k in ("doc_chunks", "fp", "context")}
        assert {k: payload[k] for k in PAYLOAD_KEYS[:14]} == chunk.to_payload(**extra)
        node = json.loads(payload["_node_content"])
        assert node["text"] == chunk.text and node["metadata"] == chunk.to_payload(**extra)
        # the text from LlamaIndex's node content, or given: the same chunk
        assert Chunk.from_payload(chunk.to_payload(), text=chunk.text) == chunk


def test_edge_and_local_mode_answer_alike_through_the_facade(tmp_path: Path, make_engine) -> None:
    edge = _ingested(tmp_path / "e", make_engine)
    local = _ingested(tmp_path / "l", make_engine, embedded_engine="local")
    assert isinstance(edge.store.backend, EdgeBackend) and edge.store.backend.kind == "edge"
    assert isinstance(local.store.backend, QdrantBackend) and local.store.backend.kind == "local"
    for store in (edge.store, local.store):
        assert store.collection_names() == ["g"] and store.count("g") == 2 and not store.opened
    a, b = edge.store.load("g"), local.store.load("g")
    assert list(a.chunks) == list(b.chunks) and np.allclose(a.dense, b.dense, atol=1e-6)
    volatile = {"built_at", "root"}
    assert {k: v for k, v in edge.store.read_meta("g").items() if k not in volatile} == \
        {k: v for k, v in local.store.read_meta("g").items() if k not in volatile}
    assert edge.store.doc_hashes("g") == local.store.doc_hashes("g")
    assert edge.store.section_refs("g") == local.store.section_refs("g")
    assert edge.store.chunks_of("g", "garden/roses.md") == local.store.chunks_of("g", "garden/roses.md")
    assert {r.id for r in edge.store.point_refs("g")} == {point_id(c.chunk_id) for c in a.chunks}


def test_reads_of_a_stale_snapshot_never_publish_and_the_repair_step_does(tmp_path: Path, make_engine) -> None:
    data = tmp_path / "data"
    _ingested(tmp_path, make_engine)
    raw = Store(RagcoreSettings(data_dir=data, snapshots=False))  # a writer that dies before publishing
    raw.delete_points("g", [r.id for r in raw.point_refs("g") if r.path == "kitchen/bread.md"])
    raw.close()
    before = _snapshot_files(data)
    reader = Store(RagcoreSettings(data_dir=data))
    try:
        assert reader.snapshot("g") is None and not reader.snapshot_current("g")
        assert reader.count("g") == 1 and reader.read_meta("g")["documents"] == 2  # the store of record
        assert [c.path for c in reader.load("g").chunks] == ["garden/roses.md"]
        assert reader.doc_hashes("g").keys() == {"garden/roses.md"} and reader.chunks_of("g", "kitchen/bread.md") == []
        assert [r.path for r in reader.section_refs("g")] == ["garden/roses.md"]
        assert reader.collection_names() == ["g"] and reader.exists("g")
        assert _snapshot_files(data) == before and not reader.opened
        assert reader.refresh_snapshot("g") is True and reader.refresh_snapshot("g") is False
        assert _snapshot_files(data) != before and reader.snapshot_current("g")
        assert [c.path for c in reader.snapshot("g").chunks] == ["garden/roses.md"] and not reader.opened
    finally:
        reader.close()


def test_a_write_session_publishes_at_its_end_unless_it_failed(tmp_path: Path, make_engine) -> None:
    data = tmp_path / "data"
    engine = _ingested(tmp_path, make_engine)
    snap = engine.store.snapshot("g")
    store = Store(RagcoreSettings(data_dir=data))
    try:
        with pytest.raises(RuntimeError), store.session():
            store.ensure_collection("h")
            store.write_chunks("h", list(snap.chunks)[:1], np.asarray(snap.dense)[:1], {"garden/roses.md": 1})
            raise RuntimeError("killed")
        assert store.exists("h") and store.snapshot("h") is None and not (data / "snapshots" / "h" / MANIFEST).exists()
        with store.session():  # written points without a metadata write: published when the session ends
            store.write_chunks("h", list(snap.chunks)[1:], np.asarray(snap.dense)[1:], {"kitchen/bread.md": 1})
        assert len(store.snapshot("h").chunks) == 2 and store.count("h") == 2 and not store.opened
        with store.session(write=False):
            store.count("g")
        assert (data / "snapshots" / "h" / MANIFEST).is_file()
    finally:
        store.close()


def test_a_client_passed_in_is_used_as_it_is_without_snapshots(tmp_path: Path, make_engine) -> None:
    """``Store(settings, client=QdrantClient(":memory:"))``: qdrant-client's backend, every read from it."""
    from qdrant_client import QdrantClient

    source = _ingested(tmp_path, make_engine).store.load("g")
    store = Store(RagcoreSettings(data_dir=tmp_path / "mem"), client=QdrantClient(":memory:"))
    try:
        assert isinstance(store.backend, QdrantBackend) and store.snapshots is None and store.opened
        store.ensure_collection("m")
        store.write_chunks("m", list(source.chunks), np.asarray(source.dense), {"garden/roses.md": 1, "kitchen/bread.md": 1})
        store.write_meta("m", {"documents": 2})
        assert store.count("m") == 2 and store.read_meta("m")["documents"] == 2 and store.snapshot("m") is None
        assert sorted(c.chunk_id for c in store.load("m").chunks) == sorted(c.chunk_id for c in source.chunks)
        assert all(list(p) == PAYLOAD_KEYS for p in _payloads(store, "m"))  # the same payload as on Edge
        assert store.opened and not (tmp_path / "mem" / "snapshots").exists()
    finally:
        store.close()


def test_the_cli_names_the_repair_step_and_runs_it(tmp_path: Path, make_engine, monkeypatch, capsys) -> None:
    from ragcore.cli.main import main

    data = tmp_path / "data"
    _ingested(tmp_path, make_engine)
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(data))
    assert main(["ask", "When should I prune roses?", "-c", "g"]) == 0
    assert "--repair" not in capsys.readouterr().err  # current: nothing to say
    raw = Store(RagcoreSettings(data_dir=data, snapshots=False))
    raw.delete_points("g", [r.id for r in raw.point_refs("g") if r.path == "kitchen/bread.md"])
    raw.close()
    before = _snapshot_files(data)
    assert main(["ask", "When should I prune roses?", "-c", "g"]) == 0
    assert "ragcore collections --repair" in capsys.readouterr().err and _snapshot_files(data) == before
    assert main(["collections", "--repair"]) == 0
    assert "rewrote the query snapshot of g" in capsys.readouterr().err and _snapshot_files(data) != before
    assert main(["ask", "When should I prune roses?", "-c", "g"]) == 0
    assert "--repair" not in capsys.readouterr().err
