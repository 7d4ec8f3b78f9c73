"""A collection's source in git: what a ref's tree gives ingest, what the collection records, and
what changed since.

Files enter ingest at the level of their bytes (``SourceFile.data``), so every reader in
``read/`` works on a ref exactly as on a folder. Submodules, symlinks, Git LFS pointers and
binary files are not read; each is reported with its reason (``Skipped``). The record
(:class:`SourceRecord`) travels with the collection's metadata and every answer; a re-ingest of
the same ref reads only the files ``git diff -M`` names between the recorded commit and the new one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, Mapping

from ragcore.ingest import gitrepo
from ragcore.ingest.discover import SourceFile
from ragcore.ingest.gitrepo import Change, GitError, Repo, TreeEntry
from ragcore.ingest.read.loaders import _too_big, kind_for
from ragcore.settings.redact import redact_url

SourceMode = Literal["ref", "commit", "path"]
LFS_HEADER = b"version https://git-lfs.github.com/spec/"
_LFS_MAX = 1024  # a pointer file is ~130 bytes: only blobs this small can be one
_BINARY_SAMPLE = 8000  # git's own test: a NUL byte in the first 8,000 bytes


@dataclass(frozen=True)
class SourceRecord:
    """Where a collection's files came from (stored as the collection's ``source`` metadata)."""

    mode: SourceMode
    repository: str | None = None  # the repository's folder (work tree, or the bare repository)
    repo_id: str | None = None  # names the repository's embedding cache and groups its refs
    remote: str | None = None  # the remote's URL without credentials
    ref: str | None = None  # as asked: "main", "v2.0", a commit id; the branch checked out for a folder
    ref_name: str | None = None  # refs/heads/main, refs/tags/v2.0; None for a commit id
    commit: str | None = None
    commit_time: str | None = None
    dirty: bool | None = None  # a folder in a work tree with changes not committed; False for a ref
    subdir: str = ""  # a folder's place in its work tree ("" for the top or a ref)

    def as_meta(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any] | None) -> "SourceRecord":
        fields = cls.__dataclass_fields__
        known = {k: v for k, v in (meta or {}).items() if k in fields}
        return cls(**known) if known.get("mode") else cls(mode="path")

    def for_answer(self) -> dict[str, Any]:
        """What every answer's metadata carries as ``source``."""
        return {"mode": self.mode, "ref": self.ref, "commit": self.commit, "dirty": self.dirty,
                "repository": self.repository, "remote": self.remote}


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


@dataclass(frozen=True)
class TreeFiles:
    """A ref's files for ingest, the entries not read (with why), and how many files of other
    types were left out silently (as a folder ingest leaves them)."""

    sources: list[SourceFile]
    skipped: list[Skipped]
    other_types: int = 0


def public_remote(url: str | None) -> str | None:
    """The remote's URL without credentials; a path on this machine (a clone of a local folder) is
    no remote a reader can open, and would show a server path: None."""
    if not url or url.startswith("file:") or ("://" not in url and not re.match(r"^[\w.-]+@[\w.-]+:", url)):
        return None
    return redact_url(url)


def repo_id(repo: Repo, remote: str | None = None) -> str:
    """A stable name for the repository: its remote's URL (so a bare clone and a work tree of one
    project share their cache and list as one project), else the folder its objects live in."""
    key = (remote or "").strip().rstrip("/").removesuffix(".git") or str(repo.common_dir)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def ref_record(repo: Repo, ref: str) -> SourceRecord:
    """The record of ``ref`` now: the commit it names, its time, the repository and its remote."""
    commit = gitrepo.resolve(repo, ref)
    commit_mode = gitrepo.is_commit_id(ref, commit)
    remote = public_remote(gitrepo.remote_url(repo))
    return SourceRecord(
        mode="commit" if commit_mode else "ref", repository=str(repo.location), repo_id=repo_id(repo, remote),
        remote=remote, ref=ref,
        ref_name=None if commit_mode else gitrepo.full_ref_name(repo, ref), commit=commit,
        commit_time=gitrepo.commit_time(repo, commit), dirty=False,
    )


def folder_record(folder: Path) -> SourceRecord:
    """A plain folder: inside a work tree it records that work tree's HEAD and whether the folder
    has changes not committed; elsewhere only the mode."""
    try:
        repo = gitrepo.open_repo(folder)
    except GitError:
        return SourceRecord(mode="path")
    commit, branch = gitrepo.head(repo)
    if repo.top is None or commit is None:
        return SourceRecord(mode="path")
    sub = folder.resolve().relative_to(repo.top).as_posix() if folder.resolve() != repo.top else ""
    remote = public_remote(gitrepo.remote_url(repo))
    return SourceRecord(
        mode="path", repository=str(repo.top), repo_id=repo_id(repo, remote), remote=remote,
        ref=branch, ref_name=f"refs/heads/{branch}" if branch else None, commit=commit,
        commit_time=gitrepo.commit_time(repo, commit), dirty=gitrepo.is_dirty(repo, folder), subdir=sub,
    )


# ------------------------------------------------------------------ the files of a tree


def tree_files(repo: Repo, commit: str, *, max_bytes: int, only: set[str] | None = None) -> TreeFiles:
    """The files of ``commit`` that ingest reads, as bytes (``only``: just these paths)."""
    entries = [e for e in gitrepo.list_tree(repo, commit) if only is None or e.path in only]
    skipped: list[Skipped] = []
    wanted: list[TreeEntry] = []
    probe: list[TreeEntry] = []  # small files of other types: read only to see whether they are LFS pointers
    others = 0
    for e in entries:
        reason = _entry_problem(e)
        if reason:
            skipped.append(Skipped(e.path, reason))
        elif kind_for(e.path) is not None:
            wanted.append(e)
        elif (e.size or 0) <= _LFS_MAX:
            probe.append(e)
        else:
            others += 1
    sources: list[SourceFile] = []
    big = [e for e in wanted if (e.size or 0) > max_bytes]
    sources += [SourceFile(rel=e.path, problem=_too_big(e.size or 0, max_bytes)) for e in big]
    small = [e for e in wanted if (e.size or 0) <= max_bytes]
    for e, data in zip(small + probe, _blobs(repo, small + probe)):
        reason = blob_problem(e.path, data)
        if reason:
            skipped.append(Skipped(e.path, reason))
        elif kind_for(e.path) is not None:
            sources.append(SourceFile(rel=e.path, data=data))
        else:
            others += 1
    sources.sort(key=lambda s: s.rel)
    skipped.sort(key=lambda s: s.path)
    return TreeFiles(sources, skipped, others)


def _blobs(repo: Repo, entries: list[TreeEntry]) -> list[bytes]:
    return [data for _, data in gitrepo.read_blobs(repo, [e.sha for e in entries])]


def _entry_problem(e: TreeEntry) -> str | None:
    if e.mode == gitrepo.SUBMODULE_MODE:
        return f"submodule at commit {e.sha[:12]} (not read: ingest its own repository)"
    if e.mode == gitrepo.SYMLINK_MODE:
        return "symlink in the repository (not followed)" if kind_for(e.path) is not None else None
    return None


def blob_problem(path: str, data: bytes) -> str | None:
    """Why a blob is not read: a Git LFS pointer, or binary content (PDF excepted: it has a reader)."""
    if data.startswith(LFS_HEADER):
        return "Git LFS pointer (the content is in LFS storage, not in git; run `git lfs pull` and ingest the folder)"
    kind = kind_for(path)
    if kind is not None and kind != "pdf" and b"\0" in data[:_BINARY_SAMPLE]:
        return "binary file (a NUL byte in its first 8,000 bytes)"
    return None


def file_at_commit(source: Mapping[str, Any], path: str) -> bytes | None:
    """A document of a collection built from a ref, as of the recorded commit (the source viewer
    shows that, not the work tree); None for a folder's collection or when git cannot read it."""
    rec = SourceRecord.from_meta(source)
    if rec.mode == "path" or not rec.repository or not rec.commit:
        return None
    try:
        return gitrepo.read_file(gitrepo.open_repo(rec.repository), rec.commit, path)
    except GitError:
        return None


# ------------------------------------------------------------------ what changed


@dataclass(frozen=True)
class ChangePlan:
    """A re-ingest's work: the paths to read at the new commit and the paths to remove."""

    read: frozenset[str]
    remove: frozenset[str]
    changes: tuple[Change, ...]


def change_plan(repo: Repo, old: str, new: str) -> ChangePlan:
    """From ``git diff --name-status -M old new``: a rename removes its old path and reads the new."""
    changes = tuple(gitrepo.diff(repo, old, new))
    read: set[str] = set()
    remove: set[str] = set()
    for c in changes:
        if c.status == "D":
            remove.add(c.path)
        else:
            read.add(c.path)
            if c.status == "R" and c.old_path:
                remove.add(c.old_path)
    return ChangePlan(frozenset(read), frozenset(remove - read), changes)


@dataclass(frozen=True)
class RefStaleness:
    """How far the source has moved since the ingest: ``state`` current | moved | dirty | pinned
    | unknown (the repository or the commit cannot be read here; ``note`` says why)."""

    state: str
    head: str | None = None
    commits_behind: int = 0
    files_changed: int = 0
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def staleness(record: SourceRecord) -> RefStaleness | None:
    """Whether the ref (or a folder's work tree) has moved since ``record`` was taken; None for
    a collection not built from git."""
    if not record.repository or not record.commit:
        return None
    try:
        repo = gitrepo.open_repo(record.repository)
        if record.mode == "commit":
            return RefStaleness("pinned", record.commit)
        if record.mode == "ref":
            now = gitrepo.resolve(repo, record.ref or "HEAD")
        else:
            now = gitrepo.head(repo)[0] or record.commit
        return _moved(repo, record, now)
    except GitError as exc:
        return RefStaleness("unknown", note=str(exc))


def _moved(repo: Repo, record: SourceRecord, now: str) -> RefStaleness:
    old = record.commit or now
    prefix = record.subdir if record.mode == "path" else ""
    if now != old:
        if not gitrepo.has_commit(repo, old):
            return RefStaleness("unknown", now, note=f"the ingested commit {old[:12]} is no longer in the repository")
        return RefStaleness("moved", now, gitrepo.commits_between(repo, old, now), len(gitrepo.diff(repo, old, now, prefix)))
    if record.mode == "path" and repo.top is not None and gitrepo.is_dirty(repo, repo.top / prefix if prefix else None):
        return RefStaleness("dirty", now, note="the folder has changes that are not committed")
    return RefStaleness("current", now)
