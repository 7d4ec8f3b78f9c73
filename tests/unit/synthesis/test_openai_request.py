"""The request body and the parameters adapted after a 400 (ragcore/synthesis/llm/request.py)."""

from __future__ import annotations

from ragcore.synthesis.llm.request import RequestShape, responses_body


def test_adapts_max_tokens_once_and_only_for_chat() -> None:
    shape = RequestShape()
    words = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
    assert not RequestShape().adapt("responses", words)
    assert shape.adapt("chat", words) and shape.max_tokens_param == "max_completion_tokens"
    assert not shape.adapt("chat", words)  # once: a second 400 like it is a real error


def test_adapts_temperature_only_when_the_server_says_it_is_unsupported() -> None:
    shape = RequestShape()
    assert not shape.adapt("chat", "temperature must be between 0 and 2")
    assert shape.adapt("chat", "Unsupported value: 'temperature' does not support 0.1 with this model.")
    assert shape.send_temperature is False
    assert not shape.adapt("chat", "Unsupported model for this endpoint unsupported_model")


def test_responses_body_moves_system_turns_to_instructions() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "developer", "content": "Cite."},
        {"role": "user", "content": "Q?"},
        {"role": "assistant", "content": None},
    ]
    body = responses_body("m", messages, 64)
    assert body["instructions"] == "Be brief.\n\nCite."
    assert body["input"] == [{"role": "user", "content": "Q?"}, {"role": "assistant", "content": ""}]
    assert body["max_output_tokens"] == 64 and body["store"] is False
    assert "instructions" not in responses_body("m", messages[2:], 64)
