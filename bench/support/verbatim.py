"""The verbatim checker: an extractive answer split into what it quotes (prose sentences, code, tables,
list items) and each piece checked against the cited lines of the source, read from disk (and, on HTML,
against the raw file). The question sets it runs on are here too.

Shared by tests/integration/test_verbatim.py (which says what is checked, (a) to (f)) and
bench/verbatim_check.py (the same checks over whole question sets). It lives here, below both,
because bench must not import tests (pyproject's import-linter contracts).
"""

from __future__ import annotations

import html
import re
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

from ragcore.citations.markers import MARKER_RE, map_prose, markers_in
from ragcore.ingest.chunking import text_of_lines
from ragcore.ingest.read.loaders import load_file
from ragcore.textutil import sentence_spans
from ragcore.types import Answer

REPO = Path(__file__).resolve().parents[2]

_LEADING = re.compile(r"^(?:\s*\[\s*\d[\d\s,\-–]*\])+")
_FOLD = re.compile(r"[ \t]*\n\s*")
_WHOLE = re.compile(r"""[.!?:]["'”’)\]`*_]*$""")
_ITEM = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
_TABLE_IN_PROSE = re.compile(r"\|\s*:?-{3,}|^\s*\|.*\|")

GIT_QA = REPO.parent / "data" / "git-docs-qa"  # built by bench/data/build_git_qa.py
GIT_DATA = REPO / "tests" / "data" / "loaders"  # git-commit-tree.html, a real page (see NOTICE)
GIT_PAGES = ["git-pull.html", "git-fetch.html"]
# Questions of git-docs-qa (questions.jsonl) answered from those two pages. Before chunker
# version 4, 6 of their 19 HTML citations quoted a sentence run into a <pre> block (code inside
# an <li> had no paragraph break) or an admonition's text after a stray "| ".
GIT_QUESTIONS = [
    "How do I know if I want to do a fetch or a pull?",
    "Getting updates with git pull",
    "Fetching individual branches",
    "Examining branches from a remote repository",
    "Fetching branches from other repositories",
    "How to get a Git repository with minimal history",
    "Configuring remote-tracking branches",
]
GIT_LOCAL_QUESTIONS = [
    "Which option reads the commit message from a file?",
    "How do I sign a commit made with commit-tree?",
    "What date formats does GIT_AUTHOR_DATE support?",
    "How do I set the encoding of commit messages?",
    "Where does commit-tree read the log message from?",
    "Does Git force UTF-8 on projects?",
]
DJANGO_PAGES = [
    "topics/auth/customizing.html", "topics/auth/default.html", "topics/cache.html",
    "howto/deployment/wsgi/modwsgi.html", "topics/settings.html",
]
DJANGO_QUESTIONS = [
    "How do I use a custom user model?",
    "What does login_required do?",
    "How do I set up the database cache?",
    "How do I use memcached?",
    "How do I serve the admin files with mod_wsgi?",
    "What is DJANGO_SETTINGS_MODULE?",
    "How do I limit access to logged-in users?",
    "How do I change a user's password?",
    "What is the per-site cache?",
    "How do I configure the cache backend?",
    "How do I reference the User model?",
    "How can I use settings without setting DJANGO_SETTINGS_MODULE?",
]
# questions whose answer on these pages is a sentence that introduces an HTML list, and the list
DJANGO_LIST_QUESTIONS = [
    "What does login_required do?",
    "How do I use Memcached with Django?",
    "What are the primary attributes of the default user?",
    "How does the Django admin site use permissions?",
    "How does Django compile settings?",
    "Which forms are compatible with any subclass of AbstractBaseUser?",
    "Which headers does UpdateCacheMiddleware set?",
]
GUIDE_EXTRA = [
    "How do I ingest documents?",
    "How do I change the similarity threshold?",
    "What does the collections command show?",
    "How do I connect an LLM endpoint?",
    "What does the threshold apply to?",
]
RST = """\
=================
 Widget Manual
=================

Widgets turn readings into reports. This manual covers installing the widget tool,
configuring sensors and reading reports.

Installing
==========

To install the widget tool, run::

    pip install widget-tool
    widget --version

The tool needs Python 3.10 or later.  It runs on Linux and macOS.

Configuring sensors
===================

Sensors are configured in ``widget.toml``. A sensor entry has the following keys:

- ``name``: the sensor's name, shown in reports.
- ``port``: the serial port the sensor is attached to.
- ``rate``: readings per second, 1 by default.

To add a sensor, append an entry to the file::

    [[sensor]]
    name = "boiler"
    port = "/dev/ttyUSB0"

Reports
=======

A report lists every reading of the last day. Reports are written to the
``reports/`` folder as CSV files, one per sensor, because spreadsheets read CSV.

To print the latest report, use the ``widget report`` command.
"""
CODE = '''\
"""Rate limiting for the widget API."""


class RateLimiter:
    """A token bucket: ``rate`` tokens per second, at most ``burst`` at once.

    Call :meth:`allow` before each request; it returns False when the bucket is empty.
    """

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)

    def allow(self) -> bool:
        """Take one token if there is one. Returns True when the request may go ahead."""
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False
'''
JS = """\
// Widget chart: draws the readings of one sensor as a line chart.
export function drawChart(canvas, readings) {
  // The chart scales to the largest reading so that every point fits.
  const max = Math.max(...readings);
  return readings.map((r, i) => ({ x: i, y: r / max }));
}
"""
LOCAL_QUESTIONS = [
    "How do I install the widget tool?",
    "How do I add a sensor?",
    "What keys does a sensor entry have?",
    "Where are reports written?",
    "Why are reports CSV files?",
    "What Python version does the tool need?",
    "How do I print the latest report?",
    "What does RateLimiter do?",
    "What does allow return?",
    "How does the chart scale?",
    "What is a token bucket rate limiter?",
]


@dataclass
class Tally:
    answers: int = 0
    citations: int = 0
    pieces: int = 0
    failures: list[str] = field(default_factory=list)
    narrowing: list[str] = field(default_factory=list)  # HTML citations narrowed to the wrong lines
    lists: int = 0  # quoted list blocks


@dataclass(frozen=True)
class Piece:
    raw: str  # as it stands in the answer, markers removed
    block: str | None  # "code" | "table" | None (prose)
    cites: tuple[int, ...]
    next_block: bool  # a block follows this piece


def pieces(answer: str) -> list[Piece]:
    """What an answer quotes, each with the numbers it cites (as the citation checker reads it)."""
    out: list[list] = []
    for sp in sentence_spans(answer):
        raw = answer[sp.start : sp.end]
        lead = _LEADING.match(raw)
        if lead and out:
            out[-1][2] = [*out[-1][2], *markers_in(lead.group(0))]
            raw = raw[lead.end() :]
        body = map_prose(raw, lambda s: MARKER_RE.sub("", s)).rstrip() if sp.block != "code" else raw
        if re.search(r"[A-Za-z0-9]", body):
            out.append([body.strip() if sp.block != "code" else body, sp.block, markers_in(raw)])
    follows = [k is not None or bool(_ITEM.match(b)) for b, k, _ in out]  # a block or a list item
    return [Piece(b, k, tuple(ns), i + 1 < len(out) and follows[i + 1]) for i, (b, k, ns) in enumerate(out)]


_LIST_LINE = re.compile(r"^(?:[ \t]*(?:[-*+•]|\d+[.)])[ \t]+.*|[ \t]+\S.*)$")
_MARK_AFTER = re.compile(r" " + MARKER_RE.pattern)


@dataclass(frozen=True)
class QuotedList:
    intro: str  # the paragraph's last line right before the list, markers removed ("" if none)
    text: str  # the list's lines, markers removed
    cites: tuple[int, ...]  # the numbers its items cite


def quoted_lists(answer: str) -> list[QuotedList]:
    """Each list block the answer quotes (a paragraph of list lines)."""
    out = []
    paras = answer.split("\n\n")
    for i, par in enumerate(paras):
        lines = par.split("\n")
        if _ITEM.match(lines[0]) and all(_LIST_LINE.match(ln) for ln in lines):
            intro = paras[i - 1].split("\n")[-1] if i else ""
            out.append(QuotedList(_MARK_AFTER.sub("", intro), _MARK_AFTER.sub("", par), tuple(markers_in(par))))
    return out


def fold(text: str) -> str:
    return _FOLD.sub(" ", text)


def source_lines(root: Path, path: str, start: int, end: int, cache: dict) -> str:
    p = root / path
    if p.suffix.lower() in (".html", ".htm"):
        doc = cache.get(p) or cache.setdefault(p, load_file(p, root, max_bytes=50_000_000))
        return text_of_lines(doc, start, end)
    lines = p.read_text(encoding="utf-8").split("\n")
    return "\n".join(lines[start - 1 : end])


def check_piece(piece: Piece, source: str) -> str | None:
    """Why ``piece`` is not a verbatim quote of ``source`` (None when it is)."""
    if piece.block == "code":
        lines = piece.raw.strip("\n").split("\n")
        inner = "\n".join(lines[1:-1]) if lines[0].startswith(("```", "~~~")) else "\n".join(lines)
        return None if inner in source else "code block not in the cited lines"
    if piece.block == "table":
        missing = [ln for ln in piece.raw.split("\n") if ln not in source.split("\n")]
        return None if not missing else f"table rows not in the cited lines: {missing[:2]}"
    text = _ITEM.sub("", piece.raw)
    return None if fold(text) in fold(source) else "sentence not in the cited lines"


def shape_problems(a: Answer) -> list[str]:
    """(b) fragments, (c) table rows in prose, (d) unbalanced code: over the whole answer."""
    out = []
    if len(re.findall(r"^\s*```", a.answer, re.M)) % 2:
        out.append("unbalanced code fence")
    for p in pieces(a.answer):
        if p.block:
            continue
        if p.raw.count("`") % 2:
            out.append(f"unbalanced inline code: {p.raw!r}")
        if _TABLE_IN_PROSE.search(p.raw):
            out.append(f"table row in prose: {p.raw!r}")
        item = bool(_ITEM.match(p.raw))  # a list item is part of a quoted list ("- the name;")
        if (not item and not _WHOLE.search(p.raw)) or (p.raw.endswith(":") and not p.next_block):
            out.append(f"fragment: {p.raw!r}")
    return out


def check_lists(root: Path, a: Answer, tally: Tally, cache: dict) -> None:
    """(e) every quoted list is its cited lines, and an intro ending with a colon brought it."""
    by_n = {c.n: c for c in a.citations}
    for ql in quoted_lists(a.answer):
        tally.lists += 1
        if not ql.cites:
            tally.failures.append(f"{a.question!r}: uncited list {ql.text[:80]!r}")
        for n in ql.cites:
            c = by_n[n]
            if ql.text not in source_lines(root, c.path, c.start_line, c.end_line, cache):
                tally.failures.append(f"{a.question!r} [{n}] {c.path}:{c.start_line}-{c.end_line}: list not in the cited lines: {ql.text[:120]!r}")


def check_answers(root: Path, answers: list[Answer], tally: Tally) -> None:
    cache: dict = {}
    for a in answers:
        if a.status == "abstained":
            continue
        tally.answers += 1
        by_n = {c.n: c for c in a.citations}
        tally.citations += len(by_n)
        tally.failures.extend(f"{a.question!r}: {p}" for p in shape_problems(a))
        check_lists(root, a, tally, cache)
        for piece in pieces(a.answer):
            tally.pieces += 1
            if not piece.cites:
                tally.failures.append(f"{a.question!r}: uncited {piece.raw[:80]!r}")
            for n in piece.cites:
                c = by_n[n]
                why = check_piece(piece, source_lines(root, c.path, c.start_line, c.end_line, cache))
                if not why:
                    continue
                where = f"{a.question!r} [{n}] {c.path}:{c.start_line}-{c.end_line}: {why}: {piece.raw[:120]!r}"
                chunk = next(e.chunk for e in a.evidence if e.n == n)
                if chunk.kind == "html" and not check_piece(piece, source_lines(root, c.path, chunk.start_line, chunk.end_line, cache)):
                    # in the evidence chunk's lines, but the citation was narrowed to other lines
                    tally.narrowing.append(f"{where} (chunk {chunk.start_line}-{chunk.end_line})")
                else:
                    tally.failures.append(where)


# --------------------------------------------------------------------------- raw source lines
# What a reader sees when opening the cited lines of the HTML file itself, independent of the
# loader: tags stripped (block tags leave a space), entities decoded, whitespace folded.
# (a permalink "¶" next to a heading or signature is the page's furniture, as for the loader)
_RAW_TAG = re.compile(
    r"<!--.*?-->|<(script|style)\b.*?</\1\s*>|<a\s[^>]*class=\"headerlink\"[^>]*>[^<]*</a>|<[!/?]?[A-Za-z][^>]*>",
    re.DOTALL | re.IGNORECASE,
)
_RAW_BLOCK = re.compile(
    r"</?(?:p|div|li|ul|ol|dl|dt|dd|pre|table|tr|td|th|h[1-6]|br|hr|blockquote|section|t(?:body|head|foot)|caption)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class RawPage:
    """An HTML file's visible text per source line (index 0 is line 1), each line folded, and
    which lines hold text of a ``<pre>`` element."""

    lines: tuple[str, ...]
    pre: frozenset[int]  # line numbers with text inside <pre>

    @classmethod
    def read(cls, path: Path) -> RawPage:
        text = path.read_text(encoding="utf-8", errors="replace")
        out, pos, depth, pre = [], 0, 0, set()
        for m in _RAW_TAG.finditer(text):
            if depth and text[pos : m.start()].strip():
                line = text.count("\n", 0, pos) + 1
                pre.update(line + k for k, seg in enumerate(text[pos : m.start()].split("\n")) if seg.strip())
            tag = m.group(0)  # a tag spanning lines keeps its line breaks: line numbers stay
            out += [text[pos : m.start()], " " * bool(_RAW_BLOCK.match(tag)) + "\n" * tag.count("\n")]
            depth += {"<pre": 1, "</pr": -1}.get(tag[:4].lower(), 0) if tag[:5].lower() in ("<pre>", "<pre ", "</pre") else 0
            pos = m.end()
        out.append(text[pos:])
        return cls(tuple(fold_all(html.unescape(ln)) for ln in "".join(out).split("\n")), frozenset(pre))

    def text(self, start: int, end: int) -> str:
        return " ".join(ln for ln in self.lines[max(start, 1) - 1 : end] if ln)

    def where(self, needle: str, start: int = 1, end: int | None = None) -> tuple[int, int] | None:
        """The first run of lines (within ``start..end``) whose folded text holds ``needle``."""
        needle = fold_all(needle)
        nos = [no for no in range(max(start, 1), (end or len(self.lines)) + 1) if self.lines[no - 1]]
        starts, at = [], 0
        for no in nos:
            starts.append(at)
            at += len(self.lines[no - 1]) + 1
        k = " ".join(self.lines[no - 1] for no in nos).find(needle)
        if k < 0 or not needle:
            return None
        return nos[bisect_right(starts, k) - 1], nos[bisect_right(starts, k + len(needle) - 1) - 1]


def fold_all(text: str) -> str:
    return " ".join(text.split())


def raw_needles(piece: Piece) -> list[str]:
    """What must stand, in order, in the raw lines for ``piece`` to be a quote of them: a code
    block's lines; a table's cells; a list item or sentence without the loader's list markers
    (anything else the loader adds, such as a stray " | ", is not in the source and misses)."""
    if piece.block == "code":
        lines = piece.raw.strip("\n").split("\n")
        body = lines[1:-1] if lines[0].startswith(("```", "~~~")) else lines
        return [fold_all(ln) for ln in body if ln.strip()]
    if piece.block == "table":
        cells = (c for ln in piece.raw.split("\n") for c in ln.strip().strip("|").split("|"))
        return [fold_all(c) for c in cells if c.strip() and not re.fullmatch(r"\s*:?-{3,}:?\s*", c)]
    text = fold_all(" ".join(_ITEM.sub("", ln) for ln in piece.raw.split("\n")))
    return [text] if text else []


def raw_miss(piece: Piece, page: RawPage, start: int, end: int) -> str | None:
    """Why ``piece`` is not in the raw lines ``start..end`` of ``page`` (None when it is): not
    there, or prose that runs across the edge of a ``<pre>`` (code flattened into a sentence)."""
    hay, at = page.text(start, end), 0
    for needle in raw_needles(piece):
        k = hay.find(needle, at)
        if k < 0:
            return f"not in the raw lines: {needle[:100]!r}"
        at = k + len(needle)
    if piece.block is None and raw_needles(piece):
        span = page.where(raw_needles(piece)[0], start, end)
        nos = [no for no in range(span[0], span[1] + 1) if page.lines[no - 1]] if span else []
        if len({no in page.pre for no in nos}) > 1:
            return f"prose runs into a <pre> block (lines {span[0]}-{span[1]})"
    return None


@dataclass
class RawTally:
    citations: int = 0  # (answer, citation number) pairs checked
    pieces: int = 0  # (piece, citation) pairs checked
    misses: list[str] = field(default_factory=list)
    missed_citations: set = field(default_factory=set)


@dataclass(frozen=True)
class Cited:
    """What the raw check needs of an answer (an Answer, or one read back from a JSON dump)."""

    question: str
    answer: str
    lines: dict[int, tuple[str, int, int]]  # n -> (path, start_line, end_line)

    @classmethod
    def of(cls, a: Answer) -> Cited:
        return cls(a.question, a.answer, {c.n: (c.path, c.start_line, c.end_line) for c in a.citations})


def check_raw(root: Path, answers: list[Cited], tally: RawTally, pages: dict | None = None) -> None:
    """Every quoted piece is in the RAW HTML lines its citation names (see RawPage)."""
    pages = {} if pages is None else pages
    for ai, a in enumerate(answers):
        by_n = {n: c for n, c in a.lines.items() if c[0].lower().endswith((".html", ".htm"))}
        tally.citations += len(by_n)
        for piece in pieces(a.answer):
            for n in piece.cites:
                if n not in by_n:
                    continue
                path, start, end = by_n[n]
                page = pages.get(path) or pages.setdefault(path, RawPage.read(root / path))
                tally.pieces += 1
                why = raw_miss(piece, page, start, end)
                if why:
                    needles = raw_needles(piece)
                    at = page.where(needles[0]) if needles else None
                    tally.missed_citations.add((ai, n))
                    tally.misses.append(f"{a.question!r} [{n}] {path}:{start}-{end} {why} (text at lines {at})")


def report(name: str, tally: Tally) -> None:
    print(f"\n{name}: {tally.answers} answers, {tally.citations} citations, {tally.pieces} quoted pieces, {tally.lists} lists, "
          f"{len(tally.failures)} failures, {len(tally.narrowing)} HTML citations narrowed to the wrong lines")
    for f in [*tally.failures, *tally.narrowing]:
        print("  ", f)
