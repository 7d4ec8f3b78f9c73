"""Answers in their documented form (issue 42): at most ``max_answer_sentences`` sentences, counted
as the reader sees them (each [n]-marked sentence, list items' too), and no title, term or heading
run into the prose below it. Chunks here are written as the HTML loader writes them (checked in
tests/unit/ingest/test_loaders.py); the composer is the real one, with the real encoder."""

from __future__ import annotations

import re

from ragcore.ingest.read.html import extract_html
from ragcore.synthesis.extractive import cap
from ragcore.synthesis.extractive.composer import ExtractiveComposer
from ragcore.synthesis.extractive.units import units_of
from ragcore.types import Chunk, Evidence

MARKER = re.compile(r"\[\d+\]")


def html_chunk(page: str, path: str = "limits.html", section: tuple[str, ...] = ("Limits",)) -> Chunk:
    lines, _ = extract_html(page)
    text = "\n".join(line.text for line in lines)
    return Chunk(chunk_id=path, text=text, path=path, doc_hash="h", kind="html", start_line=lines[0].no,
                 end_line=lines[-1].no, section=section)


def evidence(*chunks: Chunk) -> list[Evidence]:
    return [Evidence(n=i, chunk=c, origin="corpus", score=0.6, score_kind="cosine", dense_score=0.6)
            for i, c in enumerate(chunks, 1)]


ITEMS = "".join(f"<li>The tool checks the {w} of every stored record before it writes.</li>\n" for w in
                ("size", "name", "owner", "type", "date", "hash", "path", "mode", "group", "label"))
LONG_LIST = f"<p>Before a write, the checker does the following:</p>\n<ul>\n{ITEMS}</ul>\n"


def test_a_long_list_is_cut_to_the_sentence_limit(encoder) -> None:
    """An intro with a ten-item list used to be one unit: eleven sentences in an answer documented
    to hold four. The list is cut to the items that name the question's words, in reading order."""
    composer = ExtractiveComposer(encoder, max_sentences=4, reader=None)
    result = composer.compose("What does the checker do before a write, does it check the hash?",
                              evidence(html_chunk(LONG_LIST, "checker.html", ("Checker",))))
    assert result.status == "ok"
    assert len(MARKER.findall(result.text)) <= 4, result.text
    if "the following:" in result.text:  # the intro came with (part of) its list
        assert "the hash of every stored record" in result.text, result.text
    assert sum(cap.sentences_of(p.unit) for p in result.picked) <= 4


def test_the_cap_counts_sentences_not_units(encoder) -> None:
    """Each sentence a unit brings counts: a list item's, a definition's, a code block as one."""
    chunk = html_chunk(LONG_LIST, "checker.html", ("Checker",))
    intro = next(u for u in units_of(chunk) if u.block is not None)
    assert cap.sentences_of(intro) == 11 and cap.least_sentences(intro) == 2
    cut = cap.trimmed_list(intro, {"hash", "owner"}, 2)
    assert cut.block.text.split("\n") == [
        "- The tool checks the owner of every stored record before it writes.",
        "- The tool checks the hash of every stored record before it writes.",
    ]
    for limit in (1, 2, 3, 4, 6):
        composer = ExtractiveComposer(encoder, max_sentences=limit, reader=None)
        result = composer.compose("What does the checker check before a write?", evidence(chunk))
        assert len(MARKER.findall(result.text)) <= max(limit, 2), (limit, result.text)  # an intro and one item at least


TITLED = (
    "<h2>Limits</h2>\n<ol>\n"
    "<li><p><b>Maximum length of a record</b></p>\n"
    "<p>The largest record the store accepts is one million bytes.</p></li>\n"
    "<li><p>The column limit bounds several things:</p>\n<ul>\n<li>The number of fields in a record</li>\n"
    "<li>The number of values in a single write</li>\n</ul>\n"
    "<p>The default column limit is two thousand.</p></li>\n"
    "</ol>\n<dl>\n<dt>concrete store</dt><dd><p>A store that keeps its records on disk.</p></dd>\n</dl>\n"
)


def test_titles_terms_and_list_items_are_not_glued_to_prose(encoder) -> None:
    """The shapes of issue 42's glued sentences, on a page written for this test: an item's <p>
    title above its text, a nested list's last item above the item's next paragraph, a glossary
    term above its definition. Quoted, a title or term stands on a line of its own or not at all."""
    chunk = html_chunk(TITLED)
    quoted = {u.sentence: u for u in units_of(chunk)}
    assert "The default column limit is two thousand." in quoted  # not "…in a single write The default…"
    assert not any("single write The default" in s for s in quoted)
    record = next(u for s, u in quoted.items() if "one million bytes" in s)
    assert record.sentence[: record.term] == "Maximum length of a record"  # shown apart: the term is a title
    store = next(u for s, u in quoted.items() if "keeps its records on disk" in s)
    assert store.sentence[: store.term] == "concrete store"
    composer = ExtractiveComposer(encoder, max_sentences=4, reader=None)
    for question in ("What is the largest record?", "What is the default column limit?", "What is a concrete store?"):
        text = composer.compose(question, evidence(chunk)).text
        for line in text.split("\n"):
            assert not re.search(r"(record|write|concrete store) (The|A) ", line), (question, text)
