"""Collections from git over HTTP: /api/projects, source and staleness in /api/collections, and an
ingest job that reads a ref of a known repository (a real server on 127.0.0.1, real repositories)."""

from __future__ import annotations

import time

import httpx
import pytest

from ragcore.engine.engine import Engine
from tests.integration.service.conftest import base_settings
from tests.support.gitrepos import docs_repo


@pytest.fixture(scope="module")
def served_git(tmp_path_factory: pytest.TempPathFactory, encoder, start_server):
    repo = docs_repo(tmp_path_factory.mktemp("git"))
    data = tmp_path_factory.mktemp("git-data")
    engine = Engine(base_settings(data), encoder=encoder)
    engine.ingest_ref(repo.work, "v1.0", "harbour-v1", calibrate=False)
    engine.close()
    return repo, start_server(data)


def _wait(url: str, job_id: str) -> dict:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        state = httpx.get(f"{url}/api/jobs/{job_id}").json()
        if state["state"] not in ("queued", "running"):
            return state
        time.sleep(0.2)
    raise AssertionError("the ingest job did not finish")


def test_projects_collections_and_a_ref_ingest_job(served_git) -> None:
    repo, served = served_git
    (row,) = httpx.get(served.url + "/api/collections").json()
    assert row["source"]["commit"] == repo.first and row["source"]["ref"] == "v1.0"
    assert row["source"]["repository"] == "harbour" and row["staleness"]["state"] == "current"
    assert str(repo.work.parent) not in str(row)  # no server path goes out
    (project,) = httpx.get(served.url + "/api/projects").json()
    assert project["remote"] == repo.remote and [r["ref"] for r in project["refs"]] == ["v1.0"]
    job = httpx.post(f"{served.url}/api/projects/{project['id']}/ingest", json={"ref": "feature"})
    assert job.status_code == 202
    done = _wait(served.url, job.json()["id"])
    assert done["state"] == "done", done
    assert done["collection"] == "harbour-feature"
    assert done["report"]["source"]["commit"] == repo.feature and not done["report"]["incremental"]
    assert {f["path"] for f in done["report"]["skipped_files"]} == {"vendor/sublib", "docs/manual.pdf", "docs/blob.md"}
    assert done["report"]["chunks_embedded"] == 1  # only fog.md is new: the rest comes from the repository's cache
    (project,) = httpx.get(served.url + "/api/projects").json()
    assert sorted(r["ref"] for r in project["refs"]) == ["feature", "v1.0"]


def test_unknown_project_and_bad_ref_are_refused(served_git) -> None:
    repo, served = served_git
    (project,) = httpx.get(served.url + "/api/projects").json()
    r = httpx.post(f"{served.url}/api/projects/nope/ingest", json={"ref": "main"})
    assert r.status_code == 404 and "GET /api/projects" in r.json()["error"]["message"]
    r = httpx.post(f"{served.url}/api/projects/{project['id']}/ingest", json={"ref": "no-such-branch"})
    assert r.status_code == 422 and "no-such-branch" in r.json()["error"]["message"]
    r = httpx.post(f"{served.url}/api/projects/{project['id']}/ingest", json={"ref": "main", "collection": "bad/name"})
    assert r.status_code == 422
