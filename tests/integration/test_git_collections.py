"""Collections from git refs, end to end: the real model, embedded Qdrant in a temp folder and real
repositories built with the git program (tests/support/gitrepos.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ragcore.citations.forge import with_permalinks
from ragcore.cli.main import main
from ragcore.engine.gitingest import collection_sources, projects
from tests.support.gitrepos import docs_repo, git, lines_at, write

QUESTION = "When are the harbour lights switched on?"


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory):
    return docs_repo(tmp_path_factory.mktemp("git"))


@pytest.fixture
def engine(make_engine):
    return make_engine()


def test_two_refs_side_by_side_answer_alike_and_link_to_their_commit(engine, repo) -> None:
    main_report = engine.ingest_ref(repo.bare, "main", "harbour-main", calibrate=False)
    tag_report = engine.ingest_ref(repo.work, "v1.0", "harbour-v1", calibrate=False)
    assert {o.path for o in tag_report.skipped} == {"vendor/sublib", "docs/manual.pdf", "docs/blob.md"}
    assert tag_report.source["commit"] == repo.first and main_report.source["commit"] == repo.second
    # the second ref shares most chunks with the first: the repository's cache embeds them once
    assert tag_report.chunks_embedded < tag_report.chunks_written
    a_main = engine.ask(QUESTION, collection="harbour-main")
    a_tag = engine.ask(QUESTION, collection="harbour-v1")
    assert a_main.status == a_tag.status == "ok"
    assert a_main.answer == a_tag.answer  # the section did not change between the refs
    assert [(c.path, c.start_line, c.end_line) for c in a_main.citations] == \
        [(c.path, c.start_line, c.end_line) for c in a_tag.citations]
    assert a_main.metadata["source"]["mode"] == "ref" and a_main.metadata["source"]["commit"] == repo.second
    assert a_tag.metadata["source"]["ref"] == "v1.0" and a_tag.metadata["source"]["dirty"] is False
    for answer, commit in ((a_main, repo.second), (a_tag, repo.first)):
        _check_permalinks(answer, repo.work, commit)


def _check_permalinks(answer, repo_path: Path, commit: str) -> None:
    """Each citation's GitHub link names the commit, the path and the lines of the cited text."""
    assert answer.citations
    for c in answer.citations:
        m = re.fullmatch(r"https://github\.com/acme/harbour-docs/blob/([0-9a-f]{40})/(.+)#L(\d+)(?:-L(\d+))?", c.permalink)
        assert m, c.permalink
        sha, path, start, end = m.group(1), m.group(2), int(m.group(3)), int(m.group(4) or m.group(3))
        assert (sha, path, start, end) == (commit, c.path, c.start_line, c.end_line)
        chunk = next(e.chunk for e in answer.evidence if e.n == c.n)
        assert lines_at(repo_path, sha, path, start, end) in chunk.text
        source = {**answer.metadata["source"], "subdir": ""}
        for remote, form in FORGES:  # the same citation as each forge would link it
            link = with_permalinks([c], {**source, "remote": remote})[0].permalink
            m = re.fullmatch(form, link)
            assert m, link
            got = (m.group(1), m.group(2), int(m.group(3)), int(m.group(4) or m.group(3)))
            assert got == (commit, c.path, c.start_line, c.end_line)
            assert lines_at(repo_path, got[0], got[1], got[2], got[3]) in chunk.text


FORGES = (
    ("git@gitlab.com:acme/harbour-docs.git", r"https://gitlab\.com/acme/harbour-docs/-/blob/(\w{40})/(.+)#L(\d+)(?:-(\d+))?"),
    ("https://codeberg.org/acme/harbour-docs.git", r"https://codeberg\.org/acme/harbour-docs/src/commit/(\w{40})/(.+)#L(\d+)(?:-L(\d+))?"),
    ("https://bitbucket.org/acme/harbour-docs.git", r"https://bitbucket\.org/acme/harbour-docs/src/(\w{40})/(.+)#lines-(\d+)(?::(\d+))?"),
)


def test_a_moved_ref_is_stale_and_a_re_ingest_reads_only_what_changed(engine, repo, tmp_path: Path) -> None:
    work = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo.work), str(work))
    git(work, "branch", "-q", "track", repo.first)
    first = engine.ingest_ref(work, "track", "track", calibrate=False)
    assert not first.incremental and first.count("added") == 3
    git(work, "branch", "-q", "-f", "track", repo.second)  # the ref moves: a rename, a delete, one changed section
    row = next(r for r in collection_sources(engine) if r["name"] == "track")
    assert row["staleness"]["state"] == "moved"
    assert (row["staleness"]["commits_behind"], row["staleness"]["files_changed"]) == (1, 3)
    again = engine.ingest_ref(work, "track", "track", calibrate=False)
    assert again.incremental
    assert {(o.path, o.status) for o in again.outcomes} == {
        ("docs/guide.md", "updated"), ("docs/setup.md", "added"), ("docs/install.md", "removed"), ("docs/old.md", "removed")}
    assert again.chunks_embedded <= 1  # setup.md is install.md renamed: its chunk comes from the cache
    assert sorted(p for p, _ in engine.documents("track")) == ["docs/guide.md", "docs/setup.md"]
    full = engine.ingest_ref(work, "main", "track-full", calibrate=False)
    assert full.corpus_version == again.corpus_version  # incremental ends where a full ingest does
    assert next(r for r in collection_sources(engine) if r["name"] == "track")["staleness"]["state"] == "current"


def test_projects_list_repositories_refs_and_collections(engine, repo) -> None:
    engine.ingest_ref(repo.work, "main", "p-main", calibrate=False)
    engine.ingest_ref(repo.work, "feature", "p-feature", calibrate=False)
    (proj,) = projects(engine)
    assert proj["remote"] == repo.remote
    assert {r["ref"]: [c["name"] for c in r["collections"]] for r in proj["refs"]} == {
        "main": ["p-main"], "feature": ["p-feature"]}


def test_a_folder_ingest_records_its_work_tree_head_and_dirty_state(engine, repo) -> None:
    write(repo.detached, {"docs/guide.md": "# Guide\n\nChanged in the work tree, not committed.\n"})
    try:
        report = engine.ingest([repo.detached / "docs"], "folder", calibrate=False)
    finally:
        git(repo.detached, "checkout", "-q", "--", "docs/guide.md")
    assert report.source["mode"] == "path" and report.source["commit"] == repo.first
    assert report.source["dirty"] is True and report.source["ref"] is None  # detached HEAD
    answer = engine.ask("What was the lighthouse lens polished with?", collection="folder")
    assert answer.metadata["source"] == {"mode": "path", "ref": None, "commit": repo.first, "dirty": True,
                                         "repository": "detached", "remote": None}
    assert all(c.permalink is None for c in answer.citations)  # no forge (its remote is a local folder)


def test_cli_ingest_ref_and_collections_json(repo, tmp_path: Path, capsys) -> None:
    data = str(tmp_path / "data")
    assert main(["--data-dir", data, "ingest", str(repo.bare), "--ref", "v1.0", "-c", "cli-v1", "--no-calibrate",
                 "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"source ref v1.0 at {repo.first[:12]}" in out and "not read vendor/sublib: submodule" in out
    assert main(["--data-dir", data, "collections", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["source"]["commit"] == repo.first and row["staleness"]["state"] == "current"
    assert "fingerprint" not in row["source"]
    assert main(["--data-dir", data, "ingest", str(repo.bare), "--ref", "nope", "-c", "x", "--quiet"]) == 2
    assert "no branch, tag or commit named 'nope'" in capsys.readouterr().err


def test_an_interrupted_ingest_makes_the_next_one_read_every_file(engine, repo, tmp_path: Path) -> None:
    from ragcore.engine.collections_admin import Cancelled

    engine.ingest_ref(repo.work, "v1.0", "cut", calibrate=False)

    def stop(done: int, total: int, current: str) -> None:
        raise Cancelled()

    with pytest.raises(Cancelled):
        engine.ingest_ref(repo.work, "main", "cut", calibrate=False, progress=stop)
    assert engine.store.read_meta("cut")["source"]["pending"] == repo.second
    again = engine.ingest_ref(repo.work, "main", "cut", calibrate=False)
    assert not again.incremental  # every file read (the cache keeps the model's work small)
    assert sorted(p for p, _ in engine.documents("cut")) == ["docs/guide.md", "docs/setup.md"]
    assert "pending" not in engine.store.read_meta("cut")["source"]
