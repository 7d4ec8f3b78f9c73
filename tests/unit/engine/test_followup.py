"""Follow-ups answered without a model: the previous question's terms carry over."""

from __future__ import annotations

from ragcore.engine.followup import is_followup, resolve_offline

FIRST = "How do I change the similarity threshold?"


def test_followup_detection() -> None:
    assert is_followup("Which environment variable sets it?")
    assert is_followup("And in sparse mode?")
    assert not is_followup("What is BM25?")
    assert not is_followup("How do I ingest a folder of PDF files into a new collection with a custom name?")


def test_resolution_carries_the_previous_terms() -> None:
    q = resolve_offline("Which environment variable sets it?", [(FIRST, "…")])
    assert q == "Which environment variable sets similarity threshold?"  # the subject in place of "it"
    assert resolve_offline("What is BM25?", [(FIRST, "…")]) == "What is BM25?"
    assert resolve_offline("Which variable sets it?", []) == "Which variable sets it?"


def test_engine_answers_a_followup_offline(guide_engine) -> None:
    alone = guide_engine.ask("Which environment variable sets it?")
    answer = guide_engine.ask("Which environment variable sets it?", history=[(FIRST, "")])
    assert answer.status in ("ok", "partial"), answer.validation.guardrail_actions
    assert answer.metadata["standalone_question"] and "threshold" in answer.metadata["standalone_question"]
    assert "RAGCORE_THRESHOLD" in answer.answer or any("RAGCORE_THRESHOLD" in e.chunk.text for e in answer.evidence)
    assert alone.metadata["standalone_question"] is None
