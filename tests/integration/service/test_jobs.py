"""Ingest jobs over a real server: multipart uploads, progress, cancel (queued and running)."""

from __future__ import annotations

import shutil
import time

import httpx
import pytest

QUESTION = "Which bird nests on the cliffs of Skomer?"


def _page(i: int) -> bytes:
    return (f"# Island note {i}\n\n" + " ".join(f"Observation {i}.{j}: the colony on stack {j} counted {i * j} "
                                               f"nesting pairs in survey {i}." for j in range(40))).encode()


@pytest.fixture(scope="module")
def served(start_server, guide_data, tmp_path_factory):
    data = tmp_path_factory.mktemp("jobs") / "data"
    shutil.copytree(guide_data, data)  # the shared corpus stays as it is
    return start_server(data, max_upload_bytes=5_000_000)


def _wait(url: str, job_id: str, until, timeout: float = 180) -> dict:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        job = httpx.get(f"{url}/api/jobs/{job_id}").json()
        if until(job):
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} never got there: {job}")


def test_upload_ingest_and_ask(served) -> None:
    files = [("files", ("puffins.md", b"# Skomer\n\nAtlantic puffins nest in burrows on the cliffs of Skomer island "
                                      b"from April to July, and leave for the open sea in August.\n")),
             ("files", ("../../etc/gannets.txt", b"Gannets nest on Grassholm, west of Skomer.\n"))]
    r = httpx.post(served.url + "/api/collections/birds/ingest", files=files)
    assert r.status_code == 202
    job = r.json()
    assert job["state"] in ("queued", "running") and job["files"] == 2 and job["collection"] == "birds"
    job = _wait(served.url, job["id"], lambda j: j["finished"] is not None)
    assert job["state"] == "done" and job["report"]["added"] == 2 and job["progress"]["done"] == 2
    docs = httpx.get(served.url + "/api/collections/birds/documents").json()
    assert sorted(d["path"] for d in docs) == ["gannets.txt", "puffins.md"]  # names only: no folder of the client's
    answer = httpx.post(served.url + "/api/ask", json={"question": QUESTION, "collection": "birds"}, timeout=60).json()
    assert answer["status"] in ("ok", "partial") and "puffins" in answer["answer"]


def test_cancel_a_running_and_a_queued_job(served) -> None:
    many = [("files", (f"note-{i:02d}.md", _page(i))) for i in range(60)]
    running = httpx.post(served.url + "/api/collections/islands/ingest", files=many).json()
    queued = httpx.post(served.url + "/api/collections/later/ingest", files=[("files", ("x.md", _page(99)))]).json()
    assert httpx.delete(f"{served.url}/api/jobs/{queued['id']}").status_code == 200
    _wait(served.url, running["id"], lambda j: j["state"] == "running" and j["progress"]["done"] >= 1)
    assert httpx.delete(f"{served.url}/api/jobs/{running['id']}").json()["id"] == running["id"]
    stopped = _wait(served.url, running["id"], lambda j: j["finished"] is not None)
    assert stopped["state"] == "cancelled" and stopped["progress"]["total"] == 60
    assert _wait(served.url, queued["id"], lambda j: j["finished"] is not None)["state"] == "cancelled"
    names = {c["name"] for c in httpx.get(served.url + "/api/collections").json()}
    assert "later" not in names  # never started


def test_bad_uploads_and_unknown_jobs(served) -> None:
    assert httpx.post(served.url + "/api/collections/x/ingest", data={"files": "not a file"}).status_code == 422
    assert httpx.post(served.url + "/api/collections/x/ingest", files=[]).status_code in (422, 400)
    missing = httpx.get(served.url + "/api/jobs/job-0-nothing")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    assert httpx.delete(served.url + "/api/jobs/job-0-nothing").status_code == 404
