"""Query snapshots (ragcore/storage/snapshot.py): a question reads plain files written after each write,
never embedded Qdrant; a snapshot that no longer matches the store is ignored (the question reads
Qdrant) and rewritten by the next writer or the explicit repair step, never by a read.
Real embedded Qdrant in temp folders, the real ONNX model."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ragcore.engine.collections_admin import delete_document, rename_collection, staleness
from ragcore.storage.search_index import SearchIndex
from ragcore.storage.snapshot import FORMAT, MANIFEST
from ragcore.abstain.topics import TopicIndex
from tests.conftest import REPO, write_corpus

FILES = {
    "garden/roses.md": "# Roses\n\n## Pruning roses\n\nPrune roses in late winter, just before the buds swell.\n\n"
                       "## Feeding roses\n\nFeed roses with compost in spring and again in early summer.\n",
    "garden/tomatoes.md": "# Tomatoes\n\n## Watering tomatoes\n\nWater tomatoes deeply twice a week; never wet the leaves.\n",
    "kitchen/bread.md": "# Bread\n\n## Proving dough\n\nLet the dough prove for two hours in a warm place until doubled.\n",
    "ops/backup.md": "# Operations\n\n## Backups\n\nThe nightly backup runs at two o'clock and keeps thirty copies.\n",
}
QUERIES = ["When should I prune roses?", "how long does dough prove", "backup copies kept", "watering the leaves"]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    return write_corpus(tmp_path / "corpus", FILES)


def _versions(data_dir: Path, name: str) -> list[str]:
    return sorted(p.name for p in (data_dir / "snapshots" / name).iterdir() if p.is_dir())


def _manifest(data_dir: Path, name: str) -> dict:
    return json.loads((data_dir / "snapshots" / name / MANIFEST).read_text())


def _pool(engine, q: str) -> list[tuple]:
    """The ranked pool; scores to float32 precision (a memory-mapped matrix may take another BLAS path)."""
    r = engine.hybrid_search.pool("g", q, engine.settings.with_(collection="g"))
    return [(c.chunk.chunk_id, pytest.approx(c.dense_score, abs=1e-6), pytest.approx(c.sparse_score, abs=1e-6),
             c.fused_score, c.rank) for c in r.candidates]


def test_snapshot_answers_exactly_as_qdrant_does(tmp_path: Path, corpus: Path, make_engine) -> None:
    data = tmp_path / "data"
    writer = make_engine(data_dir=data)
    writer.ingest([corpus], "g", calibrate=False)
    assert not writer.store.opened  # the write session closed the client: the folder lock is free
    assert len(_versions(data, "g")) == 1

    from_snap = make_engine(data_dir=data)
    from_qdrant = make_engine(data_dir=data, snapshots=False)  # today's path: scroll Qdrant
    snap = from_snap.store.snapshot("g")
    assert snap is not None and len(snap.chunks) == from_qdrant.store.count("g")
    for q in QUERIES:
        assert _pool(from_snap, q) == _pool(from_qdrant, q)
    a, b = from_snap.hybrid_search.index("g"), from_qdrant.hybrid_search.index("g")
    assert [c.chunk_id for c in a.chunks] == [c.chunk_id for c in b.chunks]
    # float32 rounding only: Qdrant re-normalises the stored vectors when a client loads them
    assert np.allclose(np.asarray(a.dense), b.dense, atol=1e-6)
    for term in ("roses", "dough", "backup", "nonexistentword"):
        assert a.idf(term) == pytest.approx(b.idf(term))
    # the topic index: same headings, same places, same scores
    ta, tb = from_snap.topic_index("g"), from_qdrant.topic_index("g")
    assert ta.rows == tb.rows and np.allclose(ta.vectors, tb.vectors)
    for q in QUERIES:
        assert from_snap.closest_topic(q, collection="g") == from_qdrant.closest_topic(q, collection="g")
    assert from_snap.store.read_meta("g") == from_qdrant.store.read_meta("g")
    assert from_snap.documents("g") == from_qdrant.documents("g")
    assert from_snap.document_chunks("garden/roses.md", "g") == from_qdrant.document_chunks("garden/roses.md", "g")
    assert not from_snap.store.opened
    assert not (tmp_path / "data" / "snapshots" / "g" / "x").exists()


def test_a_question_with_a_valid_snapshot_never_opens_qdrant(tmp_path: Path, corpus: Path, make_engine) -> None:
    data = tmp_path / "data"
    make_engine(data_dir=data).ingest([corpus], "g")  # with the label-free abstain bar
    reader = make_engine(data_dir=data)
    answer = reader.ask("When should I prune roses?", collection="g")
    assert answer.status == "ok" and answer.citations[0].path == "garden/roses.md"
    assert answer.metadata["corpus_version"] == _manifest(data, "g")["corpus_version"]
    # the rest of what the app reads: collections, documents, one document, the bar, staleness
    (info,) = reader.collections()
    assert (info.name, info.documents, info.chunks) == ("g", 4, len(reader.store.snapshot("g").chunks))
    assert reader.abstain_bar_info("g").source == "auto"
    assert [p for p, _ in reader.documents("g")] == sorted(FILES)
    assert reader.document_chunks("ops/backup.md", "g")[0].section == ("Operations", "Backups")
    assert not staleness(reader, "g").stale
    assert reader.store._conn.opens == 0  # never created


def test_stale_snapshot_is_ignored_and_rebuilt_by_the_repair_step(tmp_path: Path, corpus: Path, make_engine) -> None:
    data = tmp_path / "data"
    make_engine(data_dir=data).ingest([corpus], "g", calibrate=False)
    old = _manifest(data, "g")["version"]
    # a writer that changes the collection without publishing (as a killed ingest leaves it)
    raw = make_engine(data_dir=data, snapshots=False)
    ids = [r.id for r in raw.store.point_refs("g") if r.path == "kitchen/bread.md"]
    raw.store.delete_points("g", ids)
    raw.close()
    reader = make_engine(data_dir=data)
    assert all(c.path != "kitchen/bread.md" for c in reader.hybrid_search.index("g").chunks)  # read from Qdrant
    assert reader.ask("How long does the dough prove?", collection="g").status in ("ok", "abstained")
    assert _manifest(data, "g")["version"] == old and _versions(data, "g") == [old]  # a read never publishes
    assert not reader.store.opened  # the fallback's read sessions closed the client again
    assert reader.repair_snapshots() == ["g"] and reader.repair_snapshots() == []  # once, then current
    new = _manifest(data, "g")["version"]
    assert new != old and _versions(data, "g") == [new]  # rebuilt, the old version removed
    assert all(c.path != "kitchen/bread.md" for c in reader.hybrid_search.index("g").chunks)
    assert reader.store.snapshot("g") is not None and not reader.store.opened


@pytest.mark.parametrize("damage", ["dense", "chunks", "fields", "codes", "manifest", "missing"])
def test_damaged_snapshot_is_ignored_and_rebuilt_by_the_repair_step(tmp_path: Path, corpus: Path, make_engine,
                                                                    damage: str) -> None:
    data = tmp_path / "data"
    make_engine(data_dir=data).ingest([corpus], "g", calibrate=False)
    version = data / "snapshots" / "g" / _manifest(data, "g")["version"]
    expected = _pool(make_engine(data_dir=data), QUERIES[0])
    if damage == "dense":
        (version / "dense.npy").write_bytes((version / "dense.npy").read_bytes()[:1000])  # truncated
    elif damage == "chunks":  # truncated rows: the offsets no longer end where the file does
        (version / "chunks.jsonl").write_bytes((version / "chunks.jsonl").read_bytes()[:-10])
    elif damage == "fields":
        (version / "paths.json").write_text('{"fields": ["chunk_id"], "paths": []}')
    elif damage == "codes":
        np.save(version / "dense_codes.npy", np.zeros((3, 64), np.float32))
    elif damage == "manifest":
        (data / "snapshots" / "g" / MANIFEST).write_text("{not json")
    else:
        (version / "sparse_rows.npy").unlink()
    manifest = (data / "snapshots" / "g" / MANIFEST).read_bytes()
    reader = make_engine(data_dir=data)
    assert _pool(reader, QUERIES[0]) == expected  # answered from Qdrant
    assert (data / "snapshots" / "g" / MANIFEST).read_bytes() == manifest  # a read never publishes
    assert reader.repair_snapshots("g") == ["g"]
    assert _manifest(data, "g")["version"] != version.name
    assert _pool(make_engine(data_dir=data), QUERIES[0]) == expected


def test_the_app_and_a_question_never_scan_every_chunk_of_a_snapshot(
    tmp_path: Path, corpus: Path, make_engine, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At a million chunks a scan of the rows takes ~14 s: what the first question (topic index,
    named pages, path filter), the library (documents, one document) and ingest (document hashes)
    read comes from columns written at publish, and equals what the rows say."""
    from ragcore.storage.chunk_table import ChunkTable
    from ragcore.storage.sections import first_places, section_ref

    data = tmp_path / "data"
    make_engine(data_dir=data).ingest([corpus], "g")
    chunks = list(make_engine(data_dir=data).store.snapshot("g").chunks)  # the reference, read before the ban
    monkeypatch.setattr(ChunkTable, "__iter__", lambda self: pytest.fail("a scan of every row"))
    reader = make_engine(data_dir=data, path_filter="garden/*")
    answer = reader.ask("When should I prune roses?", collection="g")
    assert answer.status == "ok" and answer.citations[0].path == "garden/roses.md"
    topics = reader.topic_index("g")
    first = first_places(section_ref(c) for c in chunks)
    assert [(r.heading, r.path, r.start_line) for r in topics.rows] == [(h, p, first[h, p].start_line) for h, p in sorted(first)]
    assert reader.documents("g") == sorted({(p, sum(c.path == p for c in chunks)) for p in FILES})
    assert reader.document_chunks("garden/roses.md", "g") == sorted(
        (c for c in chunks if c.path == "garden/roses.md"), key=lambda c: (c.page or 0, c.start_line, c.ordinal))
    assert reader.store.doc_hashes("g") == {c.path: c.doc_hash for c in chunks}


def test_a_snapshot_carries_a_vector_for_every_heading_and_title(tmp_path: Path, corpus: Path, make_engine) -> None:
    """Titles feed the page-title signal. A collection written point by point (bench cold copies one
    so) has titles nobody embedded: the snapshot's publish embeds them once, so no question has to."""
    data = tmp_path / "data"
    e = make_engine(data_dir=data)
    e.ingest([corpus], "g", calibrate=False)
    snap = e.store.snapshot("g")
    copies = [dataclasses.replace(c, title=f"{c.title} (copy)") for c in snap.chunks]
    with e.store.session():
        e.store.ensure_collection("h")
        e.store.write_chunks("h", copies, np.asarray(snap.dense), {c.path: sum(x.path == c.path for x in copies) for c in copies})
    reader = make_engine(data_dir=data)
    headings = reader.store.snapshot("h").headings
    assert {c.title for c in copies} | {h for c in copies for h in c.section} <= set(headings)
    before = len(reader.encoder.cached_texts())
    reader.hybrid_search.search("h", "When should I prune roses?", reader.settings.with_(doc_title_weight=0.3))
    assert not any("(copy)" in t for t in reader.encoder.cached_texts()[before:])  # no title embedded by a question


def test_a_format_1_snapshot_is_refused_and_rebuilt(tmp_path: Path, corpus: Path, make_engine) -> None:
    """Format 1 (chunks.json read whole) cannot be opened at scale: its manifest is refused and
    the snapshot is written again in the current format."""
    data = tmp_path / "data"
    make_engine(data_dir=data).ingest([corpus], "g", calibrate=False)
    body = _manifest(data, "g")
    version = data / "snapshots" / "g" / body["version"]
    expected = _pool(make_engine(data_dir=data), QUERIES[0])
    (data / "snapshots" / "g" / MANIFEST).write_text(json.dumps({**body, "format": 1}))
    (version / "chunks.jsonl").unlink()  # as a format-1 directory: no chunk table
    (version / "chunks.json").write_text('{"fields": [], "rows": []}')
    reader = make_engine(data_dir=data)
    assert _pool(reader, QUERIES[0]) == expected
    assert _manifest(data, "g")["format"] == 1  # a read never publishes
    assert reader.repair_snapshots() == ["g"]
    new = _manifest(data, "g")
    assert new["format"] == FORMAT and new["version"] != body["version"] and _versions(data, "g") == [new["version"]]
    assert (data / "snapshots" / "g" / new["version"] / "chunks.jsonl").is_file()


def test_pickles_are_never_loaded(tmp_path: Path, corpus: Path, make_engine) -> None:
    """An .npy holding Python objects (a pickle) is refused, not executed: the question reads Qdrant,
    the repair step rebuilds the snapshot."""
    data = tmp_path / "data"
    make_engine(data_dir=data).ingest([corpus], "g", calibrate=False)
    version = data / "snapshots" / "g" / _manifest(data, "g")["version"]
    np.save(version / "headings.npy", np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    reader = make_engine(data_dir=data)
    assert reader.topic_index("g").best(reader.encoder.encode(["pruning roses"])[0]).heading == "Pruning roses"
    assert _manifest(data, "g")["version"] == version.name
    reader.repair_snapshots("g")
    assert _manifest(data, "g")["version"] != version.name


def test_writes_keep_the_snapshot_current(tmp_path: Path, corpus: Path, make_engine) -> None:
    """Re-ingest, removing a document, the abstain bar, rename and drop all leave one current version."""
    data = tmp_path / "data"
    engine = make_engine(data_dir=data)
    engine.ingest([corpus], "g", calibrate=False)
    v1 = _manifest(data, "g")
    (corpus / "ops" / "restore.md").write_text("# Restore\n\nRestoring a backup takes ten minutes.\n")
    engine.ingest([corpus], "g", calibrate=False)
    v2 = _manifest(data, "g")
    assert v2["corpus_version"] != v1["corpus_version"] and _versions(data, "g") == [v2["version"]]
    delete_document(engine, "g", "kitchen/bread.md")
    v3 = _manifest(data, "g")
    assert v3["meta"]["documents"] == 4 and v3["chunks"] == v2["chunks"] - 1
    engine.store.write_meta("g", {"note": "meta only"})  # no point changed: same files, new manifest
    v4 = _manifest(data, "g")
    assert v4["version"] == v3["version"] and v4["meta"]["note"] == "meta only"
    assert engine.store.read_meta("g")["note"] == "meta only"
    rename_collection(engine, "g", "h")
    assert not (data / "snapshots" / "g").exists() and _manifest(data, "h")["meta"]["note"] == "meta only"
    assert engine.retrieve("prune roses", collection="h").candidates[0].chunk.path == "garden/roses.md"
    engine.drop("h")
    assert not (data / "snapshots" / "h").exists() and engine.collections() == []
    assert not engine.store.opened


def test_snapshots_off_is_the_old_path(tmp_path: Path, corpus: Path, make_engine) -> None:
    engine = make_engine(data_dir=tmp_path / "data", snapshots=False)
    engine.ingest([corpus], "g", calibrate=False)
    assert engine.ask("When should I prune roses?", collection="g").status == "ok"
    assert not (tmp_path / "data" / "snapshots").exists()


def test_topic_index_from_snapshot_reads_only_missing_headings(
    tmp_path: Path, corpus: Path, make_engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The snapshot carries the heading vectors; one it lacks is read from Qdrant's store, not embedded."""
    engine = make_engine(data_dir=tmp_path / "data")
    engine.ingest([corpus], "g", calibrate=False)
    snap = engine.store.snapshot("g")
    calls: list[list[str]] = []
    real = engine.encoder.encode_uncached
    monkeypatch.setattr(engine.encoder, "encode_uncached", lambda texts: calls.append(list(texts)) or real(texts))
    full = TopicIndex.from_snapshot(snap, engine.store, engine.encoder)
    assert len(full) == len({(c.path, c.section[-1]) for c in snap.chunks}) and not engine.store.opened
    lacking = dataclasses.replace(snap, headings={h: v for h, v in snap.headings.items() if h != full.rows[0].heading})
    again = TopicIndex.from_snapshot(lacking, engine.store, engine.encoder)
    assert again.rows == full.rows and np.allclose(again.vectors, full.vectors, atol=1e-6) and calls == []
    assert SearchIndex.from_snapshot(snap).n_docs == len(snap.chunks)


@pytest.mark.slow
def test_cli_ingest_while_an_engine_is_open_then_it_answers_from_the_new_version(
    tmp_path: Path, corpus: Path, make_engine
) -> None:
    """The app's situation: an Engine open on a data folder; `ragcore ingest` from another process
    succeeds without waiting for it, and the Engine's next question reads the new corpus version."""
    data = tmp_path / "data"
    app = make_engine(data_dir=data)
    app.ingest([corpus], "g", calibrate=False)
    before = app.ask("How long does restoring a backup take?", collection="g")
    assert all(c.chunk.path != "ops/restore.md" for c in before.candidates)
    (corpus / "ops" / "restore.md").write_text("# Restore\n\n## Restoring\n\nRestoring a backup takes ten minutes.\n")
    env = {**os.environ, "RAGCORE_DATA_DIR": str(data)}
    cli = subprocess.run([sys.executable, "-m", "ragcore.cli.main", "ingest", str(corpus), "-c", "g", "--no-calibrate"],
                         env=env, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert cli.returncode == 0, cli.stderr[-2000:]
    assert "1 added" in cli.stdout
    after = app.ask("How long does restoring a backup take?", collection="g")
    assert after.metadata["corpus_version"] == _manifest(data, "g")["corpus_version"]
    assert after.metadata["corpus_version"] != before.metadata["corpus_version"]
    assert after.candidates[0].chunk.path == "ops/restore.md"  # retrieved from the new version
    assert not app.store.opened


@pytest.mark.slow
def test_cold_cli_ask_does_not_import_qdrant_or_llama_index(tmp_path: Path, corpus: Path, make_engine) -> None:
    """A cold question reads the snapshot and runs the search, cut rules, composer and checker as
    plain code: neither Qdrant's client nor LlamaIndex (~2 s of import) nor scipy (~0.3 s) is loaded."""
    data = tmp_path / "data"
    make_engine(data_dir=data).ingest([corpus], "g", calibrate=False)
    code = ("import sys; from ragcore.cli.main import main; rc = main(['ask', 'When should I prune roses?', '-c', 'g']); "
            "print('RC', rc, 'qdrant_client' in sys.modules, 'bench.cli' in sys.modules, "
            "any(m.startswith('llama_index') for m in sys.modules), 'scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "RAGCORE_DATA_DIR": str(data)}, cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert "RC 0 False False False False" in out.stdout, out.stdout[-1000:] + out.stderr[-2000:]


@pytest.mark.slow
def test_cli_ask_ends_without_teardown_only_when_it_opened_no_store(tmp_path: Path, corpus: Path, make_engine) -> None:
    """The console script skips the interpreter's teardown after a question answered from the
    snapshot (nothing to close), and its output still arrives whole through a pipe; with snapshots
    off the question opened embedded Qdrant, so the process ends normally and closes it."""
    data = tmp_path / "data"
    make_engine(data_dir=data).ingest([corpus], "g", calibrate=False)
    code = ("import atexit, sys; atexit.register(lambda: print('TEARDOWN', file=sys.stderr)); "
            "from ragcore.cli.main import run; sys.argv = ['ragcore', 'ask', 'When should I prune roses?', '-c', 'g', '--json']; run()")
    for snapshots, teardown in (("1", False), ("0", True)):
        out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                             env={**os.environ, "RAGCORE_DATA_DIR": str(data), "RAGCORE_SNAPSHOTS": snapshots})
        assert out.returncode == 0, out.stderr[-2000:]
        answer = json.loads(out.stdout)  # the whole JSON document, flushed before the exit
        assert answer["status"] == "ok" and answer["citations"]
        assert ("TEARDOWN" in out.stderr) is teardown, (snapshots, out.stderr[-500:])


@pytest.mark.slow
def test_cli_ask_that_fails_at_once_waits_for_the_model_and_exits_cleanly(tmp_path: Path) -> None:
    """An unknown collection fails while the model is still loading in its background thread;
    the process must end with the error and exit code 1, not abort in onnxruntime (exit 134,
    "std::bad_alloc"), which it did about one time in three."""
    for _ in range(3):
        out = subprocess.run([sys.executable, "-m", "ragcore.cli.main", "ask", "What?", "-c", "nope"], cwd=REPO,
                             capture_output=True, text=True, timeout=300,
                             env={**os.environ, "RAGCORE_DATA_DIR": str(tmp_path / "data")})
        assert out.returncode == 1, (out.returncode, out.stderr[-1000:])
        assert "does not exist" in out.stdout + out.stderr and "bad_alloc" not in out.stderr


WRITER = """
import sys, time
from ragcore.settings.config import RagcoreSettings
from ragcore.storage.store import Store
st = Store(RagcoreSettings(data_dir=sys.argv[1], snapshots=False))
with st.session():  # a write under way: the folder is locked, the collection changed, nothing published yet
    st.delete_points("g", [r.id for r in st.point_refs("g") if r.path == "kitchen/bread.md"])
    print("writing", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_readers_are_served_the_last_snapshot_while_another_process_writes(
    tmp_path: Path, corpus: Path, make_engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragcore.storage import locking

    data = tmp_path / "data"
    make_engine(data_dir=data).ingest([corpus], "g", calibrate=False)
    monkeypatch.setattr(locking, "LOCK_WAIT_S", 0.5)  # a reader that waited for the lock would fail
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(data), "30"], stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "writing"
        reader = make_engine(data_dir=data)
        paths = {c.path for c in reader.hybrid_search.index("g").chunks}
        assert "kitchen/bread.md" in paths  # the last published version, consistent, not the half-written one
        assert reader.store.count("g") == len(reader.store.snapshot("g").chunks) and not reader.store.opened
    finally:
        writer.kill()
        writer.wait(timeout=30)
    # the writer died without publishing: the next reader finds the snapshot stale and reads Qdrant
    assert "kitchen/bread.md" not in {c.path for c in make_engine(data_dir=data).hybrid_search.index("g").chunks}


FIRST_WRITER = """
import sys, time
from ragcore.settings.config import RagcoreSettings
from ragcore.storage.store import Store
st = Store(RagcoreSettings(data_dir=sys.argv[1]))
with st.session():  # a new collection's first write under way: points written, no snapshot of it published
    st.ensure_collection("fresh")
    st.copy_points("g", "fresh")
    print("writing", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_a_collection_another_process_is_creating_reads_as_empty_without_the_lock(
    tmp_path: Path, corpus: Path, make_engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's ingest process holds the store for the whole ingest: the app lists, measures and browses the
    new collection meanwhile as the empty collection it was before (issue 42, item 5), never waiting 120 s."""
    from ragcore.storage import locking

    data = tmp_path / "data"
    make_engine(data_dir=data).ingest([corpus], "g", calibrate=False)
    monkeypatch.setattr(locking, "LOCK_WAIT_S", 0.5)  # a reader that waited for the lock would fail
    writer = subprocess.Popen([sys.executable, "-c", FIRST_WRITER, str(data), "30"], stdout=subprocess.PIPE, text=True,
                              cwd=REPO)
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "writing"
        reader = make_engine(data_dir=data)
        st = reader.store
        assert st.first_write_elsewhere("fresh") and not st.first_write_elsewhere("g")
        asked = reader.ask("How is bread made?", collection="fresh")
        assert asked.status == "error" and "being ingested by another process" in asked.error_message
        listed = {c.name: c for c in reader.collections(wait_s=None)}  # the reader's full wait: none is needed
        assert listed["fresh"].documents == 0 and listed["fresh"].chunks == 0 and listed["fresh"].incomplete
        assert listed["fresh"].problem is None and listed["g"].documents > 0
        assert st.read_meta("fresh") == {} and reader.documents("fresh") == [] and st.section_refs("fresh") == []
        assert st.doc_hashes("fresh") == {} and st.chunks_of("fresh", "kitchen/bread.md") == []
        reader.abstain_bar(collection="fresh")
        assert not st.opened and st._conn.opens == 0
    finally:
        writer.kill()
        writer.wait(timeout=30)
    # the writer is gone: what it wrote is read from Qdrant
    after = make_engine(data_dir=data).store
    assert not after.first_write_elsewhere("fresh") and after.count("fresh") == after.count("g")
