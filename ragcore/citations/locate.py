"""Where a citation points: the file, the lines that support the claim, the viewer link."""

from __future__ import annotations

from typing import Sequence
from urllib.parse import urlencode

from ragcore.textutil import line_of_offset
from ragcore.types import Citation, Evidence
from ragcore.citations.support import SupportMatch


def make_citation(e: Evidence, matches: Sequence[SupportMatch]) -> Citation:
    """A citation narrowed to the lines of the sentences that support the citing claims.

    Narrowing needs the chunk's text lines to map 1:1 onto source lines (text, Markdown,
    reST, code, PDF pages); for HTML the chunk's whole line range is kept.
    """
    c = e.chunk
    start, end = c.start_line, c.end_line
    spans = [m.span for m in matches if m.span is not None]
    # HTML text lines are not source lines (a break repeats a number, tag-only lines vanish), and
    # a chunk can hold as many of one as of the other by coincidence: never narrow HTML
    if spans and c.kind != "html" and len(c.text.split("\n")) == c.end_line - c.start_line + 1:
        start = c.start_line + min(line_of_offset(c.text, sp.start) for sp in spans)
        end = c.start_line + max(line_of_offset(c.text, max(sp.end - 1, sp.start)) for sp in spans)
    support = max((m.score for m in matches), default=0.0)
    return Citation(
        n=e.n, chunk_id=c.chunk_id, path=c.path, start_line=start, end_line=end, section=c.section, page=c.page,
        anchor=c.anchor, url=source_url(c.path, start, end, c.page), retrieval_score=e.score, score_kind=e.score_kind,
        support=round(support, 4), origin=e.origin, page_label=c.page_label,
    )


def source_url(path: str, start: int, end: int, page: int | None = None) -> str:
    """The locator the app turns into a source-viewer link."""
    params = {"path": path, "lines": f"{start}-{end}"}
    if page is not None:
        params["page"] = str(page)
    return "?" + urlencode(params)
