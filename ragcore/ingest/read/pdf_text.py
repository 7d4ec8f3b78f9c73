"""One PDF page's text layer as lines with their height on the page, read with PDFium.

PDFium was chosen by measurement (``ragcore bench pdf``, bench/results/pdf-extraction.md): on
TeX-produced PDFs it maps the standard TeX fonts' glyphs to Unicode where pypdf drops "fi",
turns "×"/"−"/"≤" into control characters and loses underscores, it keeps margin notes on
their own line, and it is several times faster. What is left to clean is done here:
ligature characters become letters (NFKC of the Alphabetic Presentation Forms only: NFKC of
the whole text would also rewrite "²" or "…"), PDFium's line-end hyphen mark (U+FFFE) is kept
as :data:`HYPHEN_MARK` for :mod:`.pdf_layout` to rejoin, and control characters go.
"""

from __future__ import annotations

import re
import statistics
import unicodedata
from dataclasses import dataclass
from typing import Any

__all__ = ["HYPHEN_MARK", "PageLine", "clean_line", "page_lines"]

# a hyphen PDFium saw at a line end (it reports U+FFFE there); a soft hyphen means the same
HYPHEN_MARK = "\u00ad"
_LIGATURES = re.compile("[\ufb00-\ufb06]")
# C0/C1 controls and other non-characters a text layer can carry; a tab is a space
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffd\ufeff]")
_LINE_BREAK = re.compile("\r\n|\r|\n")
# dot leaders of a contents or index page ("debugger . . . . . . 178"): each dot would count as a
# word, so an index page would make dozens of chunks that say nothing and outweigh real pages
_LEADER = re.compile(r"(?:\s*\. ?){4,}\s*")


@dataclass(frozen=True)
class PageLine:
    """A line of a page: its cleaned text and where its top stands, in points from the page's
    top (None when PDFium could not place it). ``gap_before`` is the blank space between it and
    the line above, in points (None for a page's first line)."""

    text: str
    top: float | None
    gap_before: float | None = None
    size: float | None = None  # the line's height in points (its first character's box)


def clean_line(text: str) -> str:
    """Ligatures to letters, the line-end hyphen mark kept, control characters out."""
    text = _LIGATURES.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)
    text = text.replace("\ufffe", HYPHEN_MARK).replace("\t", " ")
    text = _CONTROL.sub("", text)
    text = _LEADER.sub(" … ", text)
    # a hyphen mark inside a line (not at its end) is only a soft hyphen: invisible
    body, end = text.rstrip(), ""
    if body.endswith(HYPHEN_MARK):
        body, end = body[:-1], HYPHEN_MARK
    return body.replace(HYPHEN_MARK, "") + end


def page_lines(page: Any) -> list[PageLine]:
    """The text lines of a pypdfium2 page, top to bottom as PDFium orders them (column by column
    for the usual two-column layouts, whose content streams run that way)."""
    textpage = page.get_textpage()
    try:
        n = textpage.count_chars()
        raw = textpage.get_text_range(0, n) if n > 0 else ""
        height = float(page.get_height())
        # char indices match string offsets when every char is one UTF-16 unit (nearly always)
        placeable = len(raw) == n
        out: list[PageLine] = []
        prev_bottom = None
        runs = list(_iter_lines(raw))
        # a run-on line is about twice as long as the page's usual line: only those are examined
        # char by char (a character's box costs a call into PDFium)
        long = 1.5 * statistics.median([len(t) for _, t in runs if len(t) > 20] or [1_000_000])
        if placeable:
            runs = _lone_marks_out(textpage, runs)
        for start, text in runs:
            cut = placeable and (len(text) > long or "\ufffe" in text[:-1])
            for a, b in _visual_lines(textpage, start, text) if cut else [(0, len(text))]:
                part = text[a:b]
                top = size = gap = None
                first = _first_visible(part)
                if placeable and first is not None:
                    _, bottom, _, top_pt = textpage.get_charbox(start + a + first)
                    top, size = height - top_pt, max(0.0, top_pt - bottom)
                    gap = None if prev_bottom is None else top - prev_bottom
                    prev_bottom = height - bottom
                if placeable:
                    part = _drop_note_marks(textpage, start + a, part)
                out.append(PageLine(clean_line(part), top, gap, size))
        return out
    finally:
        textpage.close()


# where a footnote's mark stands: after a word or a sentence's end ("preamble.2", "FGS.1"), or
# opening the note's own text at the foot of the page ("2User feedback suggested…")
_NOTE_MARK = re.compile(r"(?<=[A-Za-z)\].,;:!?’”])\d{1,2}(?=\s|$)|^\d{1,2}(?=[A-Z])")
_SUPERSCRIPT = 0.85  # a mark is set in a smaller size than the text beside it


def _drop_note_marks(textpage: Any, offset: int, text: str) -> str:
    """``text`` without its footnote marks: digits set smaller and raised above the text beside
    them. Left in, "…set by the user in the preamble.2" is no whole sentence (it does not end on
    its full stop) and is never quoted, and "2User feedback…" reads as a number. Digits in the
    text's own size (a version, "x2") stay. ``offset``: the text's first character in the page."""
    import pypdfium2.raw as raw

    cuts = []
    for m in _NOTE_MARK.finditer(text):
        beside = m.start() - 1 if m.start() > 0 else m.end()  # the character before, or the note's first letter
        mark = raw.FPDFText_GetFontSize(textpage.raw, offset + m.start())
        body = raw.FPDFText_GetFontSize(textpage.raw, offset + beside)
        if mark < _SUPERSCRIPT * body and (m.start() == 0 or _raised(textpage, offset + m.start(), offset + beside)):
            cuts.append((m.start(), m.end()))
    for a, b in reversed(cuts):
        text = text[:a] + text[b:]
    return text


def _lone_marks_out(textpage: Any, runs: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A footnote's mark that PDFium put on a line of its own (it is raised above the note's
    first line), emptied: "2" over "If you declare twocolumn, …" read as a term or a number."""
    import pypdfium2.raw as raw

    out = list(runs)
    for i, (start, text) in enumerate(runs[:-1]):
        nxt_start, nxt = runs[i + 1]
        first = _first_visible(nxt)
        if not re.fullmatch(r"\s*\d{1,2}\s*", text) or first is None or not nxt[first].isalpha():
            continue
        mark = raw.FPDFText_GetFontSize(textpage.raw, start + _first_visible(text))
        if mark < _SUPERSCRIPT * raw.FPDFText_GetFontSize(textpage.raw, nxt_start + first):
            out[i] = (start, "")
    return out


def _raised(textpage: Any, mark: int, beside: int) -> bool:
    """The mark's bottom stands above the bottom of the character beside it (a superscript)."""
    return textpage.get_charbox(mark)[1] > textpage.get_charbox(beside)[1] + 0.5


def _visual_lines(textpage: Any, start: int, text: str) -> list[tuple[int, int]]:
    """PDFium sometimes runs two printed lines into one: after a line-end hyphen (its U+FFFE),
    and with a space where the characters either side of it do not overlap in height (a wrap or
    a column jump). Split there."""
    cuts, lo = [], 0
    for j, ch in enumerate(text):
        if ch == "\ufffe" and j + 1 < len(text):  # PDFium's line-end hyphen, the next line run on
            cuts.append((lo, j + 1))
            lo = j + 1
            continue
        if ch != " " or j == 0 or j + 1 >= len(text) or text[j - 1] == " " or text[j + 1] == " ":
            continue
        _, b1, _, t1 = textpage.get_charbox(start + j - 1)
        _, b2, _, t2 = textpage.get_charbox(start + j + 1)
        if t2 < b1 or b2 > t1:
            cuts.append((lo, j))
            lo = j + 1
    cuts.append((lo, len(text)))
    return cuts


def _iter_lines(raw: str):
    pos = 0
    for m in _LINE_BREAK.finditer(raw):
        yield pos, raw[pos : m.start()]
        pos = m.end()
    if pos < len(raw):
        yield pos, raw[pos:]


def _first_visible(text: str) -> int | None:
    for i, ch in enumerate(text):
        if not ch.isspace():
            return i
    return None
