"""Labels of the answering sentence from a reference answer (eval/answering.py)."""

from __future__ import annotations

import numpy as np

from ragcore.eval.answering import answer_key, answering, answers, passage_rates, quoted

CHUNKS = ["Tasks can be revoked. Use revoke() to cancel.", "Workers run tasks.", "Results are stored in a backend."]


def test_a_unit_naming_an_identifier_of_the_reference_answers() -> None:
    key = answer_key("Can I cancel the execution of a task?", "Yes, use revoke() to cancel a task.", CHUNKS)
    assert answers(key, "To cancel a task that has not started, call revoke() with its id.")
    assert not answers(key, "A task can be aborted with abort() while it runs.")


def test_key_terms_are_the_references_words_the_question_lacks_weighted_by_rarity() -> None:
    key = answer_key("Where are notebooks saved?",
                     "Notebooks are saved under the notebooks folder of the data directory.", CHUNKS)
    assert "notebook" not in " ".join(key.weights)  # in the question: says nothing about the answer
    assert answers(key, "They live in the notebooks folder of the data directory, by default.")
    assert not answers(key, "Notebooks can be exported to Markdown.")


def test_expected_text_is_matched_verbatim() -> None:
    key = answer_key("What is the default arrowhead size?", "", CHUNKS, expected="arrowsize(p)")
    assert answers(key, "The default arrowhead size is arrowsize(p).") and not answers(key, "Arrows have heads.")


def test_quoted_and_rates() -> None:
    assert quoted("Intro.\n\nUse  revoke()\nto cancel. [2]", ["Use revoke() to cancel."])
    rates = passage_rates([{"in_evidence": True, "in_top5": True, "in_answer": False, "in_packed": True}, None,
                           {"in_evidence": False, "in_top5": False, "in_answer": False, "in_packed": False}])
    assert rates == {"passage_in_evidence": 0.5, "passage_in_top5": 0.5, "passage_in_answer": 0.0, "passage_in_packed": 0.5}


def test_a_unit_with_a_block_is_found_in_the_answer_that_marks_and_fences_it() -> None:
    # the answer puts a marker after the sentence and fences the block: a plain containment test
    # counted pdf-qa's "Here are the default values…" answer as not quoting the unit it quotes
    unit = 'Here are the default values under UNIX: ``` pdfviewer="xdg-open"; gs="gs"; ```'
    answer = 'Here are the default values under UNIX: [1]\n\n```\npdfviewer="xdg-open";\ngs="gs";\n```\n\n[1]'
    assert quoted(answer, [unit])
    assert not quoted("Under MSDOS the viewers default to cmd. [2]", [unit])


def test_expected_text_is_matched_across_spaces_and_dashes() -> None:
    key = answer_key("What does cmidrulekern default to?", "", CHUNKS, expected=r"\cmidrulekern defaults to 0.5 em")
    assert answers(key, r"The \cmidrulekern defaults to 0.5em.")


def test_key_terms_come_from_the_references_lead_not_its_asides() -> None:
    lead = "Use revoke() to cancel a task that has not started yet, by its id. " * 3
    key = answer_key("Can I cancel a task?", lead + "Unrelated: workers prefetch messages from the broker.", CHUNKS)
    assert "prefetch" not in " ".join(key.weights) and "revok" in " ".join(key.weights)


def test_meaning_decides_between_units_that_share_the_references_words() -> None:
    """Two units hold the reference's key terms; only the one closest in meaning to the reference's
    lead answers (a long sentence about something else that shares two key terms was half of a
    hand-checked sample's labels). A unit that nearly restates the lead answers whatever its words."""
    key = answer_key("Can I cancel the execution of a task?", "Yes, use revoke() with the task id to cancel it.", CHUNKS)
    texts = ["Call revoke() with the task id to cancel it.",
             "The task id and revoke() appear in the monitoring event list for every worker.",
             "A queued job can be withdrawn before it starts."]
    lead = np.array([1.0, 0.0, 0.0])
    vecs = np.array([[0.95, 0.31, 0.0], [0.5, 0.0, 0.87], [0.92, 0.39, 0.0]])
    assert [answers(key, t) for t in texts] == [True, True, False]  # the words alone
    assert answering(key, texts, vecs, lead) == [True, False, True]
    assert answering(key, texts) == [True, True, False]  # without vectors: the words alone
