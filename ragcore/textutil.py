"""Sentence spans and light text normalisation, shared by the citation checker and the
extractive composer (they must agree on what a sentence is)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .sparse import STOPWORDS, tokenize

_ABBREV = {
    "e.g", "i.e", "etc", "vs", "cf", "mr", "mrs", "ms", "dr", "no", "fig", "approx", "incl", "resp", "al", "ca",
}
# a sentence ends at . ! ? (optionally followed by a closing quote/bracket) before whitespace
_END = re.compile(r"[.!?][\"'”’)\]]*(?=\s)")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|#{1,6})\s+")
_WS = re.compile(r"\s+")
_BLOCK_BREAK = re.compile(
    r"\n\s*\n|\n(?=\s*(?:[-*+•]|\d+[.)]|#{1,6})\s)|^ {0,3}#{1,6}\s.*\n|^([=\-~^`'\"*+#])\1{2,}\s*\n", re.M
)
_INLINE_CODE = re.compile(r"`[^`\n]+`")


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    text: str  # whitespace-normalised, bullet/heading markers stripped
    heading: bool = False  # a Markdown/reST heading line, not a sentence of prose


def normalize_ws(text: str) -> str:
    return _WS.sub(" ", text).strip()


def sentence_spans(text: str) -> list[Span]:
    """Split ``text`` into sentences with their character offsets.

    Blank lines, list items and headings end a sentence as well; a period inside an
    identifier (``django.contrib``), a number (``3.2``) or after a known abbreviation does not.
    """
    spans: list[Span] = []
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
        for m in _END.finditer(block):
            end = m.end()
            if any(a <= bs + m.start() < b for a, b in code):
                continue
            word = re.search(r"([A-Za-z.]+)[.!?]$", block[pos : m.start() + 1])
            if word and word.group(1).lower().rstrip(".") in _ABBREV:
                continue
            _add(spans, text, bs + pos, bs + end)
            pos = end
        _add(spans, text, bs + pos, be)
    return spans


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
