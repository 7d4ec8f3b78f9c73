"""SourceLines to Chunks: word-sized windows over whole lines, aware of sections and pages.

Rules, and why:
- A chunk never crosses a change of section, anchor or page, so every chunk has exactly one
  citation target (path, section, page, anchor).
- Chunks are cut on whole lines, preferring paragraph breaks (empty lines), so that
  ``start_line..end_line`` of the original file reproduces the chunk text: that is the
  provenance property citations rely on. Nothing (no heading) is ever prepended.
- Neighbouring chunks of one section overlap by the last lines of the previous chunk
  (≈ ``chunk_overlap`` words), so a sentence cut at a boundary is whole in one of them.
- A single line longer than ``chunk_size`` words becomes windows of words that all keep that
  line's number; each window's text is a contiguous substring of the line.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left, bisect_right
from itertools import groupby
from typing import Iterator, Sequence

from ragcore.types import Chunk, LoadedDocument, SourceLine

__all__ = ["chunk_document", "chunk_id", "text_of_lines", "normalize_ws", "chunk_matches_source"]

_WORD_RE = re.compile(r"\S+")
_ALNUM_RE = re.compile(r"[^\W_]")
# Do not cut at a paragraph break that would leave a chunk under this share of chunk_size.
_MIN_PARAGRAPH_FILL = 0.5


# Bump when chunk boundaries or texts change for the same input: the next ingest re-chunks
# every file (reusing stored vectors of chunks that come out the same).
CHUNKER_VERSION = "2"


def chunk_id(path: str, start_line: int, end_line: int, text: str) -> str:
    """Stable id: the same span of the same text in the same file always gets the same id."""
    key = f"{path}\0{start_line}\0{end_line}\0{text}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def normalize_ws(text: str) -> str:
    return " ".join(text.split())


def text_of_lines(doc: LoadedDocument, start: int, end: int, page: int | None = None) -> str:
    """The document's text for lines ``start..end`` (inclusive), joined with "\\n".

    For text, Markdown, reST and code this is exactly the source file's lines. For HTML it is
    the visible text those source lines carry and for PDF the page's extracted lines (pass
    ``page``); compare those whitespace-normalised (:func:`normalize_ws`).
    """
    lines = doc.lines
    if doc.kind == "pdf" and page is not None:
        # PDF lines are ordered by (page, line): binary search, citations are checked often.
        lo = bisect_left(lines, (page, start), key=_page_key)
        hi = bisect_right(lines, (page, end), key=_page_key)
    elif doc.kind != "pdf":
        lo = bisect_left(lines, start, key=_no_key)
        hi = bisect_right(lines, end, key=_no_key)
    else:
        lo, hi = 0, len(lines)  # a PDF without a page: scan every page
    return "\n".join(
        line.text
        for line in lines[lo:hi]
        if start <= line.no <= end and (page is None or line.page == page)
    )


def _no_key(line: SourceLine) -> int:
    return line.no


def _page_key(line: SourceLine) -> tuple[int, int]:
    return (line.page or 0, line.no)


def chunk_matches_source(doc: LoadedDocument, chunk: Chunk) -> bool:
    """The provenance property: the chunk's text is what its line span says it is."""
    source = text_of_lines(doc, chunk.start_line, chunk.end_line, chunk.page)
    if doc.kind in ("html", "pdf"):
        return normalize_ws(chunk.text) in normalize_ws(source)
    if chunk.text == source:
        return True
    # A window of an over-long line: a contiguous piece of that one line.
    return chunk.start_line == chunk.end_line and chunk.text in source


def chunk_document(doc: LoadedDocument, *, chunk_size: int, chunk_overlap: int) -> list[Chunk]:
    """Cut a document into chunks of about ``chunk_size`` words (see the module docstring)."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    if not 0 <= chunk_overlap < chunk_size:
        raise ValueError(f"chunk_overlap must be in [0, chunk_size), got {chunk_overlap}")
    collapse_empty = doc.kind == "html"
    chunks: list[Chunk] = []
    for _, group in groupby(doc.lines, key=lambda ln: (ln.section, ln.anchor, ln.page)):
        lines = list(group)
        for piece in _pack(lines, chunk_size, chunk_overlap):
            chunk = _make_chunk(doc, piece, len(chunks), collapse_empty)
            if chunk is not None:
                chunks.append(chunk)
    return chunks


# A piece is the lines of one chunk; an over-long line's window is a one-line piece whose
# SourceLine carries just the window's text.
_Piece = Sequence[SourceLine]


def _words(line: SourceLine) -> int:
    return len(line.text.split())


def _is_empty(line: SourceLine) -> bool:
    return not line.text.strip()


def _pack(lines: list[SourceLine], size: int, overlap: int) -> Iterator[_Piece]:
    """Greedy packing of one section's lines into pieces of at most ``size`` words."""
    counts = [_words(line) for line in lines]
    n = len(lines)
    start = 0
    while start < n:
        while start < n and _is_empty(lines[start]):
            start += 1
        if start >= n:
            return
        if counts[start] > size:
            yield from _windows(lines[start], size, overlap)
            start += 1
            continue
        # Take whole lines while they fit; stop before an over-long line (it gets windows).
        end, total = start, 0
        while end < n and counts[end] <= size and total + counts[end] <= size:
            total += counts[end]
            end += 1
        if end < n and counts[end] <= size:
            end = _paragraph_cut(lines, counts, start, end, size)
        yield lines[start:end]
        if end >= n or counts[end] > size:
            start = end  # the section ends, or windows follow: nothing to overlap with
        else:
            start = _overlap_start(counts, start, end, overlap, size)


def _paragraph_cut(
    lines: list[SourceLine], counts: list[int], start: int, end: int, size: int
) -> int:
    """Move the cut back to the last paragraph break if the chunk stays reasonably full."""
    total = sum(counts[start:end])
    for i in range(end - 1, start, -1):
        if total < _MIN_PARAGRAPH_FILL * size:
            break
        if _is_empty(lines[i]):
            return i
        total -= counts[i]
    return end


def _overlap_start(counts: list[int], start: int, end: int, overlap: int, size: int) -> int:
    """Where the next chunk starts: the last lines before ``end`` worth ≈ ``overlap`` words.

    The overlap never reaches back to ``start`` (the next chunk must move forward) and leaves
    room for the next line, so the next chunk always ends past ``end``.
    """
    room = size - counts[end]
    k, total = end, 0
    while k - 1 > start and total < overlap:
        w = counts[k - 1]
        if total + w > max(overlap * 1.5, 1) or total + w > room:
            break
        total += w
        k -= 1
    return k


def _windows(line: SourceLine, size: int, overlap: int) -> Iterator[_Piece]:
    """Word windows over one over-long line; each text is a contiguous slice of the line."""
    spans = [m.span() for m in _WORD_RE.finditer(line.text)]
    step = size - overlap
    for i in range(0, len(spans), step):
        window = spans[i : i + size]
        text = line.text[window[0][0] : window[-1][1]]
        yield (SourceLine(line.no, text, line.section, line.anchor, line.page),)
        if i + size >= len(spans):
            return


def _only_heading(lines: list[SourceLine]) -> bool:
    """A chunk that is nothing but its section's title (e.g. "# Title" directly followed by
    "## Sub"): it would take a retrieval slot while saying nothing; the title still reaches
    the encoders through every chunk of the section (``store.embed_text``)."""
    title = lines[0].section[-1] if lines[0].section else None
    if title is None:
        return False
    body = [ln.text.strip().strip("#=-~^*+`'\" ").strip() for ln in lines if not _is_empty(ln)]
    return all(not b or b == title for b in body)


def _make_chunk(
    doc: LoadedDocument, piece: _Piece, ordinal: int, collapse_empty: bool
) -> Chunk | None:
    lines = list(piece)
    while lines and _is_empty(lines[0]):
        lines.pop(0)
    while lines and _is_empty(lines[-1]):
        lines.pop()
    if not lines:
        return None
    if collapse_empty:
        # HTML block boundaries can stack up; one blank line is one paragraph break.
        lines = [
            ln for i, ln in enumerate(lines) if not (_is_empty(ln) and _is_empty(lines[i - 1]))
        ]
    text = "\n".join(line.text for line in lines)
    if not _ALNUM_RE.search(text) or _only_heading(lines):
        return None
    first, last = lines[0], lines[-1]
    return Chunk(
        chunk_id=chunk_id(doc.path, first.no, last.no, text),
        text=text,
        path=doc.path,
        doc_hash=doc.doc_hash,
        kind=doc.kind,
        start_line=first.no,
        end_line=last.no,
        section=first.section,
        anchor=first.anchor,
        page=first.page,
        ordinal=ordinal,
        title=doc.title,
    )
