"""Reading a git repository through the ``git`` program: refs, trees, blobs, diffs, work-tree state.

Why the program and not a library: reading is not where an ingest's time goes, and the program
adds nothing to install. Reading every blob of a commit of a real repository took 72 ms with
``git ls-tree -r -z`` + one ``git cat-file --batch``, 196 ms with dulwich and 201 ms with pygit2
(2,089 files, 9.5 MB, packed; loose objects: 303 / 326 / 286 ms); in ``ragcore bench git``'s run
(1,773 files) 48 ms, 69 ms and 41 ms, against 528 s for the whole ingest (bench/results/git.md).
With the three this close, ``git`` wins on what else it gives: it is on every machine that has a
repository, reads every object format, pack and extension its version knows, and is no dependency.
Everything is read from objects, never from the work
tree, so a bare repository and a ref that is not checked out read alike.

Every command runs with ``--no-optional-locks`` semantics where it matters (``git status``) and a
fixed environment (no pager, no prompts): reading never writes to the repository.
"""

from __future__ import annotations

import os
import re
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

SUBMODULE_MODE = "160000"
SYMLINK_MODE = "120000"
_HEX = re.compile(r"[0-9a-f]{4,64}")
_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_PAGER": "cat", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"}


class GitError(Exception):
    """A git command failed or a repository/ref is not there; the message is meant for humans."""


@dataclass(frozen=True)
class Repo:
    """An opened repository: its git folder, the folder shared by its work trees, and its work
    tree's top folder (None for a bare repository)."""

    git_dir: Path
    common_dir: Path
    top: Path | None

    @property
    def bare(self) -> bool:
        return self.top is None

    @property
    def location(self) -> Path:
        """The folder a user names the repository by."""
        return self.top or self.common_dir


@dataclass(frozen=True)
class TreeEntry:
    path: str
    mode: str
    kind: str  # blob | commit (a submodule) | tree
    sha: str
    size: int | None  # None for a submodule


@dataclass(frozen=True)
class Change:
    """One line of ``git diff --name-status``: A, M, T, D, R or C; ``old_path`` for R and C."""

    status: str
    path: str
    old_path: str | None = None


def run_git(cwd: Path | str, *args: str, input: bytes | None = None) -> bytes:
    """``git args`` in ``cwd`` (stdout); GitError with git's own first line of complaint."""
    env = {**os.environ, **_ENV}
    try:
        done = subprocess.run(["git", *args], cwd=str(cwd), input=input, capture_output=True, env=env, check=False)
    except FileNotFoundError:
        raise GitError("the git program is not installed (it reads the repository)") from None
    if done.returncode != 0:
        msg = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(msg[-1] if msg else f"git {args[0]} failed (exit {done.returncode})")
    return done.stdout


def open_repo(path: Path | str) -> Repo:
    """The repository at or above ``path`` (a work tree, a folder inside one, or a bare repository)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise GitError(f"no such folder: {p}")
    start = p if p.is_dir() else p.parent
    try:
        out = run_git(start, "rev-parse", "--absolute-git-dir", "--git-common-dir", "--is-bare-repository")
    except GitError:
        raise GitError(f"not a git repository: {p}") from None
    git_dir, common, bare = out.decode().splitlines()[:3]
    common_dir = (Path(git_dir) / common).resolve() if not os.path.isabs(common) else Path(common).resolve()
    top = None
    if bare != "true":
        top = Path(run_git(start, "rev-parse", "--show-toplevel").decode().strip()).resolve()
    return Repo(Path(git_dir).resolve(), common_dir, top)


def resolve(repo: Repo, ref: str) -> str:
    """The commit ``ref`` names (a branch, tag, remote branch or commit id, short or full)."""
    if not ref or ref.startswith("-") or "\0" in ref:
        raise GitError(f"not a ref: {ref!r}")
    try:
        return run_git(repo.git_dir, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()
    except GitError:
        raise GitError(f"no branch, tag or commit named {ref!r} in {repo.location}") from None


def full_ref_name(repo: Repo, ref: str) -> str | None:
    """``refs/heads/main`` for ``main``, ``refs/tags/v2.0`` for ``v2.0``; None for a commit id."""
    try:
        name = run_git(repo.git_dir, "rev-parse", "--symbolic-full-name", ref).decode().strip()
    except GitError:
        return None
    return name or None


def is_commit_id(ref: str, commit: str) -> bool:
    """Whether ``ref`` was written as (a prefix of) the commit id rather than as a name."""
    return bool(_HEX.fullmatch(ref)) and commit.startswith(ref)


def commit_time(repo: Repo, commit: str) -> str:
    """The committer date, ISO 8601 with its offset."""
    return run_git(repo.git_dir, "show", "-s", "--format=%cI", commit).decode().strip()


def has_commit(repo: Repo, commit: str) -> bool:
    try:
        run_git(repo.git_dir, "cat-file", "-e", f"{commit}^{{commit}}")
        return True
    except GitError:
        return False


def list_tree(repo: Repo, commit: str, prefix: str = "") -> list[TreeEntry]:
    """Every file of the commit's tree (below ``prefix``, a folder), with mode, object id and size."""
    args = ["ls-tree", "-r", "-z", "--long", "--full-tree", commit]
    if prefix:
        args += ["--", prefix.rstrip("/") + "/"]
    out = run_git(repo.git_dir, *args)
    entries = []
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, name = rec.partition(b"\t")
        mode, kind, sha, size = meta.decode().split()
        path = name.decode("utf-8", "surrogateescape")
        entries.append(TreeEntry(path, mode, kind, sha, None if size == "-" else int(size)))
    return entries


def read_blobs(repo: Repo, shas: Sequence[str]) -> Iterator[tuple[str, bytes]]:
    """(id, bytes) of each blob, in order, from one ``git cat-file --batch``.

    The ids are written from a thread while the contents are read: with both in one thread a
    long list fills the pipe's buffer both ways and the two programs wait on each other."""
    if not shas:
        return
    proc = subprocess.Popen(["git", "cat-file", "--batch"], cwd=str(repo.git_dir), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={**os.environ, **_ENV})
    assert proc.stdin is not None and proc.stdout is not None
    feeder = threading.Thread(target=_feed, args=(proc.stdin, shas), name="ragcore-git-feed", daemon=True)
    feeder.start()
    try:
        for sha in shas:
            header = proc.stdout.readline().split()
            if len(header) < 3 or header[1] != b"blob":
                raise GitError(f"object {sha} is not a readable blob")
            data = proc.stdout.read(int(header[2]))
            proc.stdout.read(1)  # the newline after each object
            yield sha, data
    finally:
        proc.stdout.close()
        proc.kill()
        proc.wait()
        feeder.join()


def _feed(pipe, shas: Sequence[str]) -> None:
    try:
        for i in range(0, len(shas), 512):
            pipe.write(("\n".join(shas[i:i + 512]) + "\n").encode())
        pipe.close()
    except (BrokenPipeError, ValueError, OSError):  # the reader stopped early (an error): nothing more to send
        pass


def read_file(repo: Repo, commit: str, path: str) -> bytes:
    """The bytes of ``path`` as of ``commit`` (``git show commit:path``)."""
    return run_git(repo.git_dir, "cat-file", "blob", f"{commit}:{path}")


def diff(repo: Repo, old: str, new: str, prefix: str = "") -> list[Change]:
    """Files changed from ``old`` to ``new`` with renames found (``-M``), parsed from ``-z`` output."""
    args = ["diff", "--name-status", "-z", "-M", "--no-ext-diff", old, new]
    if prefix:
        args += ["--", prefix.rstrip("/") + "/"]
    fields = run_git(repo.git_dir, *args).split(b"\0")
    changes, i = [], 0
    while i < len(fields) and fields[i]:
        status = fields[i].decode()[0]
        if status in "RC":
            changes.append(Change(status, _name(fields[i + 2]), _name(fields[i + 1])))
            i += 3
        else:
            changes.append(Change(status, _name(fields[i + 1])))
            i += 2
    return changes


def _name(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


def commits_between(repo: Repo, old: str, new: str) -> int:
    """How many commits ``new`` has that ``old`` has not (``git rev-list --count old..new``)."""
    return int(run_git(repo.git_dir, "rev-list", "--count", f"{old}..{new}").decode().strip() or 0)


def head(repo: Repo) -> tuple[str | None, str | None]:
    """(HEAD's commit, its branch name or None when detached); (None, None) before the first commit."""
    try:
        commit = run_git(repo.git_dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").decode().strip()
    except GitError:
        return None, None
    try:
        branch = run_git(repo.git_dir, "symbolic-ref", "--quiet", "--short", "HEAD").decode().strip() or None
    except GitError:
        branch = None
    return commit, branch


def is_dirty(repo: Repo, folder: Path | None = None) -> bool:
    """Whether the work tree (below ``folder``) differs from HEAD: changed, staged or untracked files."""
    if repo.top is None:
        return False
    args = ["status", "--porcelain", "-z", "--untracked-files=normal"]
    if folder is not None and folder.resolve() != repo.top:
        args += ["--", str(folder.resolve().relative_to(repo.top))]
    return bool(run_git(repo.top, *args).strip(b"\0"))


def remote_url(repo: Repo) -> str | None:
    """The URL of ``origin``, else of the first remote; None when the repository has none."""
    try:
        names = run_git(repo.git_dir, "remote").decode().split()
    except GitError:
        return None
    if not names:
        return None
    name = "origin" if "origin" in names else names[0]
    try:
        return run_git(repo.git_dir, "remote", "get-url", name).decode().strip() or None
    except GitError:
        return None
