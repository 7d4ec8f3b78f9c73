"""Follow-ups carry the previous question's subject (followup.py), offline."""

from __future__ import annotations

from ragcore.engine.followup import resolve, resolve_offline, subject_of


def test_the_subject_replaces_the_pronoun() -> None:
    history = [("What is the default value of MAX_CONTENT_LENGTH?", "Default: None")]
    r = resolve("and how do I change it?", history)
    assert r.text == "and how do I change MAX_CONTENT_LENGTH?"
    assert r.carried == ("MAX_CONTENT_LENGTH",)


def test_without_a_pronoun_the_subject_is_added() -> None:
    r = resolve("What about the default?", [("How does Flask read SECRET_KEY?", "")])
    assert r.text.startswith("What about the default?") and "SECRET_KEY" in r.text and "Flask" in r.text


def test_question_words_are_not_carried() -> None:
    assert subject_of("How do I configure the similarity threshold?") == ["configure", "similarity", "threshold"]
    assert [w.lower() for w in subject_of("How can I use the reranker?")] == ["reranker"]


def test_a_chain_of_followups_keeps_the_first_subject() -> None:
    history = [("How do I deploy with Gunicorn?", ""), ("And with its workers?", "")]
    assert "Gunicorn" in resolve_offline("How many does it start?", history)


def test_standalone_questions_are_left_alone() -> None:
    history = [("How do I deploy with Gunicorn?", "")]
    q = "How do I ingest a folder of PDF files into a new collection with a custom name?"
    assert resolve(q, history).text == q and resolve(q, history).carried == ()
    assert resolve("Which variable sets it?", []).text == "Which variable sets it?"
