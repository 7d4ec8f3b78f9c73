"""Which files an ingest reads: the folders walked (links followed only inside the roots, VCS and
virtualenv folders and a Sphinx build's generated files skipped), each file named by its path
relative to the root, and a file's name that cannot be shown refused with a reason."""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator, Sequence

from ragcore.ingest.read.loaders import file_type_name, kind_for, os_reason as _os_reason

SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache", ".pytest_cache"}

_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class SourceFile:
    rel: str
    path: Path | None = None  # on disk, or
    data: bytes | None = None  # uploaded
    problem: str | None = None  # discovery refused it: reported as failed with this reason
    keep: bool = False  # the problem may pass (unreadable): keep what is stored under ``rel``


# --------------------------------------------------------------------------- discovery


def discover(paths: Sequence[Path]) -> tuple[Path, list[SourceFile]]:
    """Supported files under ``paths``, and the root their relative paths are taken from.

    Files discovery refuses (symlinks out of ``paths``, special files, unreadable folders,
    unprintable names) come back too, with ``problem`` set, so that the report names them.
    """
    paths = [Path(p).expanduser().resolve() for p in paths]
    for p in paths:
        if not p.exists():
            raise FileNotFoundError(f"No such file or folder: {p}")
    if len(paths) == 1 and paths[0].is_dir():
        root = paths[0]
    else:
        root = Path(os.path.commonpath([p if p.is_dir() else p.parent for p in paths]))
    inside = tuple(paths)
    found: dict[str, SourceFile] = {}
    for p in paths:
        for src in _walk(p, root, inside) if p.is_dir() else _named_file(p, root):
            found[src.rel] = src
    return root, [found[k] for k in sorted(found)]


def _named_file(path: Path, root: Path) -> Iterator[SourceFile]:
    """A file named on the command line (already resolved): taken if it is a regular file."""
    if kind_for(path) is None:
        return
    rel = _rel(path, root)
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        yield SourceFile(rel=rel, problem=f"not a regular file ({file_type_name(mode)})")
    else:
        yield SourceFile(rel=rel, path=path)


def _walk(top: Path, root: Path, inside: tuple[Path, ...]) -> Iterator[SourceFile]:
    """Files under ``top``, depth first, with an explicit stack (no recursion limit).

    Hidden entries, VCS/virtualenv/cache folders and what a Sphinx HTML build generates beside
    its pages (``sphinx_generated``) are skipped silently; a folder reached twice (bind mounts)
    is walked once.
    """
    stack = [top]
    walked: set[tuple[int, int]] = set()
    while stack:
        folder = stack.pop()
        try:
            st = os.stat(folder, follow_symlinks=False)
            if (st.st_dev, st.st_ino) in walked:
                continue
            walked.add((st.st_dev, st.st_ino))
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            reason = f"folder could not be read: {_os_reason(exc)}"
            yield SourceFile(rel=_rel(folder, root), problem=reason, keep=True)
            continue
        subfolders: list[Path] = []
        generated = sphinx_generated([e.name for e in entries])
        for entry in entries:
            if entry.name.startswith(".") or entry.name in SKIP_DIRS or entry.name in generated:
                continue
            for item in _classify(entry, root, inside):
                if isinstance(item, Path):
                    subfolders.append(item)
                else:
                    yield item
        stack.extend(reversed(subfolders))


# What Sphinx writes next to the pages of an HTML build: copies of every page's source
# (_sources/page.rst.txt, markup and all, so each page would be found twice and cited by its
# source), the theme's scripts (_static/jquery.js…), the search index, and pages that only list
# links (the general and module indexes, the search page). A folder is a build's root when it
# holds Sphinx's search index or object inventory.
_SPHINX_ROOT_MARKERS = ("searchindex.js", "objects.inv")
_SPHINX_GENERATED = re.compile(r"_sources|_static|searchindex\.js|search\.html|genindex(?:-[^/]*)?\.html|py-modindex\.html")


def sphinx_generated(names: Sequence[str]) -> frozenset[str]:
    """The entries of one folder that a Sphinx HTML build generated beside its pages (none
    unless the folder is a build's root): ingest skips them, as it skips ``.git``."""
    if not any(m in names for m in _SPHINX_ROOT_MARKERS):
        return frozenset()
    return frozenset(n for n in names if _SPHINX_GENERATED.fullmatch(n))


def _classify(entry: os.DirEntry, root: Path, inside: tuple[Path, ...]) -> Iterator[SourceFile | Path]:
    """One folder entry: a subfolder to walk (a Path), a file to ingest, or a refusal."""
    path = Path(entry.path)
    try:
        is_link = entry.is_symlink()
        is_dir = not is_link and entry.is_dir(follow_symlinks=False)
        mode = entry.stat(follow_symlinks=False).st_mode
    except OSError as exc:
        yield SourceFile(rel=_rel(path, root), problem=_os_reason(exc), keep=True)
        return
    bad_name = _name_problem(entry.name)
    if bad_name and (is_dir or kind_for(path) is not None):
        yield SourceFile(rel=_printable(_rel(path, root)), problem=bad_name)
    elif is_link:
        yield from _link(path, root, inside)
    elif is_dir:
        yield path
    elif kind_for(path) is None:
        return  # unsupported suffix: not ours to report
    elif not stat.S_ISREG(mode):
        yield SourceFile(rel=_rel(path, root), problem=f"not a regular file ({file_type_name(mode)})")
    else:
        yield SourceFile(rel=_rel(path, root), path=path)


def _link(path: Path, root: Path, inside: tuple[Path, ...]) -> Iterator[SourceFile]:
    """A symlink is followed only to a regular file inside the folders being ingested.

    A link to a folder inside them is not followed: that folder is walked in its own right
    (following it would index its files twice, and could loop).
    """
    rel = _rel(path, root)
    try:
        target = path.resolve(strict=True)
        mode = os.stat(target).st_mode
    except (OSError, RuntimeError) as exc:  # Python 3.11 raises RuntimeError on a loop
        if isinstance(exc, RuntimeError) or exc.errno == errno.ELOOP:
            problem = "symlink loop (not followed)"
        elif isinstance(exc, FileNotFoundError):
            problem = "broken symlink (its target does not exist)"
        else:
            problem = f"symlink target could not be read: {_os_reason(exc)}"
        if kind_for(path) is not None or not isinstance(exc, FileNotFoundError):
            yield SourceFile(rel=rel, problem=problem)
        return
    base = next((p for p in inside if target == p or p in target.parents), None)
    if stat.S_ISDIR(mode):
        if base is None:
            yield SourceFile(rel=rel, problem=f"symlink to a folder outside the corpus ({_printable(str(target))}), not followed")
        return
    if kind_for(path) is None:
        return
    if base is None:
        yield SourceFile(rel=rel, problem=f"symlink to a file outside the corpus ({_printable(str(target))}), not followed")
    elif any(part.startswith(".") or part in SKIP_DIRS for part in target.relative_to(base).parts):
        yield SourceFile(rel=rel, problem="symlink to a hidden or skipped file, not followed")
    elif not stat.S_ISREG(mode):
        yield SourceFile(rel=rel, problem=f"symlink to something that is not a regular file ({file_type_name(mode)})")
    else:
        yield SourceFile(rel=rel, path=target)


def _rel(path: Path, root: Path) -> str:
    return PurePosixPath(path.relative_to(root)).as_posix() if path != root else path.name


def _name_problem(name: str) -> str | None:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # os.scandir decoded undecodable bytes as surrogates
        return "file name is not valid UTF-8 (rename it)"
    if _CONTROL_RE.search(name):
        return "file name contains control characters (rename it)"
    return None


def _printable(text: str) -> str:
    """``text`` with undecodable bytes and control characters as backslash escapes."""
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return _CONTROL_RE.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
