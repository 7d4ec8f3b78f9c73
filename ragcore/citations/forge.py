"""Permalinks to the cited lines on the forge that hosts the collection's repository, at its commit.

A link names the commit id, never a branch, so it shows the text that was ingested even after the
branch moves. The forge is known from the remote's host: github → GitHub, gitlab → GitLab,
bitbucket → Bitbucket, gitea / codeberg / forgejo → Gitea's form. Another host gets no link (its
URL scheme cannot be guessed), and neither does a folder with uncommitted changes (its lines may
not be the commit's).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import PurePath
from typing import Any, Mapping, Sequence
from urllib.parse import quote

from ragcore.types import Citation

_SCP = re.compile(r"^(?:[\w.-]+@)?([\w.-]+):(?!//)(.+)$")  # git@github.com:owner/repo.git
_FORGES = (("github", "github"), ("gitlab", "gitlab"), ("bitbucket", "bitbucket"),
           ("gitea", "gitea"), ("codeberg", "gitea"), ("forgejo", "gitea"))


def web_base(remote: str | None) -> tuple[str, str] | None:
    """(forge kind, ``https://host/owner/repo``) of a remote URL; None when the forge is not known."""
    if not remote:
        return None
    url = remote.strip()
    m = _SCP.match(url) if "://" not in url else None
    if m:
        host, path = m.group(1), m.group(2)
    else:
        rest = url.split("://", 1)[-1]
        hostpart, _, path = rest.partition("/")
        host = hostpart.rsplit("@", 1)[-1].split(":", 1)[0]
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    kind = next((k for key, k in _FORGES if key in host.lower()), None)
    if kind is None or not path:
        return None
    return kind, f"https://{host}/{path}"


def permalink(remote: str | None, commit: str | None, path: str, start: int | None = None,
              end: int | None = None) -> str | None:
    """The forge's URL of ``path`` at ``commit``, anchored on lines ``start``-``end`` when given."""
    base = web_base(remote)
    if base is None or not commit:
        return None
    kind, root = base
    p = quote(path, safe="/")
    if kind == "github":
        return f"{root}/blob/{commit}/{p}" + (_anchor("#L{a}", "#L{a}-L{b}", start, end))
    if kind == "gitlab":
        return f"{root}/-/blob/{commit}/{p}" + (_anchor("#L{a}", "#L{a}-{b}", start, end))
    if kind == "gitea":
        return f"{root}/src/commit/{commit}/{p}" + (_anchor("#L{a}", "#L{a}-L{b}", start, end))
    return f"{root}/src/{commit}/{p}" + (_anchor("#lines-{a}", "#lines-{a}:{b}", start, end))


def _anchor(one: str, span: str, start: int | None, end: int | None) -> str:
    if not start:
        return ""
    if not end or end == start:
        return one.format(a=start)
    return span.format(a=start, b=end)


def repo_path(source: Mapping[str, Any], path: str) -> str:
    """A collection's document path as a path in its repository (a folder ingest's files sit below its subdir)."""
    sub = str(source.get("subdir") or "").strip("/")
    return f"{sub}/{path}" if sub else path


def linkable(source: Mapping[str, Any]) -> bool:
    """Whether the collection's lines are the lines of its recorded commit."""
    return bool(source.get("commit")) and source.get("dirty") is not True


def with_permalinks(citations: Sequence[Citation], source: Mapping[str, Any]) -> tuple[Citation, ...]:
    """``citations`` with their forge permalink set where the collection's source has one."""
    if not linkable(source) or web_base(source.get("remote")) is None:
        return tuple(citations)
    out = []
    for c in citations:
        if c.origin != "corpus":
            out.append(c)
            continue
        lines = (None, None) if c.page is not None else (c.start_line, c.end_line)  # a PDF's lines are per page
        link = permalink(source.get("remote"), source.get("commit"), repo_path(source, c.path), *lines)
        out.append(dataclasses.replace(c, permalink=link))
    return tuple(out)


def answer_source(source: Mapping[str, Any] | None) -> dict[str, Any]:
    """What every answer's metadata carries as ``source``: {mode: ref | commit | path, ref, commit,
    dirty} (and the repository and remote where known) from the collection's source record."""
    s = dict(source or {})
    repo = PurePath(str(s["repository"])).name if s.get("repository") else None  # its name: no server path goes out
    return {"mode": s.get("mode") or "path", "ref": s.get("ref"), "commit": s.get("commit"), "dirty": s.get("dirty"),
            "repository": repo, "remote": s.get("remote")}
