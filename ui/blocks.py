"""An answer's Markdown read as blocks: paragraphs, fenced code, lists and tables (pure Python).

Answers quote documents, and for documentation of software most answers quote a code block,
a list or a table (the extractive composer keeps them whole; an LLM writes them too). The app,
the exports and the re-run diff draw those blocks as what they are, while every piece of text
stays data: each renderer (``ui/render.py`` for Streamlit, ``ui/notebook/export.py`` for the
exports) escapes the text of paragraphs, list items and table cells itself, and a code block's
body is only ever put inside a fence it cannot close (Markdown) or ``html.escape``d inside
``<pre><code>`` (HTML). Nothing here trusts the text.

Only what CommonMark/GFM would read at the start of a line is recognised; anything else is a
paragraph, escaped as before. A fence left open (a streaming answer) runs to the end of the text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from ragcore.citations import MARKER_RE

_FENCE_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^\s`]*)[^`]*$")
_LIST_ITEM = re.compile(r"^(?P<indent>[ \t]*)(?P<bullet>[-*+]|\d{1,9}[.)])[ \t]+(?P<text>.*)$")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_SEP = re.compile(r"^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$")
_LANG = re.compile(r"[^A-Za-z0-9_+#.-]")

Kind = Literal["para", "code", "list", "table"]


@dataclass(frozen=True)
class ListItem:
    level: int  # 0 for a top-level item, 1 for one nested under it …
    ordered: bool
    number: int  # an ordered item's own number (1 for a bullet)
    text: str  # the item's text (continuation lines joined with "\n")


@dataclass(frozen=True)
class Block:
    kind: Kind
    text: str = ""  # a paragraph's text, or a code block's body (verbatim, indentation kept)
    lang: str = ""  # a code block's language ("python"), safe as a CSS class / info string
    items: tuple[ListItem, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()  # a table's rows, the header first
    align: tuple[str, ...] = ()  # per column: "" | "left" | "center" | "right"
    closed: bool = True  # a code block whose closing fence has arrived
    raw: str = ""  # the block's own lines, as in the text


def lang_of(info: str) -> str:
    """A fence's info string → a language name that is safe anywhere (class name, info string)."""
    return _LANG.sub("", info)[:30]


def split_blocks(text: str) -> list[Block]:
    """``text`` (Markdown with [n] markers) → its blocks, in order."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    out: list[Block] = []
    para: list[str] = []
    i = 0

    def flush() -> None:
        if any(ln.strip() for ln in para):
            body = "\n".join(para).strip("\n")
            out.append(Block("para", body, raw=body))
        para.clear()

    while i < len(lines):
        line = lines[i]
        m = _FENCE_OPEN.match(line)
        if m:
            flush()
            i = _code(lines, i, m, out)
            continue
        if _TABLE_ROW.match(line) and i + 1 < len(lines) and _TABLE_SEP.match(lines[i + 1]) and "|" in lines[i + 1]:
            flush()
            i = _table(lines, i, out)
            continue
        if _LIST_ITEM.match(line):
            flush()
            i = _list(lines, i, out)
            continue
        if not line.strip():
            flush()
        else:
            para.append(line)
        i += 1
    flush()
    return out


def _code(lines: list[str], i: int, m: re.Match[str], out: list[Block]) -> int:
    fence, indent = m.group("fence"), len(m.group("indent"))
    body: list[str] = []
    j = i + 1
    closed = False
    while j < len(lines):
        ln = lines[j]
        stripped = ln.strip()
        if stripped.startswith(fence[0] * len(fence)) and not stripped.lstrip(fence[0]).strip():
            closed = True
            j += 1
            break
        body.append(ln[indent:] if ln[:indent].strip() == "" else ln)
        j += 1
    out.append(Block("code", "\n".join(body), lang=lang_of(m.group("info")), closed=closed, raw="\n".join(lines[i:j])))
    return j


def _cells(line: str) -> tuple[str, ...]:
    s = line.strip()
    s = s[1:] if s.startswith("|") else s
    s = s[:-1] if s.endswith("|") and not s.endswith("\\|") else s
    return tuple(c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", s))


def _table(lines: list[str], i: int, out: list[Block]) -> int:
    header = _cells(lines[i])
    align = tuple(
        "center" if c.startswith(":") and c.endswith(":") else "right" if c.endswith(":") else "left" if c.startswith(":") else ""
        for c in _cells(lines[i + 1])
    )
    rows = [header]
    j = i + 2
    while j < len(lines) and _TABLE_ROW.match(lines[j]):
        rows.append(_cells(lines[j]))
        j += 1
    width = len(header)
    rows = [tuple((list(r) + [""] * width)[:width]) for r in rows]
    out.append(Block("table", rows=tuple(rows), align=(tuple(align) + ("",) * width)[:width], raw="\n".join(lines[i:j])))
    return j


def _list(lines: list[str], i: int, out: list[Block]) -> int:
    items: list[ListItem] = []
    indents: list[int] = []  # the indentation of each open level
    j = i
    while j < len(lines):
        m = _LIST_ITEM.match(lines[j])
        if m:
            width = len(m.group("indent").expandtabs(4))
            while indents and width < indents[-1]:
                indents.pop()
            if not indents or width > indents[-1]:
                indents.append(width)
            bullet = m.group("bullet")
            ordered = bullet[0].isdigit()
            items.append(ListItem(len(indents) - 1, ordered, int(bullet[:-1]) if ordered else 1, m.group("text")))
        elif lines[j].strip() and items and lines[j][:1] in (" ", "\t"):  # a continuation line of the item
            last = items[-1]
            items[-1] = ListItem(last.level, last.ordered, last.number, last.text + "\n" + lines[j].strip())
        else:
            break
        j += 1
    out.append(Block("list", items=tuple(items), raw="\n".join(lines[i:j])))
    return j


def markers_only(block: Block) -> bool:
    """A paragraph that is nothing but citation markers ("[1]", "[2][3]"): the source of the block before it."""
    return block.kind == "para" and bool(block.text.strip()) and not MARKER_RE.sub("", block.text).strip()


def trailing_markers(text: str) -> str:
    """The markers a paragraph ends with ("… run: [1]" → "[1]"), whitespace-normalised."""
    m = re.search(r"((?:\s*\[[^\[\]\n]{1,40}\])+)\s*$", text)
    return re.sub(r"\s+", "", m.group(1)) if m else ""


def drop_repeated_markers(blocks: list[Block]) -> list[Block]:
    """A code block or table brought by the sentence that introduces it carries that sentence's
    marker again, alone on a line after it ("To ingest, run: [1]", the command, "[1]"). Shown, it
    reads as a stray [1]: drop it when the introducing paragraph already ends with the same
    markers. Any other marker-only paragraph stays (it is the block's only source)."""
    out: list[Block] = []
    for k, b in enumerate(blocks):
        if (markers_only(b) and k >= 2 and blocks[k - 1].kind in ("code", "table", "list")
                and blocks[k - 2].kind == "para"
                and trailing_markers(blocks[k - 2].text) == re.sub(r"\s+", "", b.text)):
            continue
        out.append(b)
    return out
