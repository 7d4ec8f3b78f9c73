"""Several processes on one embedded store. Embedded Qdrant lets one process open its folder at a
time; a Store holds it only inside a session (a write, or reading a collection that has no query
snapshot), so readers never block a writer (tests/test_snapshot.py). Two processes that both need
Qdrant itself wait their turn (bounded), then get a clear message that names the way to share a
store (a Qdrant server). Real processes, real Qdrant."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from ragcore.storage import locking
from ragcore.storage import store as store_mod
from ragcore.settings.config import RagcoreSettings
from ragcore.storage.store import Store, StoreError
from tests.conftest import REPO, write_corpus

HOLD = textwrap.dedent("""
    import sys, time
    from ragcore.settings.config import RagcoreSettings
    from ragcore.storage.store import Store
    st = Store(RagcoreSettings(data_dir=sys.argv[1]))
    st.client  # opens the folder and takes its lock
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
    st.close()
""")


def _holder(data_dir: Path, seconds: float) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLD, str(data_dir), str(seconds)], stdout=subprocess.PIPE, text=True,
                         cwd=REPO)
    assert p.stdout is not None and p.stdout.readline().strip() == "holding"
    return p


def test_the_lock_is_held_only_inside_a_session(tmp_path: Path) -> None:
    st = Store(RagcoreSettings(data_dir=tmp_path))
    with st.session():
        st.ensure_collection("c")
        assert store_mod.folder_locked(st.path)
        with st.session(write=False):  # sessions nest: the inner one does not close the client
            assert st.opened
        assert st.opened
    assert not st.opened and not store_mod.folder_locked(st.path)
    assert st.collection_names() == ["c"] and not st.opened  # read from the store's folder


def test_second_process_waits_for_the_lock(tmp_path: Path) -> None:
    holder = _holder(tmp_path, 1.5)
    try:
        t0 = time.monotonic()
        st = Store(RagcoreSettings(data_dir=tmp_path))
        st.client.get_collections()
        waited = time.monotonic() - t0
        st.close()
    finally:
        holder.wait(timeout=30)
    assert waited > 0.5  # it did wait for the other process, and then it worked


def test_busy_store_fails_clearly_after_the_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(locking, "LOCK_WAIT_S", 0.5)
    holder = _holder(tmp_path, 20)
    try:
        with pytest.raises(StoreError) as err:
            Store(RagcoreSettings(data_dir=tmp_path)).client
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert "RAGCORE_QDRANT_URL" in str(err.value) and "another process" in str(err.value)


@pytest.mark.slow
def test_concurrent_cli_asks_all_answer(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "c", {"a.md": "# Notes\n\nThe backup runs every night at two o'clock.\n"})
    env = {**os.environ, "RAGCORE_DATA_DIR": str(tmp_path / "data")}
    cli = [sys.executable, "-m", "ragcore.cli.main"]
    subprocess.run([*cli, "ingest", str(corpus), "-c", "n"], env=env, check=True, capture_output=True, cwd=REPO)
    asks = [subprocess.Popen([*cli, "ask", "When does the backup run?", "-c", "n", "--json"], env=env, cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    results = [p.communicate(timeout=300) for p in asks]
    assert [p.returncode for p in asks] == [0, 0, 0, 0], [err[-400:] for _out, err in results]
