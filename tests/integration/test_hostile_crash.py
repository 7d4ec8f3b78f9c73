"""State after a crash (issue 39, item 6). Before: after kill -9 of `ragcore serve` during an
upload the job said `running` forever (GET and DELETE), and a collection whose ingest did not finish
answered `status ok` with `corpus_version: null` over HTTP and `--json`. Now the job is
`interrupted`, saying how far it got and that what it wrote is kept, and such a collection answers
`partial` with `metadata.incomplete` and a note. A real `ragcore serve` process killed with SIGKILL;
Qdrant Edge in a temp folder; the real ONNX model."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ragcore.cli.main import main
from ragcore.engine.collections_admin import Cancelled
from ragcore.settings.service import ServiceSettings
from tests.conftest import REPO, write_corpus
from tests.integration.service.conftest import serve_in_thread


def _page(i: int) -> bytes:
    return (f"# Island note {i}\n\n" + " ".join(f"Observation {i}.{j}: the colony on stack {j} counted {i * j} "
                                               f"nesting pairs in survey {i}." for j in range(40))).encode()


def _serve(data: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGCORE_")}
    env.update(PYTHONPATH=str(REPO), RAGCORE_DATA_DIR=str(data))
    proc = subprocess.Popen([sys.executable, "-m", "ragcore.cli.main", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    end = time.monotonic() + 300
    while time.monotonic() < end:
        assert proc.poll() is None, "the server stopped while starting"
        try:
            if httpx.get(url + "/healthz", timeout=2).status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise AssertionError("the server did not start")


def test_a_job_whose_server_was_killed_is_interrupted_not_running(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first, url = _serve(data)
    try:
        many = [("files", (f"note-{i:02d}.md", _page(i))) for i in range(80)]
        job = httpx.post(url + "/api/collections/islands/ingest", files=many, timeout=60).json()
        end = time.monotonic() + 300
        while httpx.get(f"{url}/api/jobs/{job['id']}", timeout=30).json()["state"] != "running":
            assert time.monotonic() < end, "the job never started"
            time.sleep(0.1)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    second, url = _serve(data)  # the same data folder, as after a restart
    try:
        got = httpx.get(f"{url}/api/jobs/{job['id']}", timeout=30)
        assert got.status_code == 200 and got.json()["state"] == "interrupted", got.text
        assert "What it wrote is kept" in got.json()["error"] and "of 80 files" in got.json()["error"]
        assert httpx.delete(f"{url}/api/jobs/{job['id']}", timeout=30).json()["state"] == "interrupted"
        saved = json.loads((data / "serve-jobs" / f"{job['id']}.json").read_text())
        assert saved["state"] == "interrupted"  # stays said
    finally:
        second.terminate()
        second.wait(30)


@pytest.fixture
def cut_short(tmp_path: Path, make_engine):
    """A collection whose first ingest stopped after its first written batch, leaving what a SIGKILL
    leaves: points, and no metadata of a finished ingest (no corpus version)."""
    engine = make_engine(data_dir=tmp_path / "data")
    root = write_corpus(tmp_path / "notes", {f"note-{i:02d}.md": _page(i).decode() for i in range(30)})

    def stop(written: int, queued: int) -> None:
        if written:
            raise Cancelled()

    with pytest.raises(Cancelled):
        engine.ingest([root], "islands", calibrate=False, chunk_progress=stop)
    assert engine.store.count("islands") > 0 and engine.store.read_meta("islands").get("corpus_version") is None
    return engine, tmp_path


def test_an_incomplete_collection_answers_partial_with_a_note(cut_short, capsys) -> None:
    engine, tmp = cut_short
    question = "How many nesting pairs did the colony on stack 3 count?"
    answer = engine.ask(question, collection="islands")
    assert answer.status == "partial" and answer.metadata["incomplete"] is True
    assert any(n.startswith("incomplete collection") for n in answer.validation.notes)

    engine.close()
    code = main(["--data-dir", str(tmp / "data"), "ask", "--json", "-c", "islands", question])
    cli = json.loads(capsys.readouterr().out)
    assert code == 0 and cli["status"] == "partial" and cli["metadata"]["incomplete"] is True

    served = serve_in_thread(engine, ServiceSettings())
    try:
        got = httpx.post(served.url + "/api/ask", json={"question": question, "collection": "islands"}, timeout=120)
        assert got.status_code == 200 and got.json()["status"] == "partial"
        assert got.json()["metadata"]["incomplete"] is True
    finally:
        served.stop()
