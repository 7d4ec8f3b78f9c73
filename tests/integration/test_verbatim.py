"""Extractive answers quote the source byte for byte, at the cited lines, as whole blocks.

Over whole answer sets on four kinds of corpus (the bundled Markdown guide, real Django HTML
pages, a reST manual, Python and JavaScript source), every answer is split into what it quotes
(prose sentences, fenced code, tables, list items: ``textutil.sentence_spans``, with a marker
that opens a span belonging to the piece before, as the citation checker reads it) and checked:

(a) each quoted piece, markers removed, is in the cited file's lines [start_line..end_line]
    read from disk (HTML: the loader's extracted text of those lines), byte for byte except
    that whitespace runs crossing a line break may fold to one space; code keeps its lines;
(b) no quoted prose sentence stops mid-way: it ends with . ! ? or : (a closing bracket or
    quote may follow), and one ending with a colon is followed by the block it introduces;
(c) no Markdown table row is run into a prose line;
(d) code fences and inline code spans are balanced;
(e) a quoted list (Markdown, or HTML ``<ul>``/``<ol>`` as the loader writes it) is the source's
    lines, markers removed, and follows the sentence that introduces it: on the Django pages a
    set of questions whose answers are lists ("login_required() does the following:") must be
    answered that way, not with the intro alone or a fragment.

And closer to what a reader sees when opening a citation, independent of the loader: (f) on
HTML, each quoted piece is in the RAW file's lines [start_line..end_line], tags stripped,
entities decoded, whitespace folded (code: its lines in order), and a quoted sentence never runs
across the edge of a ``<pre>`` (code flattened into prose). Over Git's manual pages (asciidoc:
options as ``<dl>``, code inside list items, admonitions as one-row tables), and Django's.
"""

from __future__ import annotations

import html
import json
import re
import shutil
from bisect import bisect_right
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ragcore.citations.markers import MARKER_RE, map_prose, markers_in
from ragcore.ingest.chunking import text_of_lines
from ragcore.ingest.read.loaders import load_file
from ragcore.engine.engine import Engine
from ragcore.textutil import sentence_spans
from ragcore.types import Answer
from tests.conftest import DOCS, REPO, django_subset, write_corpus

pytestmark = pytest.mark.slow

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


def guide_questions() -> list[str]:
    path = REPO / "bench" / "data" / "guide-qa" / "questions.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r["question"] for r in rows] + GUIDE_EXTRA


def test_guide_answers_are_verbatim(guide_engine: Engine) -> None:
    questions = guide_questions()
    answers = [guide_engine.ask(q) for q in questions]
    tally = Tally()
    check_answers(DOCS, answers, tally)
    report("guide (Markdown)", tally)
    assert len(questions) >= 25 and tally.answers >= 15
    assert not tally.failures


@pytest.fixture(scope="module")
def local_engine(tmp_path_factory: pytest.TempPathFactory, encoder) -> tuple[Path, Engine]:
    from ragcore.settings.config import RagcoreSettings

    root = write_corpus(tmp_path_factory.mktemp("local") / "c", {"manual.rst": RST, "limiter.py": CODE, "chart.js": JS})
    engine = Engine(RagcoreSettings(data_dir=tmp_path_factory.mktemp("local-data")), encoder=encoder)
    engine.ingest([root], "local")
    yield root, engine
    engine.close()


def test_rest_and_code_answers_are_verbatim(local_engine: tuple[Path, Engine]) -> None:
    root, engine = local_engine
    answers = [engine.ask(q, collection="local") for q in LOCAL_QUESTIONS]
    tally = Tally()
    check_answers(root, answers, tally)
    report("reST + code", tally)
    assert tally.answers >= 6
    assert not tally.failures


def test_rest_literal_block_comes_with_its_sentence(local_engine: tuple[Path, Engine]) -> None:
    _, engine = local_engine
    a = engine.ask("How do I install the widget tool?", collection="local")
    assert "To install the widget tool, run:: [" in a.answer, a.answer
    assert "```\n    pip install widget-tool\n    widget --version\n```" in a.answer, a.answer


def test_django_html_answers_are_verbatim(tmp_path_factory: pytest.TempPathFactory, encoder) -> None:
    from ragcore.settings.config import RagcoreSettings

    root = django_subset(tmp_path_factory.mktemp("djv") / "dj", DJANGO_PAGES)
    engine = Engine(RagcoreSettings(data_dir=tmp_path_factory.mktemp("djv-data")), encoder=encoder)
    try:
        engine.ingest([root], "dj")
        answers = [engine.ask(q, collection="dj") for q in DJANGO_QUESTIONS]
        list_answers = [engine.ask(q, collection="dj") for q in DJANGO_LIST_QUESTIONS]
    finally:
        engine.close()
    tally = Tally()
    check_answers(root, answers + list_answers, tally)
    report("Django (HTML)", tally)
    assert tally.answers >= 8
    custom = answers[0].answer
    assert "AUTH_USER_MODEL" in custom, custom
    # HTML lists come with the sentence that introduces them, on most of the list questions
    with_intro = [a for a in list_answers if any(ql.intro.endswith(":") for ql in quoted_lists(a.answer))]
    assert len(with_intro) >= 5, [a.answer[:200] for a in list_answers]
    login = next(a for a in list_answers if "login_required" in a.question)
    assert [ql.intro for ql in quoted_lists(login.answer)][:1] == ["login_required() does the following:"], login.answer
    assert "- If the user isn’t logged in, redirect to\n  settings.LOGIN_URL" in login.answer, login.answer
    assert not tally.failures
    # an HTML citation is never narrowed by text-line index (locate.py): its lines always hold the quote
    assert not tally.narrowing, tally.narrowing
    # (f) and the raw HTML lines hold each quote too
    raw = raw_report("Django (raw lines)", root, answers + list_answers)
    assert raw.pieces >= 40 and not raw.misses


# --------------------------------------------------------------------------- (f) raw HTML lines


def ask_all(root: Path, pages: list[str], questions: list[str], tmp: Path, encoder) -> list[Answer]:
    from ragcore.settings.config import RagcoreSettings

    corpus = tmp / "corpus"
    corpus.mkdir()
    for rel in pages:
        shutil.copy(root / rel, corpus / rel)
    engine = Engine(RagcoreSettings(data_dir=tmp / "data"), encoder=encoder)
    try:
        engine.ingest([corpus], "git")
        return [engine.ask(q, collection="git") for q in questions]
    finally:
        engine.close()


def raw_report(name: str, root: Path, answers: list[Answer]) -> RawTally:
    tally = RawTally()
    check_raw(root, [Cited.of(a) for a in answers if a.status != "abstained"], tally)
    print(f"\n{name}: {tally.citations} HTML citations, {tally.pieces} quoted pieces checked, "
          f"{len(tally.missed_citations)} citations with a miss")
    for m in tally.misses:
        print("  ", m)
    return tally


def test_raw_check_catches_code_run_into_prose_and_shifted_lines() -> None:
    """The check can fail: on a real Git page, the answers the loader's old shapes produced
    (code inside a list item run into the item's sentence; an admonition after a stray "| ";
    a citation one line off) are misses, and the same text quoted right is not."""
    page = RawPage.read(GIT_DATA / "git-commit-tree.html")
    lines = {1: ("git-commit-tree.html", 969, 983)}
    flattened = ("git commit and git commit-tree issues a warning if the commit log message given to it does "
                 "not look like a valid UTF-8 string, unless you explicitly say your project uses a legacy "
                 "encoding. [1] The way to say this is to have i18n.commitEncoding in .git/config file, like "
                 "this: [i18n] commitEncoding = ISO-8859-1 Commit objects created with the above setting "
                 "record the value of i18n.commitEncoding in its encoding header. [1]")
    right = ("The way to say this is to have i18n.commitEncoding in .git/config file, like this: [1]\n\n"
             "```\n[i18n]\n        commitEncoding = ISO-8859-1\n```\n\n[1]")
    note = "| In addition, the date part is accepted in the following formats: YYYY.MM.DD, MM/DD/YYYY and DD.MM.YYYY. [1]"
    cases = [
        (flattened, lines, ["prose runs into a <pre> block"]),
        (right, lines, []),
        (note, {1: ("git-commit-tree.html", 905, 913)}, ["not in the raw lines"]),
        (note.removeprefix("| "), {1: ("git-commit-tree.html", 905, 913)}, []),
        (note.removeprefix("| "), {1: ("git-commit-tree.html", 912, 913)}, ["not in the raw lines"]),  # one off
    ]
    for text, cites, expected in cases:
        tally = RawTally()
        check_raw(GIT_DATA, [Cited("q", text, cites)], tally, {"git-commit-tree.html": page})
        assert all(e in " ".join(tally.misses) for e in expected), (text, tally.misses)
        assert bool(tally.misses) == bool(expected), (text, tally.misses)
    assert page.where("Each -p indicates the id of a parent commit object.") == (801, 801)


def test_git_page_answers_are_verbatim_at_raw_lines(tmp_path: Path, encoder) -> None:
    """A real Git manual page (options as <dl>, code in list items, an admonition), always here."""
    answers = ask_all(GIT_DATA, ["git-commit-tree.html"], GIT_LOCAL_QUESTIONS, tmp_path, encoder)
    tally = raw_report("git-commit-tree.html (raw lines)", tmp_path / "corpus", answers)
    assert sum(a.status != "abstained" for a in answers) >= 4 and tally.pieces >= 8
    assert not tally.misses
    # an option's definition is quoted with the option it defines (the <dt>/<dd> entry is one block),
    # the option on a line of its own (before chunker version 4 the definition came alone: "Read
    # the commit log message from …"; before the composer knew terms, run into it: "-F <file> Read…")
    text = "\n".join(a.answer for a in answers)
    definitions = {"Read the commit log message from the given file.": "-F <file>\n", "GPG-sign commits.": "--no-gpg-sign\n"}
    quoted = [d for d in definitions if d in text]
    assert quoted, text
    for d in quoted:
        assert text.count(d) == text.count(definitions[d] + d), (d, text)


def test_git_docs_answers_are_verbatim_at_raw_lines(tmp_path: Path, encoder) -> None:
    """git-docs-qa questions over two of its pages: every quoted piece is in the raw HTML lines
    its citation names (the Django subset's answers get the same check in their test above)."""
    if not (GIT_QA / "corpus").is_dir():
        pytest.skip(f"the git-docs-qa data set is not at {GIT_QA}")
    answers = ask_all(GIT_QA / "corpus", GIT_PAGES, GIT_QUESTIONS, tmp_path, encoder)
    tally = raw_report("Git docs (raw lines)", tmp_path / "corpus", answers)
    assert sum(a.status != "abstained" for a in answers) >= 5 and tally.citations >= 12
    assert not tally.misses
