"""AppTest: collections from git in the app — the Library ingests a ref and shows its source, the viewer
shows the file as of the collection's commit, and a notebook cell re-runs on another ref with its diff."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.support.app_support import app_env, captions, html_table, ok, shared_runtime, started, wait_for_job  # noqa: F401
from tests.support.gitrepos import docs_repo

pytestmark = pytest.mark.slow
LIB = "pages/library.py"
NB = "pages/notebook.py"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory):
    return docs_repo(tmp_path_factory.mktemp("git"))


def test_library_ingests_a_ref_and_the_viewer_shows_that_commit(app_env, repo):
    name = f"harbour-{uuid.uuid4().hex[:6]}"
    at = started(LIB)
    at.text_input(key="ing_git_repo").set_value(str(repo.bare)).run()
    at.text_input(key="ing_git_ref").set_value("v1.0").run()
    at.text_input(key="ing_new_name").set_value(name).run()
    at.button(key="ing_go_ref").click().run()
    wait_for_job(at)
    ok(at)
    assert any("finished" in s.value for s in at.success), [s.value for s in at.success]
    assert f"at commit {repo.first[:12]}" in captions(at)
    skipped = next(d.value for d in at.dataframe if list(d.value.columns) == ["file", "reason"])
    assert set(skipped["file"]) == {"vendor/sublib", "docs/manual.pdf", "docs/blob.md"}
    cols = html_table(at, "rc-cols")
    row = cols[cols["collection"] == name].iloc[0]
    assert row["git source"] == f"ref v1.0 @ {repo.first[:12]} · current" and row["state"] == "see git source"
    # the viewer reads the file at the collection's commit (Monday), not the work tree's main (Thursday)
    at.query_params.update({"path": "docs/guide.md", "lines": "10-11", "collection": name})
    at.run()
    ok(at)
    html = next(h.value for h in at.html if 'class="rc-src"' in h.value)
    assert "printed every Monday" in html and "Thursday" not in html
    assert "read from git at the recorded commit" in captions(at)
    assert f"As of commit {repo.first[:12]}" in captions(at)


def test_a_cell_re_runs_on_another_ref_and_shows_the_diff(app_env, repo):
    rt = shared_runtime()
    main, tag = f"hm-{uuid.uuid4().hex[:6]}", f"hv-{uuid.uuid4().hex[:6]}"
    rt.engine.ingest_ref(repo.work, "main", main, calibrate=False)
    rt.engine.ingest_ref(repo.work, "v1.0", tag, calibrate=False)
    rt.invalidate_collections()
    at = started(NB, cfg_collection=main)
    at.chat_input[0].set_value("On which day are the tide tables printed?").run()
    ok(at)
    cell = json.loads((app_env / "notebooks" / f"{main}.json").read_text())["cells"][0]
    assert cell["runs"][0]["answer"]["metadata"]["source"]["commit"] == repo.second
    at.button(key=f"rerun_on_{cell['id']}_{tag}").click().run()
    ok(at)
    cell = json.loads((app_env / "notebooks" / f"{main}.json").read_text())["cells"][0]
    first, second = (r["answer"] for r in cell["runs"])
    assert second["metadata"]["collection"] == tag and second["metadata"]["source"]["commit"] == repo.first
    assert "Thursday" in first["answer"] and "Monday" in second["answer"]
    assert any("What changed since the previous run" in e.label for e in at.expander)
