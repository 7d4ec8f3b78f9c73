"""AppTest: the Library's Collections tab — stale marking, rename, remove a document, delete — and
a background ingest that the analyst cancels (the app's one Engine, embedded Qdrant, real model)."""

from __future__ import annotations

import threading
import uuid

import pytest

from ragcore.engine import ingest_process
from tests.support.app_support import app_env, html_table, ok, shared_runtime, started, wait_for_job  # noqa: F401

pytestmark = pytest.mark.slow
LIB = "pages/library.py"


def _small_collection(tmp_path, n: int = 3) -> tuple[str, object]:
    folder = tmp_path / f"f{uuid.uuid4().hex[:4]}"
    folder.mkdir()
    for i in range(n):
        (folder / f"doc{i}.md").write_text(f"# Doc {i}\n\nThe item {i} explains rotation policy number {i}.\n")
    name = f"adm-{uuid.uuid4().hex[:6]}"
    shared_runtime().engine.ingest([folder], name, calibrate=False)
    shared_runtime().invalidate_collections()
    return name, folder


def _table(at):
    return html_table(at, "rc-cols")


def test_stale_rename_remove_document_and_delete(app_env, tmp_path):
    name, folder = _small_collection(tmp_path)
    rt = shared_runtime()
    at = started(LIB, cfg_collection=name)
    row = _table(at).set_index("collection").loc[name]
    assert row["state"] == "up to date" and row["documents"] == 3
    # a file changes on disk: the collection is marked stale, with which file, everywhere
    (folder / "doc1.md").write_text("# Doc 1\n\nRewritten.\n")
    (folder / "doc9.md").write_text("# Doc 9\n\nNew.\n")
    rt.forget_staleness()
    at.run()
    assert _table(at).set_index("collection").loc[name, "state"] == "out of date: 1 added, 1 changed"
    assert any("doc1.md" in c.value for c in at.caption) and any("out of date" in c.value for c in at.sidebar.caption)

    # rename: points, metadata and notebook follow; the session follows the new name
    new = name + "-r"
    at.text_input(key=f"col_new_{name}").set_value(new).run()
    at.button(key=f"col_rename_{name}").click().run()
    ok(at)
    assert at.session_state["cfg_collection"] == new
    assert not rt.engine.store.exists(name) and rt.engine.store.info(new).documents == 3
    assert any(f"Renamed '{name}' to '{new}'" in s.value.replace('\\', '') for s in at.success)
    assert set(_table(at)["collection"]) >= {new} and name not in set(_table(at)["collection"])

    # remove one document (after the confirmation)
    at.selectbox(key=f"col_doc_{new}").set_value("doc0.md").run()
    at.button(key=f"col_doc_rm_{new}").click().run()
    ok(at)
    assert [p for p, _ in rt.engine.documents(new)] == ["doc1.md", "doc2.md"]

    # bring it up to date: a background re-ingest of its folder
    at.button(key=f"col_reingest_{new}").click().run()
    wait_for_job(at)
    ok(at)
    assert not rt.staleness(new, max_age=0).stale
    assert _table(at).set_index("collection").loc[new, "documents"] == 4

    # delete, after the confirmation
    at.button(key=f"col_delete_{new}").click().run()
    ok(at)
    assert not rt.engine.store.exists(new)
    assert new not in set(_table(at)["collection"])
    assert at.session_state["cfg_collection"] != new


def test_cancel_keeps_what_was_written_and_the_app_stays_usable(app_env, tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(30):
        # long enough that a file's chunks fill batches of their own: the 5th file completes mid-way (with 30 small files
        # every chunk sat in one batch, written only at the end, and a Cancel before it left nothing to record)
        (folder / f"n{i:02d}.md").write_text(f"# Note {i}\n\n" + f"Sentence {i} about cancelling ingests. " * 150)
    rt = shared_runtime()
    gate, held = threading.Event(), threading.Event()
    at = started(LIB)
    at.text_input(key="ing_folder").set_value(str(folder)).run()
    name = f"cancel-{uuid.uuid4().hex[:6]}"
    at.text_input(key="ing_new_name").set_value(name).run()
    real = ingest_process.ingest_in_process

    def slow_ingest(engine, paths, collection, *, progress=None, **kw):  # holds the ingest until the test cancels
        def gated(done, total, path):
            if done >= 5 and not gate.is_set():
                held.set()
                gate.wait(600)  # set by the test once Cancel was pressed; long: a loaded machine runs the pages slowly
            progress(done, total, path)
        return real(engine, paths, collection, progress=gated, **kw)

    # a real ingest (in its child process, which waits for each progress call), only held so that Cancel lands mid-way
    ingest_process.ingest_in_process = slow_ingest
    try:
        at.button(key="ing_go_folder").click().run()
        ok(at)
        job = rt.job
        assert job.running and job.collection == name
        # the app stays usable meanwhile: another page runs, and the sidebar shows the progress
        at.switch_page("pages/retrieval_lab.py").run()
        ok(at)
        assert any("Ingesting into" in p.proto.text for p in at.sidebar.get("progress"))
        at.switch_page(LIB).run(timeout=300)  # (it ran past AppTest's 120 s once in three runs at load 20)
        # Cancel once 5 files are written (the ingest process starts and loads its model first: a Cancel before
        # its first batch leaves nothing, and the new collection is removed)
        assert held.wait(600), "the ingest never reached its 5th file"
        at.button(key=f"ing_cancel_{job.id}").click().run()
        gate.set()
        wait_for_job(at)
    finally:
        gate.set()  # a failed step must not leave the ingest process holding the store for the next tests
        ingest_process.ingest_in_process = real
    assert job.cancelled and not job.error
    assert any("cancelled after" in w.value for w in at.warning), [w.value for w in at.warning]
    meta = rt.engine.store.read_meta(name)
    assert meta.get("cancelled_at") and meta.get("root") == str(folder)
    assert rt.staleness(name, max_age=0).incomplete
    # a re-run completes it
    report = rt.engine.ingest([folder], name, calibrate=False)
    assert rt.engine.store.info(name).documents == 30 and report.count("failed") == 0
    rt.engine.drop(name)


def test_invalid_names_get_the_engines_own_message_and_nothing_is_made(app_env, tmp_path):
    """The Library checks a new or renamed collection's name with the rule the engine and the CLI
    apply (storage/names.py), so the app never accepts a name `ragcore ingest` would refuse."""
    name, folder = _small_collection(tmp_path)
    rt = shared_runtime()
    at = started(LIB, cfg_collection=name)
    at.text_input(key=f"col_new_{name}").set_value("ragcore__mine").run()  # the reserved prefix of the store's own collections
    at.button(key=f"col_rename_{name}").click().run()
    assert any("is not allowed" in e.value and "ragcore__" in e.value for e in at.error)
    assert rt.engine.store.exists(name) and not rt.engine.store.exists("ragcore__mine")
    at.text_input(key="ing_folder").set_value(str(folder)).run()
    at.text_input(key="ing_new_name").set_value("../escape").run()
    assert any("'../escape' is not allowed" in e.value for e in at.error)
