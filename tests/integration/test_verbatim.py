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

import json
import shutil
from pathlib import Path

import pytest

from ragcore.engine.engine import Engine
from ragcore.types import Answer
from bench.support.verbatim import (  # the checker and its question sets, shared with bench/verbatim_check.py
    CODE, DJANGO_LIST_QUESTIONS, DJANGO_PAGES, DJANGO_QUESTIONS, GIT_DATA, GIT_LOCAL_QUESTIONS, GIT_PAGES, GIT_QA,
    GIT_QUESTIONS, GUIDE_EXTRA, JS, LOCAL_QUESTIONS, RST, Cited, RawPage, RawTally, Tally, check_answers, check_raw,
    quoted_lists, report,
)
from tests.conftest import DOCS, REPO, django_subset, write_corpus

pytestmark = pytest.mark.slow


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
