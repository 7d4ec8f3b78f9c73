"""The source viewer: a document's lines with their original line numbers, cited lines highlighted.

Lines come from the file on disk (``CollectionInfo.root`` + path) when it is still the file that
was ingested (same sha256), through the same loader as ingestion, so HTML shows its visible text
and PDF its extracted text with the line numbers citations use; otherwise they are rebuilt
from the stored chunks. Every line is ``html.escape``d before it is put into the viewer's HTML.
"""

from __future__ import annotations

import hashlib
import html
from dataclasses import dataclass, field
from typing import Any, Callable, Collection, Iterable, Mapping
from pathlib import Path

from ragcore.ingest.gitsource import file_at_commit
from ragcore.ingest.read.loaders import LoadError, load_bytes, read_bytes
from ragcore.engine.engine import Engine
from ragcore.engine.selection import document_selection
from ragcore.types import Chunk, CollectionInfo


@dataclass(frozen=True)
class Row:
    no: int
    end: int  # == no for a real line; > no for a block rebuilt from a chunk that does not map 1:1
    text: str
    page: int | None = None


@dataclass
class SourceView:
    path: str
    kind: str
    rows: list[Row]
    origin: str  # "disk" | "git" (a ref's collection: the file at its commit) | "chunks"
    chunks: list[Chunk] = field(default_factory=list)
    note: str | None = None

    @property
    def pages(self) -> list[int]:
        return sorted({r.page for r in self.rows if r.page is not None})

    def rows_on(self, page: int | None) -> list[Row]:
        if not self.pages:
            return self.rows
        return [r for r in self.rows if r.page == page]

    def first_last(self, page: int | None) -> tuple[int, int]:
        rows = self.rows_on(page)
        return (rows[0].no, rows[-1].end) if rows else (1, 1)

    def selected(self, start: int, end: int, page: int | None) -> tuple[str, tuple[int, ...]]:
        """Lines ``start``..``end`` as a selection: its text and the source line of each text line
        (``SelectionInput.line_numbers``), so the answer's citations name the viewer's own line
        numbers for every kind of source (an HTML page numbers several text lines alike)."""
        return document_selection(((r.no, r.page, r.text) for r in self.rows), start, end, page if self.pages else None)

    def section_of(self, start: int, end: int, page: int | None) -> str:
        for c in self.chunks:
            if c.page == page and c.start_line <= end and c.end_line >= start and c.section:
                return c.section_label
        return ""

    def anchor_of(self, start: int, end: int, page: int | None) -> str | None:
        for c in self.chunks:
            if c.page == page and c.start_line <= end and c.end_line >= start and c.anchor:
                return c.anchor
        return None


def load_source(engine: Engine, info: CollectionInfo, path: str) -> SourceView | None:
    chunks = engine.document_chunks(path, collection=info.name)
    if not chunks:
        return None
    kind = chunks[0].kind
    note = None
    root = info.root
    if info.source.get("mode") in ("ref", "commit"):  # a git ref's collection: the file as of its commit
        view = _from_git(info, path, chunks)
        if view is not None:
            return view
        note = "The file could not be read from the repository at the collection's commit: showing the ingested text."
        root = None
    if root and root != "(upload)":
        base = Path(root).resolve()
        f = (base / path).resolve()
        if f.is_relative_to(base) and f.is_file():
            try:
                # the ingest's own reader: a FIFO or a link to /dev/zero cannot hang or fill the app
                data = read_bytes(f, max_bytes=engine.settings.max_file_bytes, follow_symlinks=False)
                if hashlib.sha256(data).hexdigest() == chunks[0].doc_hash:
                    doc = load_bytes(data, path)
                    rows = [Row(ln.no, ln.no, ln.text, ln.page) for ln in doc.lines]
                    return SourceView(path, kind, rows, "disk", chunks)
                note = "The file on disk changed since it was ingested: showing the ingested text. Re-ingest to see the new version."
            except (OSError, LoadError) as exc:
                note = f"Could not read the file on disk ({exc}): showing the ingested text."
        else:
            note = "The file is no longer on disk at the ingest root: showing the ingested text."
    rows_by_key: dict[tuple[int | None, int], Row] = {}
    for c in chunks:
        lines = c.text.split("\n")
        if len(lines) == c.end_line - c.start_line + 1:
            for i, t in enumerate(lines):
                rows_by_key.setdefault((c.page, c.start_line + i), Row(c.start_line + i, c.start_line + i, t, c.page))
        else:
            covered = any((c.page, n) in rows_by_key for n in range(c.start_line, c.end_line + 1))
            if not covered:
                rows_by_key[(c.page, c.start_line)] = Row(c.start_line, c.end_line, c.text, c.page)
    rows = sorted(rows_by_key.values(), key=lambda r: (r.page or 0, r.no))
    return SourceView(path, kind, rows, "chunks", chunks, note or "Rebuilt from the stored chunks (the original file is not available).")


def _from_git(info: CollectionInfo, path: str, chunks: list[Chunk]) -> SourceView | None:
    data = file_at_commit(info.source, path)
    if data is None or hashlib.sha256(data).hexdigest() != chunks[0].doc_hash:
        return None
    try:
        doc = load_bytes(data, path)
    except LoadError:
        return None
    rows = [Row(ln.no, ln.no, ln.text, ln.page) for ln in doc.lines]
    commit = str(info.source.get("commit") or "")[:12]
    ref = info.source.get("ref")
    note = f"As of commit {commit}" + (f" ({ref})" if ref and ref != info.source.get("commit") else "") + ", read from git."
    return SourceView(path, kind=chunks[0].kind, rows=rows, origin="git", chunks=chunks, note=note)


VIEWER_CSS = """
<style>
.rc-src{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px;line-height:1.55;
  border:1px solid #d0d7de;border-radius:8px;background:#fff;max-height:560px;overflow:auto;padding:4px 0}
.rc-line{display:flex;align-items:flex-start}
.rc-no{flex:0 0 4.5em;text-align:right;padding-right:.8em;color:#8c959f;user-select:none;border-right:1px solid #eaeef2}
.rc-txt{padding-left:.8em;padding-right:.8em;white-space:pre-wrap;word-break:break-word;color:#1f2328}
.rc-line.sel{background:#ddf4ff}
.rc-line.hl{background:#fff1a8}
.rc-line.hl .rc-no{color:#7d4e00;font-weight:700;border-right:3px solid #d4a72c}
.rc-line.sel.hl{background:linear-gradient(90deg,#ddf4ff 0 4.5em,#fff1a8 4.5em)}
.rc-line.sel.hl .rc-txt{box-shadow:inset 3px 0 0 #0969da}
.rc-line.cont .rc-no{color:#c4cad1}
.rc-gap{color:#8c959f;font-size:11px;padding:1px 0 1px 5.3em;font-style:italic}
.rc-block .rc-txt{border-left:2px solid #eaeef2}
.rc-line.q .rc-txt{background:#ffd33d66;box-shadow:inset 3px 0 0 #bf8700}
</style>
"""


def viewer_html(
    view: SourceView, *, page: int | None, highlight: tuple[int, int] | None, selection: tuple[int, int] | None,
    window: tuple[int, int] | None, quoted: "Callable[[str], bool] | None" = None, quoted_lines: Collection[int] = (),
) -> str:
    """The rows as escaped HTML: ``highlight`` the cited lines, ``selection`` the lines to ask
    about, ``quoted(text)`` marks the lines the answer quotes (the sentence itself), and so do
    ``quoted_lines`` (line numbers: what an answer quoted from a selection made here)."""
    e = html.escape
    out = [VIEWER_CSS, f'<div class="rc-src" data-path="{e(view.path, quote=True)}">']
    prev_end: int | None = None
    prev_no: int | None = None
    for r in view.rows_on(page):
        if window and (r.end < window[0] or r.no > window[1]):
            continue
        # HTML: several visible lines come from one source line and share its number; every row
        # shows it (a row without one read as a line outside the source, e.g. a <pre> line after
        # its paragraph), the continuing rows dimmed, and blank continuations are dropped
        cont = r.no == prev_no and r.end == r.no
        prev_no = r.no
        if cont and not r.text.strip():
            continue
        if prev_end is not None and r.no > prev_end + 1:
            gap = r.no - prev_end - 1
            out.append(f'<div class="rc-gap">⋯ {gap} line{"s" if gap != 1 else ""} without text</div>')
        prev_end = r.end
        classes = ["rc-line"]
        if highlight and r.no <= highlight[1] and r.end >= highlight[0]:
            classes.append("hl")
        if selection and r.no <= selection[1] and r.end >= selection[0]:
            classes.append("sel")
        if r.text.strip() and ((quoted is not None and quoted(r.text)) or any(r.no <= n <= r.end for n in quoted_lines)):
            classes.append("q")
        label = str(r.no) if r.end == r.no else f"{r.no}–{r.end}"
        if r.end != r.no:
            classes.append("rc-block")
        if cont:
            classes.append("cont")
        text = e(r.text) if r.text else "&#8203;"
        out.append(f'<div class="{" ".join(classes)}" data-line="{r.no}"><span class="rc-no">{label}</span><span class="rc-txt">{text}</span></div>')
    out.append("</div>")
    return "".join(out)


def quoted_selection_lines(citations: Iterable[Mapping[str, Any]], path: str, page: int | None) -> frozenset[int]:
    """The lines of ``path`` (on ``page``) an answer quoted from a selection made in the viewer: its
    citations of the selection, whose line numbers are the viewer's own (``SourceView.selected``)."""
    out: set[int] = set()
    for c in citations:
        if c.get("origin") == "selection" and c.get("path") == path and (c.get("page") or None) == (page or None):
            out.update(range(int(c.get("start_line") or 0), int(c.get("end_line") or 0) + 1))
    return frozenset(n for n in out if n > 0)
