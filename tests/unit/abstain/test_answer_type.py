"""Answer typing (abstain/answer_type.py): a question wanting a version, a date or a number of
something is answered only by a quote giving one with what it is of. The engine test runs the
real MiniLM model over embedded Qdrant."""

from __future__ import annotations

from ragcore.abstain.answer_type import Wanted, answers_type, holds_type, untyped_reason, wanted


def test_the_wanted_type_and_its_focus() -> None:
    assert wanted("Which Python version does PARI/GP require?") == Wanted("version", ("Python",))
    assert wanted("Which version of natbib does REVTeX require?") == Wanted("version", ("natbib",))
    assert wanted("What is the submission deadline for theses at York University?") == \
        Wanted("date", ("submission", "deadline"))
    assert wanted("In what year was it released?") == Wanted("date", ())  # "year" says only "a date"
    assert wanted("How many pages may a dissertation have at most?") == Wanted("number", ("pages",))
    assert wanted("What is the maximum number of retries?") == Wanted("number", ("retries",))
    # not typed: conditions, how-to, and versions nobody asks the number of
    for q in ("When is save() called?", "How do I export a drawing?", "Should I use the stable version or development version?",
              "What does the version control chapter cover?", "What version control system does Git replace?",
              "What date format does the field use?", "What day-to-day tasks does the admin handle?"):
        assert wanted(q) is None, q


def test_tokens_of_each_type() -> None:
    assert holds_type("REVTeX 4.2 requires natbib 8.3 or later", "version")
    assert holds_type("released around 1996, the older 1.39.xx versions", "version")
    assert not holds_type("PARI/GP is free software under the GNU General Public License.", "version")
    assert holds_type("Theses are due on 15 March.", "date") and holds_type("guidelines (Spring 2005)", "date")
    assert not holds_type("Submit the thesis electronically to the Faculty.", "date")
    assert holds_type("at most 300 pages", "number") and holds_type("two simple guidelines", "number")
    assert not holds_type("as many pages as needed", "number")


def test_a_claim_answers_with_the_type_and_its_focus() -> None:
    want = Wanted("version", ("Python",))
    # a version of something else (the older PARI), or Python with no version: no answer
    assert not answers_type("the last version of PARI you used, the older 1.39.xx versions", want)
    assert not answers_type("The cypari2 package lets Python programs call PARI.", want)
    assert answers_type("gp2c needs Python 3.8 or later.", want)
    assert untyped_reason("Which Python version does PARI/GP require?",
                          ["PARI/GP is free software under the GPL, version 2 or later."]) == \
        "the question asks for a version of Python and nothing the answer would quote gives one"
    assert untyped_reason("What is the submission deadline for theses?",
                          ["The class implements the guidelines for Theses and Dissertations (Spring 2005)."]) == \
        "the question asks for a submission deadline and nothing the answer would quote gives one"
    assert untyped_reason("Which version of natbib does REVTeX require?", ["REVTeX requires natbib version 8.3."]) is None
    assert untyped_reason("How do I quit gp?", ["Type quit."]) is None  # not typed: left to the other checks


PARI_LIKE = {
    "intro.md": "# Introduction\n\nPARI/GP is free software; you can redistribute it and modify it under the terms of "
    "the GPL, version 2 or later, as published by the Free Software Foundation. The gp calculator is an "
    "interactive shell giving access to the PARI functions.\n",
    "bindings.md": "# Bindings\n\nThe cypari2 package lets Python programs call the PARI library directly, and "
    "gp2c compiles gp scripts to C.\n",
}


def test_the_engine_declines_a_version_question_its_quote_does_not_answer(past_the_bar) -> None:
    ask = past_the_bar(PARI_LIKE, "pari")
    a = ask("Which Python version does PARI/GP require?")
    assert a.status == "abstained" and a.citations == ()
    (action,) = a.validation.guardrail_actions
    assert "asks for a version of Python and nothing the answer would quote gives one" in action
    ok = ask("Which GPL version covers PARI/GP?")
    assert ok.status == "ok" and "version 2" in ok.answer


def test_prices_and_who_questions_are_typed_too() -> None:
    assert wanted("What is the price of a stuffed gnu in the example table?") == Wanted("amount", ("price",))
    assert wanted("What is the pricing of the OpenAI API?") == Wanted("amount", ("pricing",))
    assert wanted("Who maintains Qdrant?") == Wanted("name", ("maintains",))
    # a modal hides the verb and a past tense may be irregular ("written"): then any name will do
    assert wanted("Who should I contact about security issues?") == Wanted("name", ())
    assert wanted("Who wrote the booktabs package?") == Wanted("name", ())
    # a table row with its header gives the price; a code sample with a port number does not
    assert untyped_reason("What is the price of a stuffed gnu?", ["Item Animal Description Price ($) Gnu stuffed 92.50"]) is None
    assert untyped_reason("What is the pricing of the OpenAI API?",
                          ['client = OpenAI(base_url="http://127.0.0.1:8000/v1")']) == \
        "the question asks for an amount (pricing) and nothing the answer would quote gives one"
    assert untyped_reason("Who maintains Qdrant?", ["The embedded Qdrant store is a folder in your data directory."]) == \
        "the question asks for who maintains and nothing the answer would quote gives one"
    assert untyped_reason("Who maintains Qdrant?", ["Qdrant is maintained by Qdrant Solutions GmbH."]) is None
    # who does it need not be a proper name
    assert untyped_reason("Who polishes the brass lens?", ["The lighthouse keeper polishes the brass lens."]) is None
