"""Reading refs from git objects (ingest/gitrepo.py, gitsource.py) on real repositories built
with the git program: what is read, what is skipped and why, what changed, what moved."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragcore.ingest import gitrepo
from ragcore.ingest.gitsource import change_plan, folder_record, ref_record, staleness, tree_files
from tests.support.gitrepos import GUIDE_V1, GUIDE_V2, INSTALL, commit_all, docs_repo, git, write


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory):
    return docs_repo(tmp_path_factory.mktemp("git"))


def _files(path: Path, ref: str) -> dict[str, bytes]:
    r = gitrepo.open_repo(path)
    tf = tree_files(r, gitrepo.resolve(r, ref), max_bytes=10_000_000)
    return {s.rel: s.data for s in tf.sources}


def test_a_ref_is_read_from_objects_not_the_work_tree(repo) -> None:
    files = _files(repo.work, "v1.0")  # not checked out: main is
    assert files["docs/guide.md"].decode() == GUIDE_V1
    assert files["docs/install.md"].decode() == INSTALL
    assert "docs/setup.md" not in files
    assert _files(repo.work, "main")["docs/guide.md"].decode() == GUIDE_V2
    assert "docs/fog.md" in _files(repo.work, "feature")


def test_a_bare_clone_reads_like_the_work_tree(repo) -> None:
    assert gitrepo.open_repo(repo.bare).bare
    assert _files(repo.bare, "main") == _files(repo.work, "main")
    assert _files(repo.bare, repo.feature[:10]) == _files(repo.work, "feature")


def test_submodule_lfs_pointer_and_binary_are_skipped_with_a_reason(repo) -> None:
    r = gitrepo.open_repo(repo.work)
    tf = tree_files(r, repo.first, max_bytes=10_000_000)
    reasons = {s.path: s.reason for s in tf.skipped}
    assert "submodule" in reasons["vendor/sublib"]
    assert "LFS pointer" in reasons["docs/manual.pdf"]
    assert "binary" in reasons["docs/blob.md"]
    assert {s.rel for s in tf.sources} == {"docs/guide.md", "docs/install.md", "docs/old.md"}
    assert tf.other_types >= 1  # .gitattributes, .gitmodules, images/logo.png: not ours to read, not listed


def test_a_file_over_the_size_limit_is_refused_without_reading_it(repo) -> None:
    r = gitrepo.open_repo(repo.work)
    tf = tree_files(r, repo.first, max_bytes=100)
    refused = {s.rel: s.problem for s in tf.sources if s.problem}
    assert "over the" in refused["docs/guide.md"]


def test_refs_tags_and_commit_ids_are_recorded(repo) -> None:
    r = gitrepo.open_repo(repo.bare)
    main = ref_record(r, "main")
    assert (main.mode, main.ref_name, main.commit, main.dirty) == ("ref", "refs/heads/main", repo.second, False)
    assert main.remote == repo.remote and main.commit_time
    tag = ref_record(r, "v1.0")
    assert (tag.mode, tag.ref_name, tag.commit) == ("ref", "refs/tags/v1.0", repo.first)
    pinned = ref_record(r, repo.feature[:12])
    assert (pinned.mode, pinned.commit, pinned.ref_name) == ("commit", repo.feature, None)
    with pytest.raises(gitrepo.GitError, match="no branch, tag or commit named 'nope'"):
        ref_record(r, "nope")
    with pytest.raises(gitrepo.GitError, match="not a ref"):
        ref_record(r, "--output=/tmp/x")


def test_the_change_plan_has_the_rename_and_the_delete(repo) -> None:
    plan = change_plan(gitrepo.open_repo(repo.work), repo.first, repo.second)
    assert plan.read == {"docs/guide.md", "docs/setup.md"}
    assert plan.remove == {"docs/install.md", "docs/old.md"}
    assert any(c.status == "R" and c.old_path == "docs/install.md" for c in plan.changes)


def test_a_folder_in_a_work_tree_records_head_and_dirty(repo, tmp_path: Path) -> None:
    rec = folder_record(repo.detached / "docs")
    assert (rec.mode, rec.commit, rec.ref, rec.subdir, rec.dirty) == ("path", repo.first, None, "docs", False)
    write(repo.detached, {"docs/guide.md": "# changed here\n"})
    try:
        assert folder_record(repo.detached / "docs").dirty is True
        assert staleness(folder_record(repo.detached / "docs")).state == "dirty"
        assert folder_record(repo.detached / "images").dirty is False  # the change is in another folder
    finally:
        git(repo.detached, "checkout", "-q", "--", "docs/guide.md")
    plain = tmp_path / "plain"
    plain.mkdir()
    assert folder_record(plain).mode == "path" and folder_record(plain).commit is None


def test_staleness_counts_commits_and_files_when_the_ref_moves(tmp_path: Path) -> None:
    work = tmp_path / "r"
    work.mkdir()
    git(work, "init", "-q")
    write(work, {f"f{i}.md": f"# File {i}\n\ntext {i}\n" for i in range(5)})
    commit_all(work, "one")
    rec = ref_record(gitrepo.open_repo(work), "main")
    assert staleness(rec).state == "current"
    write(work, {"f1.md": "# changed\n"})
    commit_all(work, "two")
    write(work, {"f2.md": "# changed\n", "new.md": "# new\n"})
    commit_all(work, "three")
    moved = staleness(rec)
    assert (moved.state, moved.commits_behind, moved.files_changed) == ("moved", 2, 3)
    pinned = ref_record(gitrepo.open_repo(work), rec.commit[:8])
    assert staleness(pinned).state == "pinned"
