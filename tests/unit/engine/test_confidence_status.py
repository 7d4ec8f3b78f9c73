"""`ok` means confident: an extractive answer below the reader's bar is `partial` (stages.answer_status),
and the Answer, its JSON and the OpenAI-compatible endpoint's `ragcore` field carry the confidence."""

from __future__ import annotations

from types import SimpleNamespace

from ragcore.engine.stages import answer_status, exempt
from ragcore.service.openai_compat import extra
from ragcore.synthesis.base import Synthesis
from ragcore.synthesis.extractive.composer import UNSURE_LEAD
from ragcore.types import Answer, Confidence, Validation

ANSWERED = SimpleNamespace(abstain_reason=None)


def test_a_low_confidence_answer_is_partial_and_a_confident_one_ok() -> None:
    low = Synthesis("x [1]", "extractive", confidence=Confidence(0.3, "low"))
    assert answer_status(ANSWERED, low, Validation()) == "partial"
    for level in ("medium", "high"):
        assert answer_status(ANSWERED, Synthesis("x [1]", "extractive", confidence=Confidence(0.8, level)), Validation()) == "ok"
    assert answer_status(ANSWERED, Synthesis("x [1]", "openai-chat:m"), Validation()) == "ok"  # a model's answer: no confidence
    assert answer_status(SimpleNamespace(abstain_reason="weak"), low, Validation()) == "abstained"
    # a level that does not decide (the shipped model's calibration missed its target) is a hint only
    hint = Synthesis("x [1]", "extractive", confidence=Confidence(0.3, "low", decides=False))
    assert answer_status(ANSWERED, hint, Validation()) == "ok"


def test_the_unsure_lead_needs_no_citation() -> None:
    assert exempt(UNSURE_LEAD)


def test_the_confidence_is_in_the_answer_json_and_the_ragcore_field() -> None:
    a = Answer(question="q", answer="a [1]", status="ok", confidence=Confidence(0.82, "high"))
    assert a.to_dict()["confidence"] == {"value": 0.82, "level": "high", "decides": True}
    assert extra(a)["confidence"] == {"value": 0.82, "level": "high", "decides": True}
    none = Answer(question="q", answer="", status="abstained")
    assert none.to_dict()["confidence"] is None and extra(none)["confidence"] is None
