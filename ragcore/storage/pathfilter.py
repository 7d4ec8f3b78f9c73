"""The path filter: which documents a question may draw on.

One implementation for every place that filters by path (the embedded search index, the
Qdrant-server path, the topic index, the app's "why not retrieved?" probe), so that
``docs/*.md, ref/`` means the same everywhere.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass


@dataclass(frozen=True)
class PathFilter:
    """Comma-separated globs; a pattern ending in "/" also matches everything under that folder."""

    patterns: tuple[str, ...]

    @classmethod
    def parse(cls, spec: str | None) -> "PathFilter | None":
        """``"docs/*.md, ref/"`` → a filter; an empty or blank spec → None (no filtering)."""
        pats = tuple(p.strip() for p in (spec or "").split(",") if p.strip())
        return cls(pats) if pats else None

    def matches(self, path: str) -> bool:
        return any(fnmatch.fnmatch(path, p) or (p.endswith("/") and path.startswith(p)) for p in self.patterns)


def parse_path_filter(spec: str | None) -> list[str]:
    """"docs/*.md, ref/" → ["docs/*.md", "ref/"] (comma-separated globs)."""
    f = PathFilter.parse(spec)
    return list(f.patterns) if f else []


def path_matches(path: str, patterns: list[str] | tuple[str, ...]) -> bool:
    """A glob match (``fnmatch``), or a folder prefix when the pattern ends with "/"."""
    return PathFilter(tuple(patterns)).matches(path)


def allows(spec: str | None, path: str) -> bool:
    """Whether a path passes the filter spec (no spec: every path does)."""
    f = PathFilter.parse(spec)
    return f is None or f.matches(path)
