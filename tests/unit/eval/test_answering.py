"""Labels of the answering sentence from a reference answer (eval/answering.py)."""

from __future__ import annotations

from ragcore.eval.answering import answer_key, answers, passage_rates, quoted

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
