"""The OpenAI-compatible front door driven by the official `openai` SDK: collections as models,
answers with [n] markers, a Sources list and the citations in the `ragcore` field, streamed and not."""

from __future__ import annotations

import openai
import pytest

from tests.integration.service.conftest import KEY

QUESTION = "How does hybrid mode fuse the dense and sparse rankings?"


@pytest.fixture(scope="module")
def served(start_server, guide_data):
    return start_server(guide_data, api_keys=(KEY,))  # extractive: the answer comes from the corpus


@pytest.fixture(scope="module")
def client(served) -> openai.OpenAI:
    return openai.OpenAI(base_url=served.url + "/v1", api_key=KEY, max_retries=0, timeout=60)


def test_models_are_the_collections(client: openai.OpenAI) -> None:
    assert [m.id for m in client.models.list()] == ["guide"]


def test_chat_completion_answers_with_citations(client: openai.OpenAI) -> None:
    done = client.chat.completions.create(model="guide", messages=[
        {"role": "system", "content": "ignored"}, {"role": "user", "content": QUESTION}])
    text = done.choices[0].message.content
    assert "[1]" in text and "\n\nSources:\n[1] 04-retrieval-modes-and-fusion.md:" in text
    assert done.choices[0].finish_reason == "stop" and done.model == "guide"
    extra = done.ragcore  # the documented extra field, kept by the SDK
    assert extra["status"] in ("ok", "partial") and extra["request_id"]
    first = extra["citations"][0]
    assert first["n"] == 1 and first["path"] == "04-retrieval-modes-and-fusion.md" and first["start_line"] >= 1
    assert first["quote"] and len(first["quote"]) <= 300 and "section" in first and "page" in first


def test_streamed_chat_completion(client: openai.OpenAI) -> None:
    chunks = list(client.chat.completions.create(model="guide", messages=[{"role": "user", "content": QUESTION}],
                                                 stream=True))
    text = "".join(c.choices[0].delta.content or "" for c in chunks)
    assert "[1]" in text and "Sources:\n[1] " in text
    assert chunks[0].choices[0].delta.role == "assistant" and chunks[-1].choices[0].finish_reason == "stop"
    assert chunks[-1].ragcore["citations"][0]["path"].endswith(".md")
    assert len({c.id for c in chunks}) == 1


def test_history_makes_a_follow_up_standalone(client: openai.OpenAI) -> None:
    done = client.chat.completions.create(model="guide", messages=[
        {"role": "user", "content": "What is selected-text mode?"},
        {"role": "assistant", "content": "It answers from a passage you selected [1]."},
        {"role": "user", "content": "How short may it be?"}])
    # the earlier user message made the follow-up standalone (engine/followup.py)
    assert done.ragcore["standalone_question"] == "How short may selected-text mode be?"  # the subject in place of "it"


def test_errors_reach_the_sdk_as_its_own_exceptions(served, client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError, match="models are collections"):
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": QUESTION}])
    with pytest.raises(openai.UnprocessableEntityError, match="last message must be a user message"):
        client.chat.completions.create(model="guide", messages=[{"role": "assistant", "content": "hi"}])
    wrong = openai.OpenAI(base_url=served.url + "/v1", api_key="not-the-key", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.models.list()


def test_one_model_is_retrieved_by_its_id(client: openai.OpenAI) -> None:
    assert client.models.retrieve("guide").id == "guide"
    with pytest.raises(openai.NotFoundError, match="models are collections"):
        client.models.retrieve("nope")


def test_usage_counts_the_reply(client: openai.OpenAI) -> None:
    done = client.chat.completions.create(model="guide", messages=[{"role": "user", "content": QUESTION}])
    u = done.usage
    assert u.completion_tokens > 0 and u.prompt_tokens > 0 and u.total_tokens == u.prompt_tokens + u.completion_tokens


@pytest.mark.parametrize("param, value", [("n", 2), ("tools", [{"type": "function", "function": {"name": "f"}}]),
                                          ("response_format", {"type": "json_object"})])
def test_parameters_that_would_change_the_reply_are_refused(client: openai.OpenAI, param, value) -> None:
    with pytest.raises(openai.BadRequestError, match=f"^Error code: 400 .*{param}:") as err:
        client.chat.completions.create(model="guide", messages=[{"role": "user", "content": QUESTION}], **{param: value})
    assert err.value.code == "unsupported_parameter"
