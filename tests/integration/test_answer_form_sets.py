"""Every question of the six evaluation sets gets an answer in its documented form (issue 42, item 2):
at most ``max_answer_sentences`` sentences (docs/07; each [n]-marked sentence counts, a list item's
too), and no quoted sentence that runs a title, a term, a heading or a list item into the prose
after it.

The sets' corpora are not committed, so the questions (tests/data/questions, bench/data/guide-qa,
bench/data/pdf-qa; Django's when the shared folder is there) are asked of collections this test
builds: the bundled guide for its own questions, and for the others a collection of committed HTML
pages (a Git manual page, two Django pages) and a page written for this test in the shapes that
glued (an item's bold title above its text, a nested list above the item's next paragraph, a
glossary of multi-word terms, an admonition inside an item, a long list a sentence introduces).
Off-corpus questions still get evidence: the composer quotes from whatever was retrieved, which is
what this test checks. ``python -m bench.answer_form`` reports the same counts on the six sets'
own corpora."""

from __future__ import annotations

import re

import pytest

from bench.answer_form import MARKER, glued_units, literal_markers
from ragcore.engine.engine import Engine
from ragcore.synthesis.extractive.composer import ExtractiveComposer
from tests.conftest import REPO
from tests.unit.engine.test_followup_sets import _sets

PAGES = ("git-commit-tree.html", "django-tutorial01.html", "django-geoip2.html")
ITEMS = "".join(f"<li><p>The checker reads the {w} of each record.</p><p>A record without one is refused.</p></li>\n"
                for w in ("size", "name", "owner", "type", "date", "hash"))
SHAPES = f"""<html><head><title>Record store limits</title></head><body><main>
<h1>Record store limits</h1>
<p>The record store enforces the limits below on every write.</p>
<ol>
<li><p><b>Maximum length of a record</b></p>
<p>The largest record the store accepts is one million bytes. Larger records are refused with an error.</p></li>
<li><p><b>Maximum number of fields</b></p>
<p>The field limit bounds several things:</p>
<ul>
<li>The number of fields in a record</li>
<li>The number of values in a single write</li>
</ul>
<p>The default field limit is two thousand.</p>
<div class="admonition note"><p class="admonition-title">Note</p>
<p>the field limit can only be raised when the store is created.</p></div></li>
<li><p><b>Many concurrent writers? → use the server edition</b></p>
<p>If many processes write at the same instant, the server edition queues their writes.</p></li>
</ol>
<h2>Glossary</h2>
<dl>
<dt>concrete store</dt><dd><p>A store that keeps its records on disk.</p></dd>
<dt>record key</dt><dd><p>The name a record is found by. Keys are unique within a store.</p></dd>
</dl>
<h2>Checks</h2>
<p>Before a write, the checker does the following:</p>
<ul>
{ITEMS}</ul>
</main></body></html>
"""


@pytest.fixture(scope="module")
def html_engine(ingested_engine) -> Engine:
    files = {name: (REPO / "tests" / "data" / "loaders" / name).read_text(encoding="utf-8") for name in PAGES}
    return ingested_engine({**files, "store-limits.html": SHAPES}, "html")


def _problems(engine: Engine, questions: list[str]) -> tuple[int, list[str]]:
    """How many questions were answered, and what broke the documented form."""
    s = engine.settings
    composer = ExtractiveComposer(engine.encoder, max_sentences=s.max_answer_sentences, max_docs=s.answer_docs, second_page=s.answer_second_page)
    answered, bad = 0, []
    for q in questions:
        ans = engine.ask(q)
        if not ans.evidence:
            continue
        # the composer's answer from this evidence, whether or not the engine abstains with it (an
        # unsure or a "both" answer shows it too); and the engine's own text when it answers
        result = composer.compose(q, ans.evidence)
        if result.status != "ok":
            continue
        answered += 1
        literal = literal_markers(result)
        for text in {result.text, ans.answer if ans.status == "ok" else ""}:
            n = len(MARKER.findall(text)) - literal
            if n > s.max_answer_sentences:
                bad.append(f"{q!r}: {n} sentences: {text!r}")
        texts = {e.n: e.chunk.text for e in ans.evidence}
        bad += [f"{q!r}: glued {g!r}" for g in glued_units(result, texts, {n: [] for n in texts})]
    return answered, bad


def test_the_guide_questions_are_answered_in_form(guide_engine: Engine) -> None:
    answered, bad = _problems(guide_engine, _sets()["guide-qa"])
    assert answered >= 30, answered
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("name", ["git", "scrapy", "sqlalchemy", "pdf-qa", "django"])
def test_a_sets_questions_are_answered_in_form_on_html_pages(html_engine: Engine, name: str) -> None:
    questions = _sets().get(name)
    if questions is None:
        pytest.skip(f"the {name} questions are not here (the team's shared folder)")
    answered, bad = _problems(html_engine, questions)
    assert answered >= len(questions) // 4, answered
    assert not bad, "\n".join(bad)


def test_the_shapes_that_glued_are_quoted_apart(html_engine: Engine) -> None:
    """The page written in the glued shapes: each is asked for and quoted without the glue (the
    composer's answer from the engine's evidence: this collection has no calibrated bar)."""
    composer = ExtractiveComposer(html_engine.encoder)
    for q, said, never in [
        ("What is the largest record the store accepts?", "one million bytes", "Maximum length of a record The"),
        ("What is the default field limit?", "The default field limit is two thousand.", "single write The default"),
        ("What if many processes write at the same instant?", "queues their writes", "server edition If many"),
        ("What is a concrete store?", "keeps its records on disk", "concrete store A store"),
    ]:
        text = composer.compose(q, html_engine.ask(q).evidence).text
        assert said in text and never not in re.sub(r"[ \t]+", " ", text), (q, text)  # a term on its own line is fine
