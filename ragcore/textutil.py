"""Sentence spans and light text normalisation, shared by the citation checker and the
extractive composer (they must agree on what a sentence is).

Some blocks are never cut into sentences: a fenced code block (```` ``` ```` / ``~~~``), a run of
Markdown table rows (``| a | b |``) and a reST literal block (the indented lines after a
paragraph that ends with ``::``). Each is one span (``Span.block`` says which), so that a
quoted block is one claim for the checker and matches the one evidence span it was quoted from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragcore.encoders.sparse import STOPWORDS, tokenize

_ABBREV = {
    "e.g", "i.e", "etc", "vs", "cf", "mr", "mrs", "ms", "dr", "no", "fig", "approx", "incl", "resp", "al", "ca",
}
# a sentence ends at . ! ? (optionally followed by a closing quote/bracket) before whitespace; not
# a mark quoted in brackets ("the period (.) character")
_END = re.compile(r"(?<![(\[])[.!?][\"'”’)\]]*(?=\s)")
# a parenthesis that ends with its own full stop, the sentence going on in lower case after it
_INSIDE_BRACKETS = re.compile(r"[.!?][\"'”’]*[)\]][\"'”’)\]]*\s+[a-z]")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|#{1,6})\s+")
_WS = re.compile(r"\s+")
# Markdown's hard line break: a line that ends in it is a block of its own (a title, a term, a nested
# list's last item) with text going on below it in the same block; no sentence runs across it
LINE_BREAK = "  "
# a paragraph ends at a blank line, a bullet or heading line, a heading's underline, and a line ending
# in Markdown's hard line break (two spaces): the HTML reader ends a list item's title or nested list
# that way where the item's text goes on below it (ingest/read/html.py)
_BLOCK_BREAK = re.compile(
    r"\n\s*\n|\n(?=\s*(?:[-*+•]|\d+[.)]|#{1,6})\s)|^ {0,3}#{1,6}\s.*\n|^([=\-~^`'\"*+#])\1{2,}\s*\n|(?<=\S) {2,}\n",
    re.M,
)
# Markdown's `code` and reST's ``literal`` (tried first: read as single backticks, the second
# literal's opening would pair with the first one's closing and swallow the prose between them)
_INLINE_CODE = re.compile(r"``[^`\n]+``|`[^`\n]+`")


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str  # whitespace-normalised, bullet/heading markers stripped
    heading: bool = False  # a Markdown/reST heading line, not a sentence of prose
    block: str | None = None  # "code" | "table" for a block kept whole; None for prose


def normalize_ws(text: str) -> str:
    return _WS.sub(" ", text).strip()


def sentence_spans(text: str) -> list[Span]:
    """Split ``text`` into sentences with their character offsets.

    Blank lines, list items, headings and hard line breaks end a sentence as well; a period inside an
    identifier (``django.contrib``), a number (``3.2``) or after a known abbreviation does not.
    Code blocks and tables are single spans (see the module docstring).
    """
    spans: list[Span] = []
    pos = 0
    for start, end, kind in block_regions(text):
        _prose_spans(text, pos, start, spans)
        raw = text[start:end].rstrip()
        spans.append(Span(start, start + len(raw), normalize_ws(raw), block=kind))
        pos = end
    _prose_spans(text, pos, len(text), spans)
    return spans


def _prose_spans(full: str, lo: int, hi: int, spans: list[Span]) -> None:
    text = full[lo:hi]
    # paragraph-ish blocks first: blank lines, bullets and headings start a new block, and a
    # heading line ends one (so "## Title\nText." is a heading and a sentence, not one span)
    cuts = {0, len(text)}
    for m in _BLOCK_BREAK.finditer(text):
        cuts.add(m.end())
    # no sentence ends inside inline code: `ragcore ask "..." --top-k 10`
    code = [(m.start(), m.end()) for m in _INLINE_CODE.finditer(text)]
    bounds = sorted(cuts)
    for bs, be in zip(bounds, bounds[1:]):
        block = text[bs:be]
        pos = 0
        bullet = _BULLET.match(block)  # "1. " or "2) " numbers an item: it ends no sentence
        for m in _END.finditer(block):
            end = m.end()
            if any(a <= bs + m.start() < b for a, b in code) or (bullet and m.start() < bullet.end()):
                continue
            word = re.search(r"([A-Za-z.]+)[.!?]$", block[pos : m.start() + 1])
            if word and word.group(1).lower().rstrip(".") in _ABBREV:
                continue
            if _INSIDE_BRACKETS.match(block, m.start()):
                continue  # "(the default is 10 items, which suits most uses.) before the first run": one sentence
            _add(spans, full, lo + bs + pos, lo + bs + end)
            pos = end
        _add(spans, full, lo + bs + pos, lo + be)


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")


def block_regions(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of the blocks kept whole: fenced code, Markdown tables, reST literal
    blocks. ``end`` is past the block's last line break (or the text's end). An unclosed fence
    runs to the end of the text."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    out: list[tuple[int, int, str]] = []
    i = 0
    while i < len(lines):
        j, kind = _block_at(lines, i)
        if kind:
            while not lines[i].strip():  # a literal block starts at its first non-blank line
                i += 1
            out.append((starts[i], starts[j], kind))
            i = j
        else:
            i += 1
    return out


def _block_at(lines: list[str], i: int) -> tuple[int, str | None]:
    """Where the block starting at line ``i`` ends (exclusive) and its kind; (i, None) if none."""
    m = _FENCE.match(lines[i])
    if m:
        fence = m.group(1)
        for j in range(i + 1, len(lines)):
            if lines[j].strip().startswith(fence[0] * len(fence)) and not lines[j].strip().strip(fence[0]):
                return j + 1, "code"
        return len(lines), "code"
    if _TABLE_ROW.match(lines[i]) and i + 1 < len(lines) and _TABLE_ROW.match(lines[i + 1]):
        j = i
        while j < len(lines) and _TABLE_ROW.match(lines[j]):
            j += 1
        return j, "table"
    if i and lines[i - 1].rstrip().endswith("::") and not lines[i].strip():
        return _literal_block(lines, i)
    return i, None


def _literal_block(lines: list[str], i: int) -> tuple[int, str | None]:
    """A reST literal block: after "para::" and a blank line, the lines indented more than it."""
    j = i
    while j < len(lines) and not lines[j].strip():
        j += 1
    if j == len(lines) or not lines[j][:1].isspace():
        return i, None
    end = j
    while j < len(lines) and (not lines[j].strip() or lines[j][:1].isspace()):
        if lines[j].strip():
            end = j + 1
        j += 1
    return end, "code"


def _add(spans: list[Span], text: str, start: int, end: int) -> None:
    raw = text[start:end]
    lead = len(raw) - len(raw.lstrip())
    start += lead
    raw = raw.strip()
    if not raw:
        return
    clean = normalize_ws(_BULLET.sub("", raw))
    if re.search(r"[A-Za-z0-9]", clean):
        heading = raw.startswith("#") or bool(re.search(r"\n\s*([=\-~^\"'`*+#])\1{2,}\s*$", raw))
        spans.append(Span(start, start + len(raw), clean, heading))


def content_terms(text: str) -> set[str]:
    """Stemmed content words (the BM25 tokeniser, minus stopwords)."""
    return {t for t in tokenize(text) if t not in STOPWORDS}


def line_of_offset(text: str, offset: int) -> int:
    """0-based line index of a character offset."""
    return text.count("\n", 0, offset)
