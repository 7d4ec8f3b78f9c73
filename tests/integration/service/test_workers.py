"""Several server processes over one embedded data folder: `ragcore serve --workers 2` and a second
`ragcore serve`, all reading the collection from its query snapshots while one of them ingests
(the embedded store has one writer at a time; readers never open it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import httpx
import pytest

from bench.serve import wait_ready
from tests.conftest import REPO
from bench.support.scripted_openai import unused_port

QUESTION = "How does hybrid mode fuse the dense and sparse rankings?"


def _start(data, *extra: str) -> tuple[subprocess.Popen, str]:
    port = unused_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGCORE_")}
    env.update(PYTHONPATH=str(REPO), RAGCORE_DATA_DIR=str(data), RAGCORE_COLLECTION="guide",
               RAGCORE_CALIBRATED_BAR="false")
    proc = subprocess.Popen([sys.executable, "-m", "ragcore.cli.main", "serve", "--port", str(port), *extra],
                            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return proc, f"http://127.0.0.1:{port}"


@pytest.mark.slow
def test_readers_answer_from_snapshots_while_another_process_ingests(guide_data, tmp_path) -> None:
    data = tmp_path / "data"
    shutil.copytree(guide_data, data)
    procs = []
    try:
        (writer, w_url), (reader, r_url) = _start(data, "--workers", "2"), _start(data)
        procs = [writer, reader]
        wait_ready(w_url, writer)
        wait_ready(r_url, reader)
        before = httpx.get(r_url + "/api/collections").json()[0]
        files = [("files", (f"added-{i}.md", f"# Added page {i}\n\n".encode() + b"Lighthouse keepers log the weather. " * 200))
                 for i in range(24)]
        job = httpx.post(w_url + "/api/collections/guide/ingest", files=files).json()
        seen: list[tuple[str, str]] = []  # (job state before the question, corpus version it was answered from)
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:  # questions to both processes (and both workers) while the ingest runs
            state = httpx.get(f"{w_url}/api/jobs/{job['id']}").json()["state"]  # whichever worker answers
            if state in ("done", "failed", "cancelled"):
                break
            if len(seen) >= 24:
                time.sleep(1)
                continue
            for url in (r_url, w_url, w_url):
                answer = httpx.post(url + "/api/ask", json={"question": QUESTION}, timeout=120).json()
                assert answer["status"] in ("ok", "partial"), answer.get("error_message")
                seen.append((state, answer["metadata"]["corpus_version"]))
        assert state == "done"
        after = httpx.get(r_url + "/api/collections").json()[0]  # the reader sees the new snapshot
        assert after["documents"] == before["documents"] + 24 and after["corpus_version"] != before["corpus_version"]
        # while the writer held the store, questions were answered from the snapshot published before
        # it (the new one may show in the last round: it is published just before the job says done)
        assert ("running", before["corpus_version"]) in seen, seen
        assert {v for _, v in seen} <= {before["corpus_version"], after["corpus_version"]}, seen
        for url in (r_url, w_url, w_url):  # and every process answers from it
            answer = httpx.post(url + "/api/ask", json={"question": QUESTION}, timeout=120).json()
            assert answer["metadata"]["corpus_version"] == after["corpus_version"]
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
