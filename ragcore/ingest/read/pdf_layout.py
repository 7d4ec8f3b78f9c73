"""A PDF's pages of lines made into citable text: page furniture out, hyphenated words whole,
paragraph breaks where the page leaves a gap, sections from the PDF's outline.

- **Furniture** (running headers, footers, page numbers) is found the way a reader sees it:
  the first or last lines of a page that repeat at the same height on several pages once
  digits are ignored ("Chapter 4: Drawing commands 15"), bare page numbers at a page's edge,
  and edge lines that carry the page's own number at the height where furniture stands on
  other pages. Such a line keeps its number but loses its text, so no chunk carries it and the
  lines after it keep their numbers on the page.
- **Hyphens**: a word broken at a line end ("nor-" / "mal") is made whole on the first line
  (the rest of the word moves up); the hyphen stays when the document writes that word with a
  hyphen elsewhere and never without ("comma-separated").
- **Paragraphs**: a gap clearly larger than the usual line spacing becomes an empty line, so
  the chunker cuts there; never right after a table caption, so a caption stays with its rows.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from dataclasses import dataclass, replace
from typing import Sequence

from ragcore.ingest.read.pdf_text import HYPHEN_MARK, PageLine

__all__ = ["Bookmark", "LaidPage", "drop_furniture", "layout_lines", "navigation_lines", "numbered_headings",
           "rejoin_hyphens"]

_EDGE = 2  # lines at each end of a page that may be furniture
_POS_TOL = 3.0  # points: the same height on another page
_MARGIN = 0.1  # share of the page's height above and below the text block
_BAND = 0.15  # share of the page's height where running headers and footers stand
_PAGE_NO = re.compile(r"^\s*(?:page\s+)?(?:\d{1,4}|[ivxlcdm]{1,7})(?:\s*(?:/|of)\s*\d{1,4})?\s*$", re.I)
_CAPTION = re.compile(r"^\s*(?:table|tab\.)\s+[\dIVX]+[.:]?", re.I)
_WORD_TAIL = re.compile(r"[\w’']+$")
_WORD_HEAD = re.compile(r"^\s*([a-z]\S*)(.*)$", re.S)  # the rest of the word, with its punctuation


@dataclass(frozen=True)
class LaidPage:
    """One page: its lines, its printed label (/PageLabels) and, when OCR read it, the mean
    word confidence (0..100)."""

    lines: tuple[PageLine, ...]
    label: str | None = None
    ocr_confidence: float | None = None
    height: float | None = None  # points


@dataclass(frozen=True)
class Bookmark:
    level: int  # 0 = top
    title: str
    page: int  # 0-based page index
    top: float | None  # points from the page's top; None = the page's top


# --------------------------------------------------------------------------- furniture


def _shape(text: str) -> str:
    return re.sub(r"\d+", "#", " ".join(text.lower().split()))


def _edges(lines: Sequence[PageLine]) -> list[int]:
    filled = [i for i, ln in enumerate(lines) if ln.text.strip()]
    return sorted(set(filled[:_EDGE] + filled[-_EDGE:]))


def _near(top: float | None, tops: list[float]) -> bool:
    return top is not None and any(abs(top - t) <= _POS_TOL for t in tops)


def _own_number(text: str, page_no: int, label: str | None) -> bool:
    words = text.split()
    ends = {words[0].lower(), words[-1].lower()} if words else set()
    return str(page_no) in ends or (label or "").lower() in ends - {""}


def drop_furniture(pages: Sequence[LaidPage]) -> list[set[int]]:
    """For each page, the indices of its lines that are running headers, footers or page numbers."""
    need = 3 if len(pages) >= 6 else 2
    seen: Counter[tuple[str, int]] = Counter()
    for p in pages:
        for i in _edges(p.lines):
            ln = p.lines[i]
            if ln.top is not None:
                seen.update({(_shape(ln.text), round(ln.top / _POS_TOL))})
    repeated = {k for k, n in seen.items() if n >= need}
    out: list[set[int]] = []
    tops: list[float] = []
    for p in pages:
        hits = set()
        for i in _edges(p.lines):
            ln = p.lines[i]
            key = None if ln.top is None else (_shape(ln.text), round(ln.top / _POS_TOL))
            # repeated text counts in the page's outer band only: body lines can repeat too
            if (key in repeated and _in_band(ln, p.height)) or (len(pages) > 1 and _PAGE_NO.match(ln.text)):
                hits.add(i)
                if ln.top is not None:
                    tops.append(ln.top)
        out.append(hits)
    # second pass: a header that names its page ("Chapter 4: Drawing commands 15") at furniture
    # height, and the page's bare number in its top or bottom margin wherever PDFium ordered it
    for no, (p, hits) in enumerate(zip(pages, out), 1):
        for i in _edges(p.lines):
            ln = p.lines[i]
            if i not in hits and _near(ln.top, tops) and _own_number(ln.text, no, p.label):
                hits.add(i)
        for i, ln in enumerate(p.lines):
            if i not in hits and _in_margin(ln, p.height) and _PAGE_NO.match(ln.text) and _own_number(ln.text, no, p.label):
                hits.add(i)
    return out


def _in_band(ln: PageLine, height: float | None) -> bool:
    """In the outer 15% of the page (where running heads and feet stand), or height unknown."""
    return not height or ln.top is None or not _BAND < ln.top / height < 1 - _BAND


def _in_margin(ln: PageLine, height: float | None) -> bool:
    return ln.top is not None and bool(height) and not _MARGIN < ln.top / height < 1 - _MARGIN


# --------------------------------------------------------------------------- contents and index pages

# an entry of a contents page or an index: words, the dot leader (``pdf_text`` made it "…"), page numbers
_ENTRY = re.compile(r"(?:\S.*)?…\s*(?:[\divxlcdm]+(?:\s*[-–,]\s*[\divxlcdm]+)*)\s*$", re.I)
_NAV_SHARE = 0.5  # a page whose lines are mostly entries is a contents page or an index


def navigation_lines(lines: Sequence[PageLine]) -> set[int]:
    """On a contents page or an index (most of its lines are entries: "curl … 23, 133"), the
    entries and the index's letter heads ("D"). They say where things are, not what they are:
    chunked, they answered no question and crowded the passages that do out of the evidence
    (an index chunk ranked among a question's six). The page itself is still shown."""
    filled = [i for i, ln in enumerate(lines) if ln.text.strip()]
    entries = {i for i in filled if _ENTRY.match(lines[i].text.strip())}
    if not filled or len(entries) < _NAV_SHARE * len(filled):
        return set()
    return entries | {i for i in filled if len(lines[i].text.strip()) == 1}


# --------------------------------------------------------------------------- hyphens


def rejoin_hyphens(lines: list[str], hyphenated: set[str] | None = None) -> list[str]:
    """Make words broken at line ends whole on the first line; the line count never changes.

    A line ending in PDFium's hyphen mark, or in "-" after a letter, joins the next line's first
    word when that starts in lower case. ``hyphenated``: words the document writes with a
    hyphen (lower case), whose hyphen is kept.
    """
    out = list(lines)
    for i in range(len(out) - 1):
        cur = out[i].rstrip()
        marked = cur.endswith(HYPHEN_MARK)
        if not (marked or (cur.endswith("-") and cur[-2:-1].isalpha())):
            if HYPHEN_MARK in out[i]:
                out[i] = out[i].replace(HYPHEN_MARK, "")
            continue
        m = _WORD_HEAD.match(out[i + 1])
        if m is None:
            out[i] = cur.rstrip(HYPHEN_MARK) + ("-" if marked else "")
            continue
        head, rest = m.group(1), m.group(2)
        tail = _WORD_TAIL.search(cur[:-1])
        both = f"{tail.group() if tail else ''}-{head.rstrip('.,;:)!?’')}".lower()
        keep = hyphenated is not None and both in hyphenated
        out[i] = cur[:-1] + ("-" if keep else "") + head
        out[i + 1] = rest.lstrip()
    return out


def hyphenated_words(pages: Sequence[LaidPage]) -> set[str]:
    """Words the document writes with a hyphen inside a line, minus those it also writes whole."""
    text = "\n".join(ln.text for p in pages for ln in p.lines)
    with_h = {w.lower() for w in re.findall(r"\b[a-zA-Z]+-[a-zA-Z]+\b", text)}
    whole = {w.lower() for w in re.findall(r"\b[a-zA-Z]{4,}\b", text)}
    return {w for w in with_h if w.replace("-", "") not in whole}


# --------------------------------------------------------------------------- paragraphs


def _para_gap(pages: Sequence[LaidPage]) -> float | None:
    gaps = [ln.gap_before for p in pages for ln in p.lines if ln.gap_before is not None and ln.gap_before > 0]
    sizes = [ln.size for p in pages for ln in p.lines if ln.size]
    if len(gaps) < 10 or not sizes:
        return None
    return statistics.median(gaps) + 0.6 * statistics.median(sizes)


def layout_lines(pages: Sequence[LaidPage]) -> list[list[PageLine]]:
    """Each page's lines: furniture emptied, hyphens rejoined, an empty line at each paragraph gap."""
    furniture = drop_furniture(pages)
    hyph = hyphenated_words(pages)
    bar = _para_gap(pages)
    out: list[list[PageLine]] = []
    for p, drop in zip(pages, furniture):
        drop = drop | navigation_lines(p.lines)
        kept = [replace(ln, text="") if i in drop else ln for i, ln in enumerate(p.lines)]
        texts = rejoin_hyphens([ln.text for ln in kept], hyph)
        lines: list[PageLine] = []
        for ln, text in zip(kept, texts):
            gap = ln.gap_before
            if (bar is not None and gap is not None and gap > bar and lines and lines[-1].text.strip()
                    and not _CAPTION.match(lines[-1].text)):
                lines.append(PageLine("", None))
            lines.append(replace(ln, text=text.rstrip()))
        while lines and not lines[-1].text.strip():
            lines.pop()  # trailing blank lines carry nothing and number nothing
        out.append(lines)
    return out


# --------------------------------------------------------------------------- sections

_NUMBERED = re.compile(r"^(\d{1,2}(?:\.\d{1,2}){0,3})\.?\s+\S")
_HEADING_SIZE = 1.15  # a heading is set larger than the body text
_HEADING_WORDS = 10
_MIN_HEADINGS = 3  # fewer found: the document's headings are not set that way, and one stray line would section it all


def numbered_headings(pages: Sequence[Sequence[PageLine]]) -> list[Bookmark]:
    """Sections for a PDF without an outline: numbered lines ("2.4 Booleans and Macros", "1.1 A
    note on terminology") set larger than the document's body text and standing as a paragraph of
    their own. A numbered list item ("3. Put the units…") is set in the body's size and is not one."""
    sizes = [ln.size for p in pages for ln in p if ln.size and ln.text.strip()]
    if not sizes:
        return []
    body = statistics.median(sizes)
    out: list[Bookmark] = []
    for pno, lines in enumerate(pages):
        for i, ln in enumerate(lines):
            m = _NUMBERED.match(ln.text.strip())
            if (m is None or not ln.size or ln.size < _HEADING_SIZE * body or len(ln.text.split()) > _HEADING_WORDS
                    or (i > 0 and lines[i - 1].text.strip()) or (i + 1 < len(lines) and lines[i + 1].text.strip())):
                continue
            out.append(Bookmark(m.group(1).count("."), " ".join(ln.text.split()), pno, ln.top))
    return out if len(out) >= _MIN_HEADINGS else []



def sections_for(pages: Sequence[Sequence[PageLine]], marks: Sequence[Bookmark]) -> list[list[tuple[str, ...]]]:
    """Each line's section path: the outline entries at or above it (levels nest)."""
    order = sorted(marks, key=lambda b: (b.page, b.top if b.top is not None else -1.0))
    k, path = 0, ()
    stack: list[tuple[int, str]] = []
    out: list[list[tuple[str, ...]]] = []
    for pno, lines in enumerate(pages):
        row: list[tuple[str, ...]] = []
        for ln in lines:
            # an inserted paragraph break has no height: it stays in the section above it
            while (ln.top is not None or ln.text.strip()) and k < len(order) and _reached(order[k], pno, ln.top):
                b = order[k]
                while stack and stack[-1][0] >= b.level:
                    stack.pop()
                stack.append((b.level, b.title))
                path = tuple(t for _, t in stack)
                k += 1
            row.append(path)
        out.append(row)
    return out


def _reached(b: Bookmark, pno: int, top: float | None) -> bool:
    if b.page != pno:
        return b.page < pno
    return b.top is None or top is None or top >= b.top - _POS_TOL
