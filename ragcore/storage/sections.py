"""Where a collection's sections start: the rows of the topic index (``topics.py``).

Plain data over chunks, with no store, model or snapshot behind it, so the store can publish
these rows with a query snapshot and the topic index can read them back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ragcore.types import Chunk


@dataclass(frozen=True)
class SectionRef:
    """Where a chunk sits, for the topic index: no text, no vectors."""

    path: str
    start_line: int
    section: tuple[str, ...]
    title: str | None
    anchor: str | None = None
    page: int | None = None


def section_ref(c: Chunk) -> SectionRef:
    return SectionRef(c.path, c.start_line, c.section, c.title, c.anchor, c.page)


def heading_of(section: Sequence[str], title: str | None) -> str | None:
    """A chunk's topic: its innermost heading, else its document's title."""
    for text in (*reversed(tuple(section)), title):
        if text and text.strip():
            return text.strip()
    return None


def first_places(refs: Iterable[SectionRef]) -> dict[tuple[str, str], SectionRef]:
    """(heading, path) -> where that heading first occurs in that document."""
    first: dict[tuple[str, str], SectionRef] = {}
    for ref in refs:
        heading = heading_of(ref.section, ref.title)
        if heading is None:
            continue
        key = (heading, ref.path)
        seen = first.get(key)
        if seen is None or (ref.page or 0, ref.start_line) < (seen.page or 0, seen.start_line):
            first[key] = ref
    return first


def topic_rows(chunks: Iterable[Chunk]) -> list[list[Any]]:
    """The first places as JSON rows, ``[heading, path, start_line, anchor, page]`` (written with a
    query snapshot so that opening one never scans every chunk)."""
    first = first_places(section_ref(c) for c in chunks)
    return [[h, p, r.start_line, r.anchor, r.page] for (h, p), r in sorted(first.items())]


def from_rows(rows: Sequence[Sequence[Any]]) -> dict[tuple[str, str], SectionRef]:
    """:func:`topic_rows` read back as first places."""
    return {(str(h), str(p)): SectionRef(str(p), int(line), (), None, anchor, page) for h, p, line, anchor, page in rows}
