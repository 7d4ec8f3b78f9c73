"""Answers on PDFs quote what answers (issue 30): a table row with its header, a definition-list
entry with its term, a sentence a document opens in lower case, a stated default, code lines
in prose, the result of an instruction. The texts are as ragcore's PDF reader writes pages of booktabs' manual, the
york-thesis manual and REVTeX's sample paper (Debian's TeX documentation): one line per printed
line, an empty line at a paragraph gap. Units are found without a model; the answers run through
the real composer and the real MiniLM model."""

from __future__ import annotations

import re

from ragcore.synthesis.extractive.composer import ExtractiveComposer
from ragcore.synthesis.extractive.units import units_of
from ragcore.types import Chunk, Evidence

BOOKTABS = """By way of illustration, consider this tableau from the manual:

gnats gram $13.65
each .01
gnu stuffed 92.50
emu 33.33
armadillo frozen 8.99

This is a hotch-potch of information that is probably reasonably clearly presented
as is (but is the emu stuffed or not?). However, as a published table, this
should much rather appear along the lines suggested further down the page.

Item
Animal Description Price ($)
Gnat per gram 13.65
each 0.01
Gnu stuffed 92.50
Emu stuffed 33.33
Armadillo frozen 8.99

It takes much less work to lay this out, as a formal table; we don't have to
work out a new layout for everything we do."""

YORK = """2.4.1 Preamble Material

These booleans and macros must be set before the document environment begins.

masters This boolean sets whether the document should be typeset as a PhD dissertation
or a Masters thesis.

hasfigures This boolean sets whether there are any figures in the text. All this switch does
is tell LATEX to construct a list of figures and insert an entry for the list of figures
in the table of contents.

\\title This macro specifies the title of the work for the title page."""

MIDRULE = """\\midrule[hwdi]

A hwdi (default \\lightrulewidth) rule with \\aboverulesep space above it and
with \\belowrulesep space below it."""

APS = """A. Second-level heading: Formatting

This file may be formatted in either the preprint or
reprint style. reprint format mimics final journal output.
Either format may be used for submission purposes.
letter sized paper should be used when submitting to
APS journals."""

DEPLOYMENT = """2.2 Deployment

The york-thesis class is invoked in the standard fashion. The defaults are letterpaper,10pt,oneside,onecolumn,draft,openany.
The documentclass command has extra functionality built into two options: draft and final.
All other options are available, though some (like titlepage) do nothing."""


def _chunk(text: str, kind: str = "pdf", path: str = "manual.pdf") -> Chunk:
    return Chunk(chunk_id="c1", text=text, path=path, doc_hash="h", kind=kind, start_line=1,
                 end_line=text.count("\n") + 1, page=2)


def _ev(text: str, path: str = "manual.pdf") -> list[Evidence]:
    return [Evidence(n=1, chunk=_chunk(text, path=path), origin="corpus", score=0.5, score_kind="rrf", dense_score=0.55)]


def _plain(answer: str) -> str:
    return " ".join(re.sub(r"\s*\[\d+\]", "", answer).split())


def test_a_pdf_table_is_a_unit_and_its_rows_are_not_prose() -> None:
    units = units_of(_chunk(BOOKTABS))
    tables = [u for u in units if u.block is not None and u.block.kind == "table"]
    assert any("Animal Description Price ($)\nGnat per gram 13.65" in u.block.text for u in tables)
    assert not any("Gnu stuffed" in u.sentence for u in units)  # a row is never quoted as a sentence
    # an HTML or text chunk with the same lines is left as it was: only the PDF reader loses the columns
    assert not any(u.block is not None and u.block.kind == "table" for u in units_of(_chunk(BOOKTABS, kind="text")))


def test_a_table_row_is_quoted_with_its_header(encoder) -> None:
    a = ExtractiveComposer(encoder).compose("What is the price of a stuffed gnu in the example table?", _ev(BOOKTABS))
    assert "Animal Description Price ($)\nGnu stuffed 92.50" in a.text, a.text
    assert "pdf-table" not in a.text and "Armadillo" not in a.text.split("Animal Description")[-1], a.text


def test_definition_list_entries_keep_their_term() -> None:
    units = {u.sentence[: u.term]: u for u in units_of(_chunk(YORK)) if u.term}
    assert set(units) >= {"masters", "hasfigures", "\\title"}
    assert units["hasfigures"].sentence == "hasfigures This boolean sets whether there are any figures in the text."
    (entry,) = [u for u in units_of(_chunk(MIDRULE)) if u.term]  # the term on a line of its own
    assert entry.sentence.startswith("\\midrule[hwdi] A hwdi (default \\lightrulewidth) rule")
    # prose that opens on a capitalised word is no term
    assert not any(u.term for u in units_of(_chunk(DEPLOYMENT)))


def test_a_definition_is_quoted_from_its_term(encoder) -> None:
    a = ExtractiveComposer(encoder).compose("What does the hasfigures boolean do?", _ev(YORK))
    assert a.text.startswith("hasfigures\nThis boolean sets whether there are any figures in the text. [1]"), a.text


def test_a_sentence_opened_in_lower_case_after_a_full_stop_is_quoted(encoder) -> None:
    a = ExtractiveComposer(encoder).compose("What paper size should be used when submitting to APS journals?", _ev(APS))
    # with the sentence before it, as any sentence that leans on the one before
    assert "Either format may be used for submission purposes. [1] letter sized paper should be used" in a.text, a.text
    # at a chunk's start a lower-case opening is still the rest of a cut sentence
    cut = units_of(_chunk("sized paper should be used when submitting to APS journals."))
    assert not any(u.sentence.startswith("sized") for u in cut)
    assert "sized paper" not in ExtractiveComposer(encoder).compose(
        "What paper size should be used?", _ev("sized paper should be used when submitting. Either format may be used.")).text


def test_a_question_about_a_default_brings_the_sentence_that_states_it(encoder) -> None:
    a = ExtractiveComposer(encoder).compose("What are the default options of the york-thesis class?", _ev(DEPLOYMENT))
    assert "letterpaper,10pt,oneside,onecolumn,draft,openany" in a.text, a.text


ABSTRACT = """The york-thesis class implements the York University Faculty of Graduate Studies guidelines
for Theses and Dissertations (Spring 2005). This class file is based on the report class included
in every LATEX distribution. All requirements are pre-programmed.

2.2 Deployment

The york-thesis class is invoked in the standard fashion."""

MATRIX = """Type m = [a,b,c; d,e,f]. You have just entered a matrix with 2 rows and 3 columns. Note
that the matrix is entered by rows and the rows are separated by semicolons."""

PENS = """The transparency of a pen can be changed with the command:
pen opacity(real opacity=1, string blend="Compatible");
The opacity can be varied from 0 (fully transparent) to the default value of 1 (opaque),
and blend specifies one of the following foreground-background blending operations:
"Compatible","Normal","Multiply","Screen","Overlay","SoftLight",
"HardLight","ColorDodge","ColorBurn","Darken","Lighten","Difference",

as described in the PDF reference."""


def test_the_files_own_name_does_not_pick_the_sentence(encoder) -> None:
    a = ExtractiveComposer(encoder).compose("Which standard class is the york-thesis class based on?",
                                            _ev(ABSTRACT, "york-thesis.pdf"))
    assert "This class file is based on the report class" in _plain(a.text), a.text


def test_the_result_of_an_instruction_comes_with_the_instruction(encoder) -> None:
    a = ExtractiveComposer(encoder).compose("How do you enter a matrix with 2 rows and 3 columns in gp?", _ev(MATRIX))
    assert _plain(a.text).startswith("Type m = [a,b,c; d,e,f]. You have just entered a matrix"), a.text


def test_code_lines_in_pdf_prose_are_blocks_the_sentence_before_introduces() -> None:
    units = units_of(_chunk(PENS))
    intro = next(u for u in units if u.sentence.startswith("The opacity can be varied from 0"))
    assert intro.sentence.endswith("blending operations:") and intro.block is not None
    assert intro.block.text.startswith('```\n"Compatible","Normal"')
    assert any(u.sentence.endswith("with the command:") and u.block and "pen opacity(" in u.block.text for u in units)
    # the same text from a plain-text file is left to the usual sentence rules
    assert not any(u.sentence.startswith("The opacity can be varied") for u in units_of(_chunk(PENS, kind="text")))
