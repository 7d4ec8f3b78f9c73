"""A document's lines as the collection holds them, for ``read``: rebuilt from its chunks (the
service reads no file, so a path can only reach what was ingested into that collection).

A chunk's text lines are its source lines when their count matches its line span (text, Markdown,
reST, code, a PDF page); HTML chunks hold extracted text, whose lines are not source lines, so an
HTML chunk stands for its whole span (its text on the first line of the span). Lines no chunk
holds (blank lines between sections, a page's margin) read as empty."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Sequence

from ragcore.service.mcp.errors import ToolProblem
from ragcore.types import Chunk

MAX_READ_LINES = 400  # one call; an agent pages through a longer range


def path_problem(path: str) -> str | None:
    """Why ``path`` cannot name a document of a collection (None when it can be looked up)."""
    if not path or "\x00" in path or "\\" in path:
        return "path must be a document path as list_collections/search report it, e.g. 'docs/intro.md'"
    p = PurePosixPath(path)
    if p.is_absolute() or ".." in p.parts:
        return f"path {path!r} is outside the collection: give a path relative to the collection, as search reports it"
    return None


def document_lines(chunks: Sequence[Chunk]) -> dict[int, str]:
    """Line number -> text for the lines the chunks hold (a PDF's pages are numbered within their page:
    the first page's lines win, as a locator without a page means the document's first numbering)."""
    lines: dict[int, str] = {}
    for c in chunks:
        parts = c.text.split("\n")
        if c.kind != "html" and len(parts) == c.end_line - c.start_line + 1:
            for i, t in enumerate(parts):
                lines.setdefault(c.start_line + i, t)
        else:
            lines.setdefault(c.start_line, " ".join(c.text.split()))
    return lines


def line_range(lines: dict[int, str], start: int, end: int) -> list[tuple[int, str]]:
    """The lines ``start``..``end`` (clipped to the document); a refusal with the reason otherwise."""
    last = max(lines, default=0)
    if start < 1 or end < start:
        raise ToolProblem(f"start and end are line numbers from 1 with start <= end (got {start}-{end})")
    if start > last:
        raise ToolProblem(f"the document has {last} lines; start={start} is past its end")
    end = min(end, last, start + MAX_READ_LINES - 1)
    return [(n, lines.get(n, "")) for n in range(start, end + 1)]
