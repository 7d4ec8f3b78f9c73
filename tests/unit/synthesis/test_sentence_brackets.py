"""A sentence is not cut inside its parentheses (issue 42, item 2: "Careful developers … necessary.)" was
quoted as a sentence, the rest of it lost)."""

from __future__ import annotations

from ragcore.textutil import sentence_spans


def texts(text: str) -> list[str]:
    return [s.text for s in sentence_spans(text)]


def test_a_full_stop_inside_parentheses_does_not_end_the_sentence() -> None:
    assert texts("Careful users set the limit (the default is 10 items, which suits most uses.) before the first run. "
                 "Next one.") == [
        "Careful users set the limit (the default is 10 items, which suits most uses.) before the first run.",
        "Next one."]


def test_a_parenthesis_that_closes_the_sentence_still_ends_it() -> None:
    assert texts("It works (see below.) The next sentence.") == ["It works (see below.)", "The next sentence."]
    assert texts("Use x (e.g. y). Then z.") == ["Use x (e.g. y).", "Then z."]
