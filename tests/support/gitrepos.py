"""Real git repositories for tests, built with the ``git`` program in a temp folder.

``docs_repo`` makes one repository with everything a collection from git meets: commits on two
branches, a tag, a rename, a deleted file, a binary, a Git LFS pointer, a submodule, a remote
(GitHub), a bare clone, a work tree with a detached HEAD, and uncommitted changes on demand.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

ENV = {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "Test",
       "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_NOSYSTEM": "1", "HOME": "/nonexistent"}

GUIDE_V1 = """# Guide

## Harbour lights

The harbour lights are switched on by the keeper at dusk every evening.
A green lamp marks the starboard side of the channel for arriving boats.

## Tide tables

Tide tables are printed every Monday and posted beside the ferry ticket office.
Spring tides reach four metres above chart datum in the outer basin.
"""

GUIDE_V2 = GUIDE_V1.replace("printed every Monday", "printed every Thursday")

INSTALL = """# Installing the beacon

Mount the beacon on the north pier with four stainless bolts.
The solar panel faces south and charges the battery within six hours of sun.
"""

OLD = """# Old notes

The lighthouse lens was polished with chalk and vinegar in the old days.
"""

FEATURE = """# Fog signals

The fog horn sounds two long blasts every ninety seconds in poor visibility.
"""

LFS_POINTER = (b"version https://git-lfs.github.com/spec/v1\n"
               b"oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n")


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **ENV}
    done = subprocess.run(["git", "-c", "protocol.file.allow=always", "-c", "init.defaultBranch=main", *args],
                          cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {done.stderr}")
    return done.stdout.strip()


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, body in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(body if isinstance(body, bytes) else body.encode())


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD")


@dataclass(frozen=True)
class DocsRepo:
    work: Path  # the work tree, main checked out
    bare: Path  # a bare clone
    detached: Path  # a second clone with a detached HEAD at v1.0
    first: str  # commit of v1.0
    second: str  # main's head: rename + delete + one changed section
    feature: str  # the feature branch's head (v1.0 + one file)
    remote: str = "https://github.com/acme/harbour-docs.git"


def docs_repo(tmp: Path) -> DocsRepo:
    sub = tmp / "sublib"
    sub.mkdir()
    git(sub, "init", "-q")
    write(sub, {"README.md": "# Sub library\n\nA library kept as a submodule.\n"})
    commit_all(sub, "sub")
    work = tmp / "harbour"
    work.mkdir()
    git(work, "init", "-q")
    write(work, {"docs/guide.md": GUIDE_V1, "docs/install.md": INSTALL, "docs/old.md": OLD,
                 "docs/blob.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
                 "docs/manual.pdf": LFS_POINTER, "images/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00binary",
                 ".gitattributes": "*.pdf filter=lfs diff=lfs merge=lfs -text\n"})
    git(work, "submodule", "add", "-q", str(sub), "vendor/sublib")
    first = commit_all(work, "first")
    git(work, "tag", "v1.0")
    git(work, "branch", "feature")
    git(work, "mv", "docs/install.md", "docs/setup.md")
    git(work, "rm", "-q", "docs/old.md")
    write(work, {"docs/guide.md": GUIDE_V2})
    second = commit_all(work, "rename install, drop old notes, tides on Thursday")
    git(work, "checkout", "-q", "feature")
    write(work, {"docs/fog.md": FEATURE})
    feature = commit_all(work, "fog signals")
    git(work, "checkout", "-q", "main")
    git(work, "remote", "add", "origin", DocsRepo.remote)
    bare = tmp / "harbour.git"
    git(tmp, "clone", "-q", "--bare", str(work), str(bare))
    git(bare, "remote", "set-url", "origin", DocsRepo.remote)
    detached = tmp / "detached"
    git(tmp, "clone", "-q", str(work), str(detached))
    git(detached, "checkout", "-q", "--detach", "v1.0")
    return DocsRepo(work, bare, detached, first, second, feature)


def lines_at(repo: Path, commit: str, path: str, start: int, end: int) -> str:
    """Lines ``start``..``end`` of ``path`` as of ``commit`` (``git show commit:path``)."""
    text = git(repo, "show", f"{commit}:{path}")
    return "\n".join(text.split("\n")[start - 1:end])
