"""A question asking for "the N <things>" is answered by the sentence that announces them with its
list of N items (answers.asks_count / announces_count; pdf-qa's pdf-016). The texts are as
ragcore's PDF reader writes booktabs' manual (Debian's TeX documentation), pages 3 and 1; the
answer runs through the real composer and the real MiniLM model."""

from __future__ import annotations

from ragcore.synthesis.extractive import answers
from ragcore.synthesis.extractive.composer import ExtractiveComposer
from ragcore.synthesis.extractive.units import units_of
from ragcore.textutil import content_terms
from ragcore.types import Chunk, Evidence

PAGE3 = """2 The layout of formal tables

You will not go far wrong if you remember two simple guidelines at all times:

1. Never, ever use vertical rules.

2. Never use double rules.

These guidelines may seem extreme but I have never found a good argument in
favour of breaking them."""

PAGE1 = """Abstract
This article describes some additional commands to enhance the quality
of tables in LATEX. Guidelines are given as to what constitutes a good table
in this context. The 2000 release of booktabs now supports the longtable package.

1 Introduction

The routines described below are to enable the easy production of tables such
as should appear in published scientific books and journals. What distinguishes
these from plain LATEX tables is the default use of additional space above and
below rules, and rules of varying 'thickness'."""

QUESTION = "What are the two simple guidelines for formal tables?"


def _ev(n: int, text: str, page: int, cosine: float) -> Evidence:
    chunk = Chunk(chunk_id=f"c{n}", text=text, path="booktabs.pdf", doc_hash="h", kind="pdf", start_line=1,
                  end_line=text.count("\n") + 1, page=page)
    return Evidence(n=n, chunk=chunk, origin="corpus", score=0.5, score_kind="rrf", dense_score=cosine)


def test_a_counted_question_is_recognised() -> None:
    assert answers.asks_count(QUESTION) == (2, "two", frozenset(content_terms("simple guidelines for formal tables")))
    assert answers.asks_count("Which were the 3 steps of the migration?")[0] == 3
    for q in ("How do I compare two configurations?", "What are the guidelines for tables?",
              "If I make a change on two branches, why does the merge include it?", "What is the one rule?"):
        assert answers.asks_count(q) is None, q


def test_only_the_sentence_announcing_that_many_with_that_many_items_counts() -> None:
    count = answers.asks_count(QUESTION)
    units = units_of(_ev(1, PAGE3, 3, 0.6).chunk)
    announcing = [u for u in units if answers.announces_count(u, count)]
    assert [u.sentence for u in announcing] == [
        "You will not go far wrong if you remember two simple guidelines at all times:"]
    # three guidelines asked for, two listed: not the answer; and no bonus without a counted question
    three = answers.asks_count("What are the three simple guidelines for formal tables?")
    assert not any(answers.announces_count(u, three) for u in units)
    assert all(answers.bonus(u, answers.Intent(False, True, ()), False, None) == 0 for u in announcing)


def test_the_answer_leads_with_the_list_it_asks_for(encoder) -> None:
    # page 1 is closer to the question by cosine, as in the collection (0.67 against 0.60)
    evidence = [_ev(1, PAGE3, 3, 0.598), _ev(2, PAGE1, 1, 0.670)]
    result = ExtractiveComposer(encoder).compose(QUESTION, evidence)
    assert result.status == "ok"
    first = result.text.split("\n\n")[:3]
    assert first == ["You will not go far wrong if you remember two simple guidelines at all times: [1]",
                     "1. Never, ever use vertical rules. [1]", "2. Never use double rules. [1]"]
