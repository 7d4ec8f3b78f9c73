"""OpenAIGenerator against a real HTTP server on 127.0.0.1 that speaks the OpenAI protocol.

The ``openai_server`` fixture comes from tests/openai_server.py via tests/conftest.py.
"""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from ragcore.settings.config import LlmSettings
from ragcore.synthesis.llm.errors import GenerationError
from ragcore.settings.llm_config import resolve_llm_settings, resolve_llm_settings_with_sources
from ragcore.synthesis.llm.generator import OpenAIGenerator
from ragcore.synthesis.llm.packing import pack_evidence
from ragcore.synthesis.llm.prompts import SYSTEM_PROMPT, build_messages
from ragcore.types import Chunk, Evidence
from tests.support.openai_server import (
    Cut,
    Empty,
    Hang,
    HttpError,
    Malformed,
    ScriptedOpenAIServer,
    Text,
    unused_port,
)

KEY = "sk-test-SECRET-0123456789abcdef"
APIS = ["chat", "responses"]


def make(base_url: str, api: str = "chat", **kw) -> OpenAIGenerator:
    settings = LlmSettings(
        base_url=base_url,
        api_key=kw.pop("api_key", KEY),
        model=kw.pop("model", "test-model"),
        api=api,
        timeout_s=kw.pop("timeout_s", 0.5),
        max_retries=kw.pop("max_retries", 1),
        **kw,
    )
    return OpenAIGenerator(settings)


def retry_counts(server: ScriptedOpenAIServer) -> list[str]:
    """The SDK numbers its retries in a header: which attempt each request was."""
    return [r.headers.get("x-stainless-retry-count") for r in server.generation_requests()]


def gaps(server: ScriptedOpenAIServer) -> list[float]:
    """Seconds between consecutive requests as the server saw them (the waits before retries)."""
    at = [r.at for r in server.generation_requests()]
    return [b - a for a, b in zip(at, at[1:])]


def evidence(n: int, text: str, origin: str = "corpus") -> Evidence:
    chunk = Chunk(
        chunk_id=f"c{n}",
        text=text,
        path=f"docs/topic{n}.md",
        doc_hash="h",
        kind="markdown",
        start_line=10 * n,
        end_line=10 * n + 5,
        section=("Guide", f"Part {n}"),
    )
    return Evidence(n=n, chunk=chunk, origin=origin, score=0.8, score_kind="cosine")


def question_messages() -> list[dict]:
    packed = pack_evidence(
        [evidence(1, "Django stores sessions in the database by default."), evidence(2, "Use the cache backend for speed.")],
        budget_tokens=2000,
    )
    return build_messages("Where are sessions stored?", packed)


MESSAGES = [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Where are sessions stored?"}]


def expect_error(gen_iter) -> tuple[list[str], GenerationError]:
    got: list[str] = []
    with pytest.raises(GenerationError) as info:
        for piece in gen_iter:
            got.append(piece)
    return got, info.value


# --------------------------------------------------------------------------- answers


@pytest.mark.parametrize("api", APIS)
def test_streams_a_cited_answer(openai_server: ScriptedOpenAIServer, api: str) -> None:
    pieces = ["Sessions are stored", " in the database", " by default [1]."]
    openai_server.script([Text(pieces, delay=0.01)])
    gen = make(openai_server.base_url, api)
    messages = question_messages()

    got = list(gen.stream(messages))

    assert got == pieces
    assert "".join(got) == "Sessions are stored in the database by default [1]."
    (req,) = openai_server.requests
    assert req.has_auth and "authorization" not in req.headers
    body = req.body
    assert body["model"] == "test-model" and body["stream"] is True
    assert body["temperature"] == pytest.approx(0.1)
    if api == "chat":
        assert req.path == "/v1/chat/completions"
        assert body["max_tokens"] == 512
        assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
        assert '<evidence n="1"' in body["messages"][-1]["content"]
    else:
        assert req.path == "/v1/responses"
        assert body["max_output_tokens"] == 512 and body["store"] is False
        assert body["instructions"] == SYSTEM_PROMPT
        assert [m["role"] for m in body["input"]] == ["user"]
        assert '<evidence n="2"' in body["input"][0]["content"]
    assert retry_counts(openai_server) == ["0"]
    assert gen.name == f"openai-{api}:test-model"


@pytest.mark.parametrize("api", APIS)
def test_complete_without_streaming(openai_server: ScriptedOpenAIServer, api: str) -> None:
    openai_server.script([Text(["In the database", " [1]."])])
    gen = make(openai_server.base_url, api)

    assert gen.complete(MESSAGES) == "In the database [1]."
    assert openai_server.requests[0].body["stream"] is False


def test_think_block_is_removed(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([Text(["<thi", "nk>The user asks", " about sessions.</th", "ink>\n\nIn the", " database [1]."])])
    gen = make(openai_server.base_url)

    assert "".join(gen.stream(MESSAGES)) == "In the database [1]."


def test_accepts_a_legacy_httpx_client(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([Text("Yes [1].")])
    with httpx.Client() as client:
        settings = LlmSettings(base_url=openai_server.base_url, model="test-model", timeout_s=1.0)
        gen = OpenAIGenerator(settings, http_client=client)
        assert "".join(gen.stream(MESSAGES)) == "Yes [1]."


# --------------------------------------------------------------------------- errors


def test_401_is_an_auth_error_that_never_shows_the_key(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([HttpError(401, message=f"Incorrect API key provided: {KEY}.", type="invalid_request_error", code="invalid_api_key")])
    gen = make(openai_server.base_url, max_retries=2)

    _, err = expect_error(gen.stream(MESSAGES))

    assert err.kind == "auth" and err.retryable is False and err.status_code == 401
    assert "OPENAI_API_KEY" in err.message
    for text in (err.message, str(err), repr(err), repr(gen), str(err.to_dict())):
        assert KEY not in text and "SECRET" not in text
    assert err.__cause__ is None and err.__suppress_context__
    assert len(openai_server.requests) == 1  # not retried


def test_401_without_a_key_says_to_set_one(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([HttpError(401, message="Missing bearer authentication")])
    gen = make(openai_server.base_url, api_key=None)

    _, err = expect_error(gen.stream(MESSAGES))

    assert err.kind == "auth" and "none is set" in err.message and "OPENAI_API_KEY" in err.message


def test_429_honours_retry_after_then_succeeds(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([HttpError(429, message="Rate limit reached", type="requests", code="rate_limit_exceeded", retry_after=1), Text("OK [1].")])
    gen = make(openai_server.base_url, max_retries=2)

    assert "".join(gen.stream(MESSAGES)) == "OK [1]."

    assert retry_counts(openai_server) == ["0", "1"]
    (gap,) = gaps(openai_server)
    assert 0.95 <= gap < 1.5  # the server's Retry-After: 1, not the 0.5 s backoff


def test_429_insufficient_quota_is_not_retried(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([HttpError(429, message="You exceeded your current quota", type="insufficient_quota", code="insufficient_quota")])
    gen = make(openai_server.base_url, max_retries=2)

    _, err = expect_error(gen.stream(MESSAGES))

    assert err.kind == "rate_limit" and err.retryable is False and "billing" in err.message
    assert len(openai_server.requests) == 1


@pytest.mark.parametrize("api", APIS)
def test_500_then_success(openai_server: ScriptedOpenAIServer, api: str) -> None:
    # the SDK's backoff: 0.5 s less up to 25 % jitter; a Retry-After of 0 does not shorten it
    retry_after = None if api == "chat" else 0
    openai_server.script([HttpError(500, message="boom", retry_after=retry_after), Text("Recovered [2].")])
    gen = make(openai_server.base_url, api)

    assert "".join(gen.stream(MESSAGES)) == "Recovered [2]."
    assert len(openai_server.requests) == 2 and retry_counts(openai_server) == ["0", "1"]
    (gap,) = gaps(openai_server)
    assert 0.37 <= gap < 1.0


def test_503_forever_gives_up_after_max_retries(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([HttpError(503, message="overloaded")] * 5)
    gen = make(openai_server.base_url, max_retries=2)

    t0 = time.monotonic()
    _, err = expect_error(gen.stream(MESSAGES))
    elapsed = time.monotonic() - t0

    assert err.kind == "server" and err.retryable and err.status_code == 503 and err.attempts == 3
    assert "HTTP 503" in err.message and "3 attempts" in err.message
    assert len(openai_server.requests) == 3
    first, second = gaps(openai_server)  # exponential backoff: ~0.5 s, then ~1 s (25 % jitter)
    # the lower bounds show the backoff; the upper ones only that it ends (a loaded machine stretches both)
    assert 0.37 <= first < 10 and 0.74 <= second < 15
    assert 1.1 <= elapsed < 30


def test_complete_retries_too(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([HttpError(502, message="bad gateway", retry_after=0), Text("Fine [1].")])
    gen = make(openai_server.base_url)

    assert gen.complete(MESSAGES) == "Fine [1]."
    assert len(openai_server.requests) == 2


@pytest.mark.parametrize("api", APIS)
def test_hang_is_a_timeout_within_the_budget(openai_server: ScriptedOpenAIServer, api: str) -> None:
    retries = 1 if api == "chat" else 0  # one retried, one not: keeps the file fast
    openai_server.script([Hang(60.0), Hang(60.0)])  # ends when the client leaves
    gen = make(openai_server.base_url, api, timeout_s=0.5, max_retries=retries)

    t0 = time.monotonic()
    _, err = expect_error(gen.stream(MESSAGES))
    elapsed = time.monotonic() - t0

    assert err.kind == "timeout" and err.retryable and err.attempts == retries + 1
    assert "0.5 s" in err.message and "RAGCORE_LLM_TIMEOUT_S" in err.message
    # timeout_s per attempt plus a 0.5 s backoff between them (0.5 / 1.5 s quiet), far from the 60 s hangs
    assert 0.5 * (retries + 1) <= elapsed < 20
    assert len(openai_server.requests) == retries + 1


def test_stall_after_tokens_is_a_stream_cut(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([Hang(5.0, pieces=["Sessions", " are"])])
    gen = make(openai_server.base_url, timeout_s=0.5, max_retries=2)

    got, err = expect_error(gen.stream(MESSAGES))

    assert got == ["Sessions", " are"]
    assert err.kind == "stream_cut" and err.partial == "Sessions are"
    assert "sent nothing for 0.5 s" in err.message
    assert len(openai_server.requests) == 1  # never retried once text was streamed


def test_connection_refused() -> None:
    url = f"http://127.0.0.1:{unused_port()}/v1"
    gen = make(url, max_retries=1)

    _, err = expect_error(gen.stream(MESSAGES))

    assert err.kind == "connection" and err.retryable and err.attempts == 2
    assert f"Could not reach the LLM endpoint at {url} (connection refused)" in err.message
    assert "OPENAI_BASE_URL" in err.message
    ok, message = gen.check_connection()
    assert not ok and "connection refused" in message


@pytest.mark.parametrize("api", APIS)
def test_stream_cut_mid_answer_keeps_the_partial_text(openai_server: ScriptedOpenAIServer, api: str) -> None:
    openai_server.script([Cut(["Sessions are", " stored in", " the database [1]."], after=2)])
    gen = make(openai_server.base_url, api, max_retries=2)

    got, err = expect_error(gen.stream(MESSAGES))

    assert got == ["Sessions are", " stored in"]
    assert err.kind == "stream_cut" and err.retryable
    assert err.partial == "Sessions are stored in"
    assert "stopped after 22 characters" in err.message and "partial answer is kept" in err.message
    assert len(openai_server.requests) == 1


@pytest.mark.parametrize("api", APIS)
def test_malformed_chunk(openai_server: ScriptedOpenAIServer, api: str) -> None:
    openai_server.script([Malformed()])
    gen = make(openai_server.base_url, api, max_retries=2)

    _, err = expect_error(gen.stream(MESSAGES))

    assert err.kind == "malformed" and not err.retryable
    assert "cannot parse" in err.message and "OPENAI_BASE_URL" in err.message
    assert len(openai_server.requests) == 1


def test_malformed_after_tokens_keeps_partial_text(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([Malformed(pieces=["Half", " an answer"])])
    gen = make(openai_server.base_url)

    got, err = expect_error(gen.stream(MESSAGES))

    assert got == ["Half", " an answer"] and err.kind == "malformed" and err.partial == "Half an answer"


def test_json_of_the_wrong_shape_is_malformed(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([Malformed(raw='{"object": "not.a.chunk"}'), Malformed()])
    gen = make(openai_server.base_url)

    _, err = expect_error(gen.stream(MESSAGES))
    assert err.kind == "malformed"
    with pytest.raises(GenerationError) as info:
        gen.complete(MESSAGES)
    assert info.value.kind == "malformed"


@pytest.mark.parametrize("api", APIS)
def test_empty_completion(openai_server: ScriptedOpenAIServer, api: str) -> None:
    openai_server.script([Empty(), Empty(), Empty(finish_reason="length")])
    gen = make(openai_server.base_url, api, max_retries=2)

    _, err = expect_error(gen.stream(MESSAGES))
    assert err.kind == "empty" and err.partial == "" and "empty answer" in err.message
    with pytest.raises(GenerationError) as info:
        gen.complete(MESSAGES)
    assert info.value.kind == "empty"
    _, err = expect_error(gen.stream(MESSAGES))
    assert err.kind == "empty" and "RAGCORE_LLM_MAX_OUTPUT_TOKENS" in err.message
    assert len(openai_server.requests) == 3  # an empty answer is not retried automatically


def test_404_unknown_model_is_a_bad_request(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([HttpError(404, message="The model `nope` does not exist", type="invalid_request_error", code="model_not_found")])
    gen = make(openai_server.base_url, "responses", model="nope", max_retries=2)

    _, err = expect_error(gen.stream(MESSAGES))

    assert err.kind == "bad_request" and not err.retryable and err.status_code == 404
    assert "RAGCORE_LLM_MODEL" in err.message and "'nope'" in err.message and "RAGCORE_LLM_API=chat" in err.message
    assert len(openai_server.requests) == 1


def test_context_overflow_says_what_to_lower(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([HttpError(400, message="This model's maximum context length is 4096 tokens.", code="context_length_exceeded")])
    gen = make(openai_server.base_url)

    _, err = expect_error(gen.stream(MESSAGES))

    assert err.kind == "bad_request" and "RAGCORE_LLM_CONTEXT_WINDOW" in err.message


def test_adapts_to_a_model_that_rejects_max_tokens(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script(
        [
            HttpError(400, message="Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.", code="unsupported_parameter"),
            HttpError(400, message="Unsupported value: 'temperature' does not support 0.1 with this model. Only the default (1) value is supported.", code="unsupported_value"),
            Text("Adapted [1]."),
        ]
    )
    gen = make(openai_server.base_url, max_retries=0)

    assert "".join(gen.stream(MESSAGES)) == "Adapted [1]."
    last = openai_server.requests[-1].body
    assert last["max_completion_tokens"] == 512 and "max_tokens" not in last and "temperature" not in last


def test_no_model_configured() -> None:
    gen = OpenAIGenerator(LlmSettings())
    _, err = expect_error(gen.stream(MESSAGES))
    assert err.kind == "bad_request" and "RAGCORE_LLM_MODEL" in err.message
    ok, message = gen.check_connection()
    assert not ok and "RAGCORE_LLM_MODEL" in message


# --------------------------------------------------------------------------- cancelling


@pytest.mark.parametrize("api", APIS)
def test_closing_the_generator_closes_the_http_stream(openai_server: ScriptedOpenAIServer, api: str) -> None:
    openai_server.script([Text([f"t{i} " for i in range(40)], delay=0.1)])
    gen = make(openai_server.base_url, api, timeout_s=2.0)

    it = gen.stream(MESSAGES)
    assert [next(it), next(it)] == ["t0 ", "t1 "]
    closed_at = time.monotonic()
    it.close()

    (req,) = openai_server.requests
    assert req.disconnected.wait(10), "the server never saw the client go away"
    assert req.disconnected_at - closed_at < 1.0
    assert req.finished_at is not None and req.finished_at - req.at < 2.0  # did not stream all 40 tokens


def test_cancel_event_from_another_thread(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([Text([f"t{i} " for i in range(40)], delay=0.05)])
    gen = make(openai_server.base_url, timeout_s=2.0)
    cancel = threading.Event()

    got: list[str] = []
    with pytest.raises(GenerationError) as info:
        for piece in gen.stream(MESSAGES, cancel=cancel):
            got.append(piece)
            if len(got) == 3:
                threading.Timer(0.0, cancel.set).start()
    err = info.value
    assert err.kind == "cancelled" and err.partial == "".join(got) and len(got) <= 5
    assert openai_server.requests[0].disconnected.wait(10)


def test_cancel_during_backoff(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([HttpError(429, retry_after=60)])
    gen = make(openai_server.base_url, max_retries=1)
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()

    t0 = time.monotonic()
    _, err = expect_error(gen.stream(MESSAGES, cancel=cancel))

    assert err.kind == "cancelled" and time.monotonic() - t0 < 10  # 0.2 s quiet, the backoff 60 s


# --------------------------------------------------------------------------- connection check


def test_check_connection_lists_the_model(openai_server: ScriptedOpenAIServer) -> None:
    gen = make(openai_server.base_url)
    ok, message = gen.check_connection()
    assert ok and "'test-model' is available" in message and KEY not in message
    assert openai_server.requests[0].path == "/v1/models"


def test_check_connection_probes_an_unlisted_model(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.models = ["other-model"]
    openai_server.script([Text("OK")])
    gen = make(openai_server.base_url)
    ok, message = gen.check_connection()
    assert ok and "does not list it" in message
    assert openai_server.requests[1].body["max_tokens"] == 16

    openai_server.script([HttpError(404, message="model not found")])
    ok, message = gen.check_connection()
    assert not ok and "RAGCORE_LLM_MODEL" in message and "other-model" in message


def test_check_connection_reports_a_bad_key(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script_models([HttpError(401, message=f"Incorrect API key provided: {KEY}")])
    gen = make(openai_server.base_url)
    ok, message = gen.check_connection()
    assert not ok and "OPENAI_API_KEY" in message and KEY not in message


# --------------------------------------------------------------------------- settings


def test_settings_precedence_explicit_env_secrets(tmp_path) -> None:
    global_secrets = tmp_path / "home.toml"
    global_secrets.write_text('OPENAI_API_KEY = "sk-from-global-file"\nRAGCORE_LLM_MODEL = "global-model"\n')
    project = tmp_path / "project.toml"
    project.write_text('[llm]\nmodel = "file-model"\ntemperature = 0.3\napi = "responses"\n[openai]\nbase_url = "http://127.0.0.1:8080/v1"\n')
    env = {"RAGCORE_LLM_MODEL": "env-model", "RAGCORE_LLM_MAX_RETRIES": "4"}

    s, sources = resolve_llm_settings_with_sources(
        {"timeout_s": 3, "max_output_tokens": None}, env=env, secrets_files=[global_secrets, project]
    )

    assert s.model == "env-model" and sources["model"] == "environment (RAGCORE_LLM_MODEL)"
    assert s.api == "responses" and s.temperature == 0.3 and s.base_url == "http://127.0.0.1:8080/v1"
    assert s.api_key == "sk-from-global-file" and sources["api_key"] == "secrets (OPENAI_API_KEY)"
    assert s.max_retries == 4 and s.timeout_s == 3.0 and sources["timeout_s"] == "explicit"
    assert s.max_output_tokens == 512 and sources["max_output_tokens"] == "default"
    assert "sk-from-global-file" not in repr(s) and "sk-from-global-file" not in str(sources)


def test_settings_errors_name_the_source_not_the_secret(tmp_path) -> None:
    with pytest.raises(ValueError, match="RAGCORE_LLM_API.*'chat' or 'responses'"):
        resolve_llm_settings(env={"RAGCORE_LLM_API": "completions"}, secrets_files=())
    with pytest.raises(ValueError) as info:
        resolve_llm_settings({"api_key": 12345}, env={}, secrets_files=())
    assert "12345" not in str(info.value)
    bad = tmp_path / "secrets.toml"
    bad.write_text('OPENAI_API_KEY = "sk-unterminated\n')
    with pytest.raises(ValueError) as info:
        resolve_llm_settings(env={}, root=tmp_path, secrets_files=[bad])
    assert "sk-unterminated" not in str(info.value) and "not valid TOML" in str(info.value)


def test_settings_read_the_project_secrets_file(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no ~/.streamlit/secrets.toml
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text('[ragcore.llm]\nmodel = "proj-model"\n')
    s = resolve_llm_settings(env={"OPENAI_BASE_URL": "http://localhost:11434/v1"}, root=tmp_path)
    assert s.model == "proj-model" and s.base_url == "http://localhost:11434/v1"


def test_an_unrelated_400_is_not_mistaken_for_a_rejected_parameter(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([HttpError(400, message="Unsupported model for this endpoint", code="unsupported_model"), Text("never")])
    gen = make(openai_server.base_url, max_retries=2)

    _, err = expect_error(gen.stream(MESSAGES))

    assert err.kind == "bad_request" and len(openai_server.requests) == 1
    assert "temperature" in openai_server.requests[0].body


def test_generation_error_pickles_and_serialises() -> None:
    import pickle

    err = GenerationError("stream_cut", "The answer stopped.", partial="Half", status_code=None, attempts=2)
    back = pickle.loads(pickle.dumps(err))
    assert (back.kind, back.message, back.retryable, back.partial, back.attempts) == ("stream_cut", "The answer stopped.", True, "Half", 2)
    assert back.partial_text == "Half"  # the former name still reads
    assert err.to_dict()["kind"] == "stream_cut" and err.to_dict()["partial"] == "Half" and str(err) == "The answer stopped."
    assert GenerationError("deadline", "x", partial="so far").retryable is True
    assert GenerationError("auth", "x").retryable is False
