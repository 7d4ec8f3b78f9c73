"""SDK exceptions → GenerationError (ragcore/synthesis/llm/sdk_errors.py).

The exceptions are the SDK's own classes around real httpx2 requests and responses, as the
SDK raises them; the end-to-end paths run against the scripted server in
tests/test_openai_generator.py.
"""

from __future__ import annotations

import httpx2
import openai
import pytest

from ragcore.synthesis.llm import sdk_errors as errors
from ragcore.synthesis.llm.stream import EndedEarly, Malformed, RemoteError

KEY = "sk-live-9f8e7d6c5b4a39281706"
CTX = errors.ErrorContext(
    url="http://127.0.0.1:9/v1", model="m1", api="chat", has_key=True, timeout_s=3, deadline_s=60,
    max_output_tokens=512, secrets=(KEY, "proxy-pass"),
)


def status_error(status: int, message: str, code: str | None = None, retries: int = 0) -> openai.APIStatusError:
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions", headers={"x-stainless-retry-count": str(retries)})
    response = httpx2.Response(status, request=request, json={"error": {"message": message, "code": code}})
    body = {"error": {"message": message, "code": code}}
    cls = {400: openai.BadRequestError, 401: openai.AuthenticationError, 404: openai.NotFoundError, 429: openai.RateLimitError}
    return cls.get(status, openai.InternalServerError)(message, response=response, body=body)


@pytest.mark.parametrize(
    ("status", "message", "code", "kind", "retryable", "names"),
    [
        (401, "bad key", None, "auth", False, "OPENAI_API_KEY"),
        (429, "slow down", "rate_limit_exceeded", "rate_limit", True, "request rate"),
        (429, "You exceeded your current quota", "insufficient_quota", "rate_limit", False, "billing"),
        (404, "no such model", "model_not_found", "bad_request", False, "RAGCORE_LLM_MODEL"),
        (400, "maximum context length is 4096", "context_length_exceeded", "bad_request", False, "RAGCORE_LLM_CONTEXT_WINDOW"),
        (503, "overloaded", None, "server", True, "HTTP 503"),
    ],
)
def test_status_errors_say_what_to_change(status, message, code, kind, retryable, names) -> None:
    err = errors.classify(status_error(status, message, code), CTX)
    assert (err.kind, err.retryable, err.status_code) == (kind, retryable, status)
    assert names in err.message and message.split()[0] in err.message
    assert err.attempts == 1 and "Gave up" not in err.message


def test_attempts_come_from_the_sdks_retry_header() -> None:
    err = errors.classify(status_error(503, "overloaded", retries=2), CTX)
    assert err.attempts == 3 and "Gave up after 3 attempts" in err.message
    timeout = openai.APITimeoutError(request=httpx2.Request("POST", "http://x/v1", headers={"x-stainless-retry-count": "1"}))
    err = errors.classify(timeout, CTX)
    assert err.kind == "timeout" and err.attempts == 2 and "RAGCORE_LLM_TIMEOUT_S" in err.message


def test_echoed_secrets_and_fragments_are_masked() -> None:
    exc = status_error(401, f"Incorrect API key provided: ****{KEY[-10:]}; proxy said proxy-pass")
    err = errors.classify(exc, CTX)
    assert KEY[-10:] not in err.message and "proxy-pass" not in err.message and "***" in err.message
    cut = errors.cut(RemoteError(f"upstream rejected {KEY[:12]}"), "Half", CTX)
    assert KEY[:12] not in cut.message and cut.partial == "Half"


def test_connection_reasons_read_the_cause_chain() -> None:
    request = httpx2.Request("POST", "http://x/v1")
    for cause, reason in [
        (ConnectionRefusedError(111, "Connection refused"), "connection refused"),
        (OSError("[Errno -2] Name or service not known"), "host name not found"),
        (ConnectionResetError(104, "Connection reset by peer"), "connection reset"),
    ]:
        try:
            raise openai.APIConnectionError(request=request) from cause
        except openai.APIConnectionError as exc:
            assert errors.connection_reason(exc) == reason
            assert reason in errors.classify(exc, CTX).message


def test_stream_endings() -> None:
    assert errors.classify(Malformed("bad chunk"), CTX).kind == "malformed"
    assert errors.classify(RemoteError("limit", code="rate_limit_exceeded"), CTX).kind == "rate_limit"
    assert errors.classify(EndedEarly(), CTX).kind == "stream_cut"
    cut = errors.cut(EndedEarly(), "So far", CTX)
    assert cut.kind == "stream_cut" and "stopped after 6 characters" in cut.message
    late = errors.deadline("So far", CTX)
    assert late.kind == "deadline" and late.partial == "So far"
    assert "60 s" in late.message and "RAGCORE_LLM_DEADLINE_S" in late.message
    assert errors.empty("length", CTX).kind == "empty" and "RAGCORE_LLM_MAX_OUTPUT_TOKENS" in errors.empty("length", CTX).message


def test_a_bug_is_not_disguised_as_an_endpoint_failure() -> None:
    with pytest.raises(ZeroDivisionError):
        errors.classify(ZeroDivisionError("bug"), CTX)
