"""No API key, no part of one, and no ``user:password@`` of OPENAI_BASE_URL in an error
message, a log line, a repr or display_url (the scripted server on 127.0.0.1)."""

from __future__ import annotations

import logging

import pytest

from ragcore.settings.config import LlmSettings
from ragcore.synthesis.llm.errors import GenerationError
from ragcore.synthesis.llm.generator import OpenAIGenerator
from tests.support.openai_server import Cut, HttpError, ScriptedOpenAIServer, Text

KEY = "sk-proj-Zq81LmN0pQ7rStUvWx42yZaB"
MESSAGES = [{"role": "user", "content": "Where are sessions stored?"}]


def with_credentials(server: ScriptedOpenAIServer) -> str:
    return server.base_url.replace("http://", "http://user:SECRET@")


def shown(err: GenerationError, gen: OpenAIGenerator) -> list[str]:
    return [err.message, str(err), repr(err), str(err.to_dict()), repr(gen), gen.display_url, gen.name]


def test_url_credentials_never_show(openai_server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # the SDK's and httpx's own debug lines too
    url = with_credentials(openai_server)
    openai_server.script(
        [Text("It works [1]."), HttpError(500, message=f"upstream {url} failed for user:SECRET"), Cut(["Half"], after=1)]
    )
    gen = OpenAIGenerator(LlmSettings(base_url=url, api_key=KEY, model="test-model", max_retries=0, timeout_s=2))

    assert gen.display_url == openai_server.base_url
    assert "".join(gen.stream(MESSAGES)) == "It works [1]."
    assert openai_server.requests[0].has_auth  # the key (Bearer); user:password@ is never sent (issue 26)
    with pytest.raises(GenerationError) as server_err:
        list(gen.stream(MESSAGES))
    with pytest.raises(GenerationError) as cut_err:
        list(gen.stream(MESSAGES))
    ok, message = gen.check_connection()

    assert server_err.value.kind == "server" and cut_err.value.kind == "stream_cut" and ok
    texts = shown(server_err.value, gen) + shown(cut_err.value, gen) + [message, caplog.text]
    for text in texts:
        assert "SECRET" not in text and "user:" not in text, text
    assert "LLM call failed" in caplog.text  # the failures were logged, redacted


def test_an_echoed_fragment_of_the_key_is_masked(openai_server: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    tail, head = KEY[-10:], KEY[:14]
    openai_server.script([HttpError(401, message=f"Incorrect API key provided: {head}****{tail}.", code="invalid_api_key")])
    openai_server.script_models([HttpError(403, message=f"key ending in {tail} may not list models")])
    gen = OpenAIGenerator(LlmSettings(base_url=openai_server.base_url, api_key=KEY, model="test-model", max_retries=0))

    with pytest.raises(GenerationError) as info:
        list(gen.stream(MESSAGES))
    ok, message = gen.check_connection()

    assert info.value.kind == "auth" and "OPENAI_API_KEY" in info.value.message and not ok
    for text in shown(info.value, gen) + [message, caplog.text]:
        assert tail not in text and head not in text and KEY not in text, text


def test_a_key_in_the_url_query_is_not_displayed() -> None:
    gen = OpenAIGenerator(LlmSettings(base_url=f"https://h.example/openai/v1?api-key={KEY}", api_key=KEY, model="m"))
    assert KEY not in gen.display_url and KEY not in repr(gen) and gen.display_url.startswith("https://h.example/openai/v1")
