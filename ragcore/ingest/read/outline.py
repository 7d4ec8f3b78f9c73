"""Sections of plain text, Markdown, reST and Python source, line by line: each SourceLine keeps
its original line and learns its section path and anchor (GitHub's or docutils' slugs), so a
citation can name the section it quotes. ``loaders.py`` dispatches here by kind."""

from __future__ import annotations

import re
import unicodedata

from ragcore.types import SourceLine

def github_slug(text: str) -> str:
    """GitHub's heading anchor: lowercase, drop punctuation except "-" and "_", spaces to "-"."""
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def docutils_slug(text: str) -> str:
    """docutils' ``make_id``: ASCII-fold, lowercase, non-alphanumeric runs to "-"."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower())
    return re.sub(r"^[-0-9]+|-+$", "", slug)


def _unique(slug: str, seen: dict[str, int]) -> str:
    """GitHub and docutils both disambiguate repeated anchors with a numeric suffix."""
    count = seen.get(slug, 0)
    seen[slug] = count + 1
    return slug if count == 0 else f"{slug}-{count}"


# A section title is stored with every chunk of its section: a hostile 3 MB "heading" would
# be copied into thousands of payloads, and the inline-markup regexes below backtrack
# quadratically on such lines ("# *a *a *a …"). Titles are cut before cleaning and after.
MAX_TITLE_CHARS = 200
_MAX_RAW_TITLE_CHARS = 4 * MAX_TITLE_CHARS


def clip_title(text: str) -> str:
    return text if len(text) <= MAX_TITLE_CHARS else text[: MAX_TITLE_CHARS - 1].rstrip() + "…"


class _Outline:
    """The heading path at the current line: a stack of (level, title)."""

    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []
        self.section: tuple[str, ...] = ()

    def enter(self, level: int, title: str) -> tuple[str, ...]:
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, clip_title(title)))
        self.section = tuple(t for _, t in self._stack)
        return self.section


# --------------------------------------------------------------------------- plain text

_Loaded = tuple[list[SourceLine], "str | None"]


def _load_plain(lines: list[str]) -> _Loaded:
    """Text, and code other than Python: lines as they are, no sections."""
    return [SourceLine(no=i, text=t) for i, t in enumerate(lines, 1)], None


# --------------------------------------------------------------------------- markdown

_ATX_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE_RE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT_RE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FRONT_MATTER_END = frozenset({"---", "..."})


def clean_inline_markdown(text: str) -> str:
    """Heading text as a reader sees it: no links, emphasis, code ticks or HTML tags."""
    text = text[:_MAX_RAW_TITLE_CHARS]
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [text](url), ![alt](src)
    text = re.sub(r"!?\[([^\]]*)\]\[[^\]]*\]", r"\1", text)  # [text][ref]
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = re.sub(r"(\*\*|__)(.+?)\1", r"\2", text)
    text = re.sub(r"(?<!\w)([*_])(.+?)\1(?!\w)", r"\2", text)
    text = re.sub(r"`+([^`]*)`+", r"\1", text)
    text = re.sub(r"\s+#+\s*$", "", text)
    return " ".join(text.split())


def _front_matter_end(lines: list[str]) -> int:
    """Index after YAML front matter ("---" first line … "---"/"..."), or 0 if there is none."""
    if not lines or lines[0].rstrip() != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip() in _FRONT_MATTER_END:
            return i + 1
    return 0


def _may_be_setext_text(line: str) -> bool:
    """Lines that cannot be the text of a setext heading: blanks, indented code, lists, quotes
    and tables ("- a" + "---" would otherwise turn a list item into a heading)."""
    stripped = line.lstrip(" ")
    return (
        bool(stripped)
        and len(line) - len(stripped) < 4
        and not re.match(r"([-*+>|]|\d+[.)])(\s|$)", stripped)
    )


def _load_markdown(lines: list[str]) -> _Loaded:
    outline = _Outline()
    anchor: str | None = None
    seen: dict[str, int] = {}
    title: str | None = None
    # Mutable [section, anchor] per line so that a setext underline can relabel its title line.
    meta: list[tuple[tuple[str, ...], str | None]] = []
    fence: str | None = None  # the opening fence while inside a fenced code block
    start = _front_matter_end(lines)
    meta.extend([((), None)] * start)
    prev_is_paragraph = False  # previous line could be a setext heading's text

    def heading(level: int, raw: str) -> None:
        nonlocal anchor, title
        text = clean_inline_markdown(raw)
        if not text:
            return  # an empty "#" line names no section
        outline.enter(level, text)
        anchor = _unique(github_slug(text), seen) or None
        title = title or clip_title(text)

    for i in range(start, len(lines)):
        line = lines[i]
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
                fence = None
            meta.append((outline.section, anchor))
            prev_is_paragraph = False
            continue
        if m := _FENCE_RE.match(line):
            fence = m.group(1)
            meta.append((outline.section, anchor))
            prev_is_paragraph = False
            continue
        if m := _ATX_RE.match(line):
            heading(len(m.group(1)), m.group(2) or "")
            meta.append((outline.section, anchor))
            prev_is_paragraph = False
            continue
        if prev_is_paragraph and (m := _SETEXT_RE.match(line)):
            heading(1 if m.group(1)[0] == "=" else 2, lines[i - 1])
            meta[i - 1] = (outline.section, anchor)
            meta.append((outline.section, anchor))
            prev_is_paragraph = False
            continue
        meta.append((outline.section, anchor))
        prev_is_paragraph = _may_be_setext_text(line)

    out = [
        SourceLine(no=i, text=t, section=s, anchor=a)
        for i, (t, (s, a)) in enumerate(zip(lines, meta), 1)
    ]
    return out, title


# --------------------------------------------------------------------------- reST

_ADORNMENT_RE = re.compile(r"^([!-/:-@\[-`{-~])\1+[ \t]*$")


def clean_inline_rst(text: str) -> str:
    """Title text without roles, interpreted text, links and emphasis markers."""
    text = text[:_MAX_RAW_TITLE_CHARS]
    text = re.sub(r":[\w:+.-]+:`([^`]*)`", r"\1", text)  # :role:`text`
    text = re.sub(r"`([^`<]*?)\s*<[^>]*>`__?", r"\1", text)  # `text <url>`_
    text = re.sub(r"`+([^`]*)`+_{0,2}", r"\1", text)
    text = re.sub(r"(\*\*|\*)(.+?)\1", r"\2", text)
    text = re.sub(r"\s+<[^>]+>$", "", text)  # "Title <target>" in :role: texts
    return " ".join(text.split())


def _rst_titles(lines: list[str]) -> list[tuple[int, int, tuple[bool, str], str]]:
    """(first line index, last line index, style, title) for every section title, in order."""
    titles: list[tuple[int, int, tuple[bool, str], str]] = []
    n = len(lines)
    i = 0
    while i < n:
        line = lines[i]
        over = _ADORNMENT_RE.match(line)
        # Overline + title + underline (the title may be inset).
        if over and i + 2 < n and lines[i + 1].strip():
            under = _ADORNMENT_RE.match(lines[i + 2])
            text = lines[i + 1].strip()
            if (
                under
                and under.group(1) == over.group(1)
                and len(line.rstrip()) >= len(text)
                and not _ADORNMENT_RE.match(lines[i + 1])
            ):
                titles.append((i, i + 2, (True, over.group(1)), text))
                i += 3
                continue
        # Title + underline: the title starts a paragraph at column 0.
        if (
            i + 1 < n
            and line.strip()
            and not line[0].isspace()
            and not over
            and (i == 0 or not lines[i - 1].strip())
        ):
            under = _ADORNMENT_RE.match(lines[i + 1])
            if under and len(lines[i + 1].rstrip()) >= len(line.rstrip()):
                titles.append((i, i + 1, (False, under.group(1)), line.strip()))
                i += 2
                continue
        i += 1
    return titles


def _load_rst(lines: list[str]) -> _Loaded:
    titles = _rst_titles(lines)
    styles: list[tuple[bool, str]] = []  # heading level = order of first appearance
    outline = _Outline()
    seen: dict[str, int] = {}
    section: tuple[str, ...] = ()
    anchor: str | None = None
    doc_title: str | None = None
    out: list[SourceLine] = []
    t = 0
    for i, text in enumerate(lines):
        if t < len(titles) and titles[t][0] == i:
            _, _, style, raw = titles[t]
            if style not in styles:
                styles.append(style)
            title = clean_inline_rst(raw)
            section = outline.enter(styles.index(style) + 1, title)
            anchor = _unique(docutils_slug(title), seen) or None
            doc_title = doc_title or clip_title(title)
            t += 1
        out.append(SourceLine(no=i + 1, text=text, section=section, anchor=anchor))
    return out, doc_title


# --------------------------------------------------------------------------- code

_PY_DEF_RE = re.compile(r"^([ \t]*)(?:async[ \t]+)?(class|def)[ \t]+(\w+)")
_PY_PENDING_RE = re.compile(r"^[ \t]*(?:#|@|$)")  # comments, decorators, blank lines


def _load_python(lines: list[str]) -> _Loaded:
    """Sections from top-level classes/functions and the methods of top-level classes.

    Indentation decides where a block ends. Decorators and comments directly above a def
    belong to it; lines inside triple-quoted strings and lines that start with a closing
    bracket (the ")" of a multi-line signature) never end a block.
    """
    stack: list[tuple[int, str]] = []  # (indent, "class X" / "def y"), at most two deep
    sections: list[tuple[str, ...]] = []
    pending: list[int] = []  # indices of comment/decorator/blank lines not yet assigned
    in_string: str | None = None

    def current() -> tuple[str, ...]:
        return tuple(label for _, label in stack)

    for i, line in enumerate(lines):
        if in_string is not None:
            sections.append(current())
            if line.count(in_string) % 2 == 1:
                in_string = None
            continue
        if _PY_PENDING_RE.match(line):
            sections.append(current())
            pending.append(i)
            continue
        stripped = line.lstrip(" \t")
        indent = len(line) - len(stripped)
        if not stripped.startswith((")", "]", "}")):
            while stack and indent <= stack[-1][0]:
                stack.pop()
        parent = current()
        m = _PY_DEF_RE.match(line)
        if m and (not stack or (len(stack) == 1 and stack[0][1].startswith("class "))):
            stack.append((indent, clip_title(f"{m.group(2)} {m.group(3)}")))
        # Pending lines: those right above a def (no blank line between) go with the def,
        # the rest with the enclosing block.
        here = current()
        attach = True
        for j in reversed(pending):
            attach = attach and bool(lines[j].strip())
            sections[j] = here if attach else parent
        pending.clear()
        sections.append(here)
        for quote in ('"""', "'''"):
            if line.count(quote) % 2 == 1:
                in_string = quote
                break
    out = [SourceLine(no=i + 1, text=t, section=s) for i, (t, s) in enumerate(zip(lines, sections))]
    return out, None
