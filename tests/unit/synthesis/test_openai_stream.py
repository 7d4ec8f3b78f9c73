"""Stream events and whole replies → answer text (ragcore/synthesis/llm/stream.py).

Events are the SDK's own pydantic types, built the way the SDK builds them from the wire.
"""

from __future__ import annotations

import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseErrorEvent,
    ResponseIncompleteEvent,
    ResponseTextDeltaEvent,
)

from ragcore.synthesis.llm.stream import (
    Malformed,
    RemoteError,
    StreamReader,
    ThinkFilter,
    full_text,
    strip_think,
)


def chunk(content: str | None = None, finish: str | None = None, choices: bool = True) -> ChatCompletionChunk:
    delta = {} if content is None else {"content": content}
    return ChatCompletionChunk.model_validate(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}] if choices else [],
        }
    )


def test_think_filter_drops_a_leading_block_split_anywhere() -> None:
    text = "  <think>plan: look at [2]</think>\n\nThe answer [1]."
    for cut_at in range(1, len(text)):
        f = ThinkFilter()
        out = f.feed(text[:cut_at]) + f.feed(text[cut_at:]) + f.flush()
        assert out == "The answer [1].", cut_at


def test_think_filter_leaves_other_text_alone() -> None:
    assert strip_think("<b>bold</b> answer") == "<b>bold</b> answer"
    assert strip_think("<thi") == "<thi"  # a prefix that never became a tag is kept
    assert strip_think("Answer <think>not leading</think> end.") == "Answer end."  # blocks anywhere go (issue 26)
    assert strip_think("<think>only thoughts, never closed") == ""


def test_chat_chunks_give_text_and_the_finish_reason() -> None:
    reader = StreamReader("chat")
    got = [reader.feed(c) for c in (chunk(""), chunk("Paris"), chunk(" [1]."), chunk(choices=False))]
    assert got == ["", "Paris", " [1].", ""] and not reader.finished
    reader.feed(chunk(finish="length"))
    assert reader.finished and reader.finish_reason == "length"


def test_responses_events_give_text_finish_and_remote_errors() -> None:
    reader = StreamReader("responses")
    delta = ResponseTextDeltaEvent.model_construct(type="response.output_text.delta", delta="Yes", item_id="m", output_index=0, content_index=0, sequence_number=1, logprobs=[])
    assert reader.feed(delta) == "Yes"
    reader.feed(ResponseCompletedEvent.model_construct(type="response.completed"))
    assert reader.finished and reader.finish_reason == "stop"

    incomplete = ResponseIncompleteEvent.model_construct(
        type="response.incomplete", response=type("R", (), {"incomplete_details": type("D", (), {"reason": "max_output_tokens"})()})()
    )
    reader = StreamReader("responses")
    reader.feed(incomplete)
    assert reader.finish_reason == "length"

    with pytest.raises(RemoteError) as info:
        StreamReader("responses").feed(ResponseErrorEvent.model_construct(type="error", message="overloaded", code="server_error"))
    assert info.value.code == "server_error" and "overloaded" in str(info.value)


def test_shapes_that_are_not_openai_are_malformed() -> None:
    with pytest.raises(Malformed):
        StreamReader("chat").feed(object())  # no choices at all
    bad = ChatCompletionChunk.model_construct(choices="not a list")
    with pytest.raises(Malformed):
        StreamReader("chat").feed(bad)
    with pytest.raises(Malformed):
        StreamReader("responses").feed(object())  # no type


def test_full_text_of_a_completion() -> None:
    resp = ChatCompletion.model_validate(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": "<think>x</think>Done [1]."}, "finish_reason": "stop"}],
        }
    )
    assert full_text(resp, "chat") == ("Done [1].", "stop")
    with pytest.raises(Malformed):
        full_text(ChatCompletion.model_construct(choices=[]), "chat")
    with pytest.raises(Malformed):
        full_text(object(), "responses")
