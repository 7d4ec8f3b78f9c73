"""An ingest started on the Library page runs in a child process below the app's priority (issue 42, item 5),
and nothing the app reads while it runs needs embedded Qdrant's folder lock, which the child holds for the
whole ingest: the Library lists the collections (the new one included) and a question on another collection
is answered, without the app opening Qdrant. Stop ends the child; a re-run completes the collection.

Real parts: the app (AppTest), its Runtime, embedded Qdrant in the shared temp data folder, the real ONNX
model (the child loads its own). The child is only held at one progress message (it waits for the app's
answer to each), so the checks run mid-ingest, with chunks written and no snapshot of the new collection yet.
Not timed: ``ragcore bench browser-ingest`` measures what the lower priority buys."""

from __future__ import annotations

import os
import threading
import time
import traceback
import uuid

import pytest

from ragcore.engine import ingest_process
from ragcore.storage import locking
from ragcore.storage.schema import StoreError
from tests.support.app_support import (  # noqa: F401
    app_env, ask, html_table, ok, shared_runtime, started, wait_for_job,
)

pytestmark = pytest.mark.slow
LIB = "pages/library.py"
FILES = 40


def _folder(tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(FILES):
        (folder / f"n{i:02d}.md").write_text(f"# Note {i}\n\n" + f"Sentence {i} about rotating the audit keys. " * 150)
    return folder


def _no_lock_waits(m) -> list[str]:
    """Every wait for the store's lock from now on fails at once, recorded with where it came from."""
    waits: list[str] = []

    def no_wait(path, until):
        waits.append("".join(traceback.format_stack(limit=14)))
        raise StoreError("the test's child holds the store")

    m.setattr(locking, "wait_for_folder_lock", no_wait)
    return waits


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_the_app_reads_and_answers_while_its_child_process_ingests_and_stop_ends_it(app_env, tmp_path, monkeypatch):
    folder = _folder(tmp_path)
    rt = shared_runtime()
    name = f"child-{uuid.uuid4().hex[:6]}"
    held, gate = threading.Event(), threading.Event()
    real = ingest_process.ingest_in_process

    def held_ingest(engine, paths, collection, *, progress=None, **kw):  # the real child, held once mid-way
        def gated(done, total, path):
            if done >= 5 and not gate.is_set():
                held.set()
                gate.wait(600)  # the child waits for this answer, holding the store's lock
            progress(done, total, path)
        return real(engine, paths, collection, progress=gated, **kw)

    monkeypatch.setattr(ingest_process, "ingest_in_process", held_ingest)
    at = started(LIB)
    at.text_input(key="ing_folder").set_value(str(folder)).run()
    at.text_input(key="ing_new_name").set_value(name).run()
    at.button(key="ing_go_folder").click().run()
    ok(at)
    job = rt.job
    try:
        assert job.running and job.collection == name
        assert held.wait(600), "the ingest never reached its 5th file"
        pid, nice = job.worker
        assert pid != os.getpid() and nice > os.getpriority(os.PRIO_PROCESS, 0), (pid, nice)
        store = rt.engine.store
        assert locking.folder_locked(store.path) and not store.opened  # the child holds the store, not the app
        assert job.chunks_written > 0 and not store.snapshots.has_manifest(name)
        # no read may need the lock: one that tries is recorded (where it came from) and fails at once
        with monkeypatch.context() as m:  # until the Stop, whose record of the cancel is a write
            waits = _no_lock_waits(m)
            opens = store._conn.opens

            # the Library: its Collections tab (every collection's bar, model and state), the new collection's documents
            rt.invalidate_collections()
            at.run()
            assert not waits, waits[0]
            ok(at)
            rows = html_table(at, "rc-cols").set_index("collection")
            assert {"guide", name} <= set(rows.index) and rows.loc[name, "documents"] == 0
            assert rows.loc["guide", "documents"] > 0
            lib = started(LIB, cfg_collection=name)
            ok(lib)

            # a question on another collection is answered
            nb = started(cfg_collection="guide")
            ask(nb)
            assert any("threshold applies" in m.value for m in nb.markdown)
            assert not waits, waits[0]
            assert store._conn.opens == opens and locking.folder_locked(store.path), "the app opened Qdrant"

        # Stop: the child ends, what it wrote is kept
        at.button(key=f"ing_cancel_{job.id}").click().run()
        assert job.cancel_event.is_set()
    finally:
        gate.set()
    wait_for_job(at, timeout=600)
    assert job.cancelled and not job.error, job.error
    deadline = time.monotonic() + 60
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _gone(pid), "the ingest process still runs after Stop"
    assert "cancelled after" in job.cancel_summary()
    info = rt.engine.store.info(name)
    assert 0 < info.documents < FILES and info.incomplete
    # a re-run completes it
    rt.engine.ingest([folder], name, calibrate=False)
    assert rt.engine.store.info(name).documents == FILES
    rt.engine.drop(name)
