"""SourceLines to Chunks: word-sized windows over whole lines, aware of sections and pages.

Rules, and why:
- A chunk never crosses a change of section, anchor or page, so every chunk has exactly one
  citation target (path, section, page, anchor).
- Chunks are cut on whole lines, preferring paragraph breaks (empty lines), so that
  ``start_line..end_line`` of the original file reproduces the chunk text: that is the
  provenance property citations rely on. Nothing (no heading) is ever prepended.
- Neighbouring chunks of one section overlap by the last lines of the previous chunk
  (≈ ``chunk_overlap`` words), so a sentence cut at a boundary is whole in one of them.
- A single line longer than ``chunk_size`` words or ``max_chunk_chars`` characters becomes
  windows that all keep that line's number; each window's text is a contiguous substring of
  the line. A "word" longer than a whole chunk (minified JSON, a base64 blob, CJK text without
  spaces) is cut into slices, after punctuation where there is some.
- Hard cap: no chunk's text is longer than ``max_chunk_chars``, whatever the file's shape, and
  the work is linear in the document's size (a 20 MB single-line file must not take minutes
  or gigabytes).

The LlamaIndex face of this module (a ``NodeParser`` producing ``TextNode``s) is
:mod:`ragcore.llamaindex.node_parser`; both run :func:`locate_chunks`.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import accumulate, groupby
from operator import attrgetter
from typing import Iterator, Sequence

from ragcore.settings.config import RagcoreSettings
from ragcore.textutil import normalize_ws
from ragcore.types import Chunk, LoadedDocument, SourceLine

__all__ = [
    "CHUNKER_VERSION",
    "LocatedChunk",
    "chunk_document",
    "locate_chunks",
    "chunk_id",
    "text_of_lines",
    "normalize_ws",
    "chunk_matches_source",
]

_WORD_RE = re.compile(r"\S+")
_SPACE_RE = re.compile(r"\s+")
_ALNUM_RE = re.compile(r"[^\W_]")
# Do not cut at a paragraph break that would leave a chunk under this share of chunk_size.
_MIN_PARAGRAPH_FILL = 0.5
# Where a slice of an over-long "word" may end: just after one of these, the first tier
# (CJK sentence ends, JSON/JS item ends) preferred.
_BREAK_TIERS = ("。！？；,;}]", "、，：）」』】》:.!?)>|/&")

# Bump when chunk boundaries or texts change for the same input: the next ingest re-chunks
# every file (reusing stored vectors of chunks that come out the same).
CHUNKER_VERSION = "5"  # 5: an HTML list item's or <dl> term's line ends in a hard line break where a block ended
# (4: HTML <dl> entries as blocks, <pre> in list items apart, no "| " after a block in a row)
# (3: HTML lists are list blocks, one "- item" line each, not paragraphs)
DEFAULT_MAX_CHUNK_CHARS: int = RagcoreSettings.max_chunk_chars


def chunk_id(path: str, start_line: int, end_line: int, text: str) -> str:
    """Stable id: the same span of the same text in the same file always gets the same id."""
    key = f"{path}\0{start_line}\0{end_line}\0{text}"
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


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


# --------------------------------------------------------------------------- entry points


@dataclass(frozen=True)
class LocatedChunk:
    """A chunk and the part of its document's text it was cut from.

    The document's text is ``"\\n".join(line.text for line in doc.lines)``;
    ``text[start_char:end_char]`` is the chunk's text (for HTML, where runs of blank lines
    are collapsed, the region the chunk's text was taken from).
    """

    chunk: Chunk
    start_char: int
    end_char: int


@dataclass(frozen=True)
class _Limits:
    size: int  # words
    overlap: int  # words
    max_chars: int

    @property
    def overlap_chars(self) -> int:
        """Slices of an over-long word overlap by the share word windows do (bounded, so
        that every slice moves forward by at least a quarter of a chunk)."""
        return min(self.max_chars * self.overlap // self.size, self.max_chars // 4)


@dataclass(frozen=True)
class _Piece:
    """The lines of one chunk-to-be; a window is a one-line piece whose SourceLine carries
    just the window's text, ``lo`` chars into the line."""

    lines: Sequence[SourceLine]
    first: int  # index in doc.lines of lines[0]
    lo: int = 0


def chunk_document(
    doc: LoadedDocument,
    *,
    chunk_size: int,
    chunk_overlap: int,
    max_chunk_chars: int = DEFAULT_MAX_CHUNK_CHARS,
) -> list[Chunk]:
    """Cut a document into chunks of about ``chunk_size`` words (see the module docstring)."""
    located = locate_chunks(
        doc, chunk_size=chunk_size, chunk_overlap=chunk_overlap, max_chunk_chars=max_chunk_chars
    )
    return [lc.chunk for lc in located]


def locate_chunks(
    doc: LoadedDocument,
    *,
    chunk_size: int,
    chunk_overlap: int,
    max_chunk_chars: int = DEFAULT_MAX_CHUNK_CHARS,
) -> list[LocatedChunk]:
    """:func:`chunk_document`, each chunk with where it stands in the document's text."""
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    if not 0 <= chunk_overlap < chunk_size:
        raise ValueError(f"chunk_overlap must be in [0, chunk_size), got {chunk_overlap}")
    if max_chunk_chars < 1:
        raise ValueError(f"max_chunk_chars must be at least 1, got {max_chunk_chars}")
    limits = _Limits(chunk_size, chunk_overlap, max_chunk_chars)
    # starts[i] + i is where line i starts in the document's text (C-level loops: 1M lines)
    starts = list(accumulate(map(len, map(attrgetter("text"), doc.lines)), initial=0))
    out: list[LocatedChunk] = []
    seen: set[str] = set()
    first = 0
    for _, group in groupby(doc.lines, key=lambda ln: (ln.section, ln.anchor, ln.page)):
        lines = list(group)
        for piece in _pack(lines, first, limits):
            located = _make_chunk(doc, piece, len(out), starts)
            # Identical windows of a repetitive line have one id; keep one (the store would).
            if located is not None and located.chunk.chunk_id not in seen:
                seen.add(located.chunk.chunk_id)
                out.append(located)
        first += len(lines)
    return out


# --------------------------------------------------------------------------- whole lines


def _is_empty(line: SourceLine) -> bool:
    return not line.text.strip()


def _measure(text: str, limits: _Limits) -> int:
    """The words of a line too long in chars: 0 if blank, else ``size + 1`` (it gets windows).
    Such a line is never split into words: a 20 MB line would make millions of strings."""
    return limits.size + 1 if text.strip() else 0


def _pack(lines: list[SourceLine], first: int, limits: _Limits) -> Iterator[_Piece]:
    """Greedy packing of one section's lines (``first`` is the index of lines[0] in the
    document) into pieces of at most ``size`` words and ``max_chars`` characters."""
    size = limits.size
    texts = [line.text for line in lines]
    chars = list(map(len, texts))
    mc = limits.max_chars
    counts = [len(t.split()) if c <= mc else _measure(t, limits) for t, c in zip(texts, chars)]
    n = len(lines)
    start = 0
    while start < n:
        while start < n and _is_empty(lines[start]):
            start += 1
        if start >= n:
            return
        if counts[start] > size:
            yield from _windows(lines[start], first + start, limits)
            start += 1
            continue
        # Take whole lines while they fit; stop before an over-long line (it gets windows).
        end = _fill(counts, chars, start, limits)
        more = end < n and counts[end] <= size  # the section goes on with whole lines
        if more:
            end = _paragraph_cut(lines, counts, start, end, size)
        yield _Piece(lines[start:end], first + start)
        # The section ends, or windows follow: nothing to overlap with.
        start = _overlap_start(counts, chars, start, end, limits) if more else end


def _fill(counts: list[int], chars: list[int], start: int, limits: _Limits) -> int:
    """End (exclusive) of the run of whole lines from ``start`` that fits both budgets."""
    size, max_chars, n = limits.size, limits.max_chars, len(counts)
    end, words, length = start, 0, -1  # length of "\n".join(...) so far
    # (an over-long line's count is size + 1, so the word budget also stops before it)
    while end < n and words + counts[end] <= size and length + 1 + chars[end] <= max_chars:
        words += counts[end]
        length += 1 + chars[end]
        end += 1
    return end


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


def _overlap_start(
    counts: list[int], chars: list[int], start: int, end: int, limits: _Limits
) -> int:
    """Where the next chunk starts: the last lines before ``end`` worth ≈ ``overlap`` words.

    The overlap never reaches back to ``start`` (the next chunk must move forward) and leaves
    room (words and chars) for the next line, so the next chunk always ends past ``end``.
    """
    overlap = limits.overlap
    room = limits.size - counts[end]
    char_room = limits.max_chars - chars[end]
    k, total, length = end, 0, 0
    while k - 1 > start and total < overlap:
        w, c = counts[k - 1], chars[k - 1] + 1
        if total + w > max(overlap * 1.5, 1) or total + w > room or length + c > char_room:
            break
        total += w
        length += c
        k -= 1
    return k


# --------------------------------------------------------------------------- over-long lines


def _windows(line: SourceLine, index: int, limits: _Limits) -> Iterator[_Piece]:
    for lo, hi in _window_spans(line.text, limits):
        yield _Piece((replace(line, text=line.text[lo:hi]),), index, lo)


def _window_spans(text: str, limits: _Limits) -> Iterator[tuple[int, int]]:
    """(start, end) of each window over one over-long line: at most ``size`` words and
    ``max_chars`` chars, neighbours sharing ≈ ``overlap`` words.

    Each step is a few regex matches bounded by one window's length, so the whole line costs
    linear time and no per-word Python objects.
    """
    p = _next_word(text, 0)
    while p < len(text):
        end = _window_end(text, p, limits)
        if end == p:  # the word at p alone is longer than a chunk
            token_end = _WORD_RE.match(text, p).end()  # type: ignore[union-attr]
            yield from _slices(text, p, token_end, limits)
            p = _next_word(text, token_end)
            continue
        yield p, end
        nxt = _next_word(text, end)
        if nxt >= len(text):
            return
        p = _next_start(text, p, end, nxt, limits)


def _next_word(text: str, pos: int) -> int:
    m = _WORD_RE.search(text, pos)
    return m.start() if m else len(text)


@lru_cache(maxsize=64)
def _up_to_words(n: int) -> re.Pattern[str]:
    """Up to ``n`` words and the whitespace between them, greedily."""
    return re.compile(rf"\S+(?:\s+\S+){{0,{n - 1}}}")


def _window_end(text: str, p: int, limits: _Limits) -> int:
    """End of the window that starts at the word at ``p`` (``p`` itself when that one word
    is longer than ``max_chars``)."""
    limit = p + limits.max_chars
    end = _up_to_words(limits.size).match(text, p, limit + 1).end()  # type: ignore[union-attr]
    if end > limit:
        # Past the char budget: drop the last (perhaps cut) word.
        gap = _SPACE_RE.search(text[p:end][::-1])
        end = end - gap.end() if gap else p
    return end


def _next_start(text: str, p: int, end: int, nxt: int, limits: _Limits) -> int:
    """Start of the window after ``text[p:end]`` (the next unseen word is at ``nxt``): its
    last ``overlap`` words (fewer if it has no more), but late enough that the next window
    still reaches ``nxt``'s word within ``max_chars``."""
    start = nxt
    if limits.overlap:
        # The window's last words, found from its end: match on the reversed window.
        tail = _up_to_words(limits.overlap).match(text[p:end][::-1])
        start = end - tail.end()  # type: ignore[union-attr]
        if start == p:  # that is the whole window: keep all but its first word
            start = _next_word(text, _WORD_RE.match(text, p).end())  # type: ignore[union-attr]
    need = _WORD_RE.match(text, nxt, nxt + limits.max_chars + 1).end()  # type: ignore[union-attr]
    while start < nxt and need - start > limits.max_chars:
        start = _next_word(text, _WORD_RE.match(text, start).end())  # type: ignore[union-attr]
    return start


def _slices(text: str, a: int, b: int, limits: _Limits) -> Iterator[tuple[int, int]]:
    """Overlapping slices of at most ``max_chars`` of the one word ``text[a:b]``."""
    s = a
    while b - s > limits.max_chars:
        cut = _break_point(text, s, s + limits.max_chars)
        yield s, cut
        s = max(cut - limits.overlap_chars, s + 1)
    yield s, b


def _break_point(text: str, lo: int, hi: int) -> int:
    """Where to end the slice ``text[lo:hi]``: after its last punctuation mark in the second
    half (a JSON comma, a CJK full stop), else at ``hi``."""
    floor = lo + (hi - lo) // 2
    for tier in _BREAK_TIERS:
        best = max(text.rfind(c, floor, hi) for c in tier)
        if best >= floor:
            return best + 1
    return hi


# --------------------------------------------------------------------------- chunks


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
    doc: LoadedDocument, piece: _Piece, ordinal: int, starts: list[int]
) -> LocatedChunk | None:
    a, b = 0, len(piece.lines)
    while a < b and _is_empty(piece.lines[a]):
        a += 1
    while b > a and _is_empty(piece.lines[b - 1]):
        b -= 1
    if a == b:
        return None
    lines = list(piece.lines[a:b])
    if doc.kind == "html":
        # HTML block boundaries can stack up; one blank line is one paragraph break.
        lines = [
            ln for i, ln in enumerate(lines) if not (_is_empty(ln) and _is_empty(lines[i - 1]))
        ]
    text = "\n".join(line.text for line in lines)
    if not _ALNUM_RE.search(text) or _only_heading(lines):
        return None
    first, last = lines[0], lines[-1]
    chunk = Chunk(
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
        page_label=first.page_label,
        # OCR'd text (PDF scans) says so, with the least confident of its lines
        ocr_confidence=min((ln.ocr_confidence for ln in lines if ln.ocr_confidence is not None), default=None),
    )
    # Offsets in the document's text: whole lines start at their line; a window lo chars in.
    i, j = piece.first + a, piece.first + b - 1
    start_char = starts[i] + i + piece.lo
    end_char = starts[j] + j + (piece.lo if i == j else 0) + len(last.text)
    return LocatedChunk(chunk, start_char, end_char)
