"""Exceptions of the ``openai`` SDK (and of stream parsing) → :class:`GenerationError`.

Each message says what happened and what to do, names the setting to change, and goes
through :func:`ragcore.settings.redact.redact_text` with the endpoint's secrets (the API key and the
base URL's user and password), so neither a secret nor a fragment a server echoed back can
reach the user, a log or a saved answer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ragcore.settings.redact import redact_text
from ragcore.synthesis.llm.errors import ErrorKind, GenerationError
from ragcore.synthesis.llm.stream import EndedEarly, Malformed, RemoteError

_NOT_FOUND_HOST = ("name or service not known", "nodename nor servname", "getaddrinfo", "name resolution", "no address associated")
_CONTEXT_OVERFLOW = ("context_length", "context length", "maximum context", "too many tokens", "prompt is too long")


@dataclass(frozen=True)
class ErrorContext:
    """What the messages name: the endpoint (already without credentials) and its settings."""

    url: str
    model: str
    api: str
    has_key: bool
    timeout_s: float
    deadline_s: float
    max_output_tokens: int
    secrets: tuple[str, ...] = ()
    url_credentials: bool = False  # the base URL had user:password@ (removed, never sent)

    def error(self, kind: ErrorKind, message: str, **kw: Any) -> GenerationError:
        """The one way errors are built here: the message is always redacted."""
        return GenerationError(kind, redact_text(message, self.secrets), **kw)


def short(text: object, limit: int = 300) -> str:
    s = " ".join(str(text).split())
    return s if len(s) <= limit else s[: limit - 1] + "…"


# --------------------------------------------------------------------------- entry point


def classify(exc: BaseException, ctx: ErrorContext) -> GenerationError:
    """A GenerationError for ``exc`` raised before any text reached the caller.

    Anything that is not an endpoint failure (a bug here) is re-raised unchanged.
    """
    if isinstance(exc, GenerationError):
        return exc
    err = _classify(exc, ctx)
    n = attempts_made(exc)
    message = err.message + (f" (Gave up after {n} attempts.)" if n > 1 else "")
    return GenerationError(err.kind, message, retryable=err.retryable, status_code=err.status_code, attempts=n)


def _classify(exc: BaseException, ctx: ErrorContext) -> GenerationError:
    import openai

    if isinstance(exc, openai.APITimeoutError):
        return ctx.error(
            "timeout",
            f"The LLM endpoint at {ctx.url} did not answer within {ctx.timeout_s:g} s. Check that the "
            "server is running and not overloaded, or raise RAGCORE_LLM_TIMEOUT_S.",
        )
    if isinstance(exc, openai.APIConnectionError):
        return ctx.error(
            "connection",
            f"Could not reach the LLM endpoint at {ctx.url} ({connection_reason(exc)}). Check that the "
            "server is running and OPENAI_BASE_URL is right.",
        )
    if isinstance(exc, openai.APIStatusError):
        return status_error(exc, ctx)
    if isinstance(exc, (openai.APIResponseValidationError, Malformed, json.JSONDecodeError)):
        return malformed(str(exc), ctx)
    if isinstance(exc, (RemoteError, openai.APIError)):  # an error reported inside the stream
        detail, code = (short(exc), exc.code) if isinstance(exc, RemoteError) else server_detail(exc)
        return ctx.error(
            "rate_limit" if "rate_limit" in str(code or "").lower() else "server",
            f"The LLM endpoint at {ctx.url} reported an error during generation: {detail}. Try again; "
            "if it keeps happening, check the server's logs.",
        )
    if isinstance(exc, EndedEarly):
        return ctx.error("stream_cut", f"The LLM stream from {ctx.url} ended without a finish signal before any text. Try again.")
    raise exc


def attempts_made(exc: BaseException) -> int:
    """How many requests the SDK made: it numbers its retries in ``x-stainless-retry-count``."""
    request = getattr(getattr(exc, "response", None), "request", None) or getattr(exc, "request", None)
    try:
        return int(request.headers.get("x-stainless-retry-count", 0)) + 1
    except (AttributeError, TypeError, ValueError, RuntimeError):
        return 1


# --------------------------------------------------------------------------- HTTP statuses


def status_error(exc: Any, ctx: ErrorContext) -> GenerationError:
    status = exc.status_code
    detail, code = server_detail(exc)
    if status in (401, 403):
        return ctx.error("auth", _auth_message(status, detail, ctx), retryable=False, status_code=status)
    if status == 429:
        return _rate_limit(detail, code, ctx)
    if status == 408:
        return ctx.error(
            "timeout",
            f"The LLM endpoint at {ctx.url} timed out the request (HTTP 408: {detail}). Try again, or "
            "raise RAGCORE_LLM_TIMEOUT_S.",
            status_code=408,
        )
    if status >= 500 or status == 409:
        return ctx.error(
            "server",
            f"The LLM endpoint at {ctx.url} had a server error (HTTP {status}: {detail}). Check that the "
            "server and its model are up (see its logs), then try again.",
            status_code=status,
        )
    return ctx.error("bad_request", _bad_request_message(status, detail, code, ctx), retryable=False, status_code=status)


def _auth_message(status: int, detail: str, ctx: ErrorContext) -> str:
    dropped = (" The user name and password in OPENAI_BASE_URL were not sent: ragcore authenticates with "
               "OPENAI_API_KEY only (as a Bearer token).") if ctx.url_credentials else ""
    return _key_message(status, detail, ctx) + dropped


def _key_message(status: int, detail: str, ctx: ErrorContext) -> str:
    if not ctx.has_key:
        return (
            f"The LLM endpoint at {ctx.url} requires an API key (HTTP {status}: {detail}) and none "
            "is set. Set OPENAI_API_KEY (or OPENAI_API_KEY in .streamlit/secrets.toml)."
        )
    if status == 401:
        return f"The LLM endpoint at {ctx.url} rejected the API key (HTTP 401: {detail}). Check OPENAI_API_KEY."
    return (
        f"The LLM endpoint at {ctx.url} refused access (HTTP 403: {detail}). Check OPENAI_API_KEY "
        f"and that the key may use model '{ctx.model}'."
    )


def _rate_limit(detail: str, code: str | None, ctx: ErrorContext) -> GenerationError:
    if is_quota(f"{detail} {code or ''}"):
        return ctx.error(
            "rate_limit",
            f"The LLM endpoint at {ctx.url} says the account's quota is used up (HTTP 429: {detail}). "
            "Check the plan and billing of the account behind OPENAI_API_KEY.",
            retryable=False,
            status_code=429,
        )
    return ctx.error(
        "rate_limit",
        f"The LLM endpoint at {ctx.url} is rate limiting requests (HTTP 429: {detail}). Wait a "
        "little and ask again, or lower the request rate.",
        status_code=429,
    )


def is_quota(text: str) -> bool:
    """A 429 that waiting will not fix (the account is out of credit)."""
    low = text.lower()
    return "quota" in low or "billing" in low


def _bad_request_message(status: int, detail: str, code: str | None, ctx: ErrorContext) -> str:
    low = f"{detail} {code or ''}".lower()
    if status == 404:
        hint = f"Check RAGCORE_LLM_MODEL (now '{ctx.model}'): the model name must be one the server serves"
        if ctx.api == "responses":
            hint += "; and that the server has the Responses API (else set RAGCORE_LLM_API=chat)"
        hint += "; and that OPENAI_BASE_URL includes the API prefix, usually /v1."
        return f"The LLM endpoint at {ctx.url} answered 404 Not Found ({detail}). {hint}"
    if any(s in low for s in _CONTEXT_OVERFLOW):
        return (
            f"The prompt is longer than the model's context window (HTTP {status}: {detail}). Set "
            "RAGCORE_LLM_CONTEXT_WINDOW to the model's real window, or lower top_k."
        )
    return (
        f"The LLM endpoint at {ctx.url} rejected the request (HTTP {status}: {detail}). Check "
        f"RAGCORE_LLM_MODEL (now '{ctx.model}') and the model's settings (RAGCORE_LLM_API, "
        "temperature, max_output_tokens)."
    )


def server_detail(exc: Any) -> tuple[str, str | None]:
    """The server's own (shortened, not yet redacted) error message and code."""
    body = getattr(exc, "body", None)
    msg, code = None, None
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict):
            msg, code = err.get("message"), err.get("code")
        elif isinstance(err, str):
            msg = err
        msg = msg or body.get("message") or body.get("detail")
    if not msg:
        try:
            msg = exc.response.text
        except Exception:  # noqa: BLE001 - no response, or an unread stream
            msg = None
    msg = msg or getattr(exc, "message", None) or str(exc)
    return short(msg), (str(code) if code is not None else None)


def connection_reason(exc: BaseException) -> str:
    """A short reason for a connection failure, from the whole chain of causes."""
    chain: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in chain and len(chain) < 8:
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    text = " ".join(f"{type(e).__name__}: {e}" for e in chain).lower()
    for needles, reason in (
        (("refused",), "connection refused"),
        (_NOT_FOUND_HOST, "host name not found"),
        (("certificate", "ssl", "tls"), "TLS/SSL error"),
        (("peer closed", "server disconnected", "remoteprotocolerror"), "the server closed the connection"),
        (("reset",), "connection reset"),
        (("unreachable",), "network unreachable"),
    ):
        if any(n in text for n in needles):
            return reason
    return short(f"{type(chain[-1]).__name__}: {chain[-1]}", 120)


# --------------------------------------------------------------------------- other endings


def malformed(detail: str, ctx: ErrorContext) -> GenerationError:
    return ctx.error(
        "malformed",
        f"The LLM endpoint at {ctx.url} sent a reply the OpenAI client cannot parse "
        f"({short(detail, 160)}). Check that OPENAI_BASE_URL points at an OpenAI-compatible API "
        "(usually ending in /v1) and that RAGCORE_LLM_API matches it.",
        retryable=False,
    )


def cut(exc: BaseException, partial: str, ctx: ErrorContext) -> GenerationError:
    """The stream broke after ``partial`` reached the caller: never retried, text kept."""
    err = _classify(exc, ctx)
    kind: ErrorKind = "malformed" if err.kind == "malformed" else "stream_cut"
    n = len(partial)
    return ctx.error(
        kind,
        f"The answer stopped after {n} character{'s' if n != 1 else ''}: {_cut_reason(exc, err, ctx)}. "
        "The partial answer is kept; ask again for a complete one.",
        retryable=kind == "stream_cut",
        partial=partial,
        status_code=err.status_code,
    )


def _cut_reason(exc: BaseException, err: GenerationError, ctx: ErrorContext) -> str:
    if err.kind == "timeout":
        return f"the LLM endpoint at {ctx.url} sent nothing for {ctx.timeout_s:g} s"
    if err.kind == "connection":
        return f"the connection to the LLM endpoint at {ctx.url} broke ({connection_reason(exc)})"
    if err.kind == "malformed":
        return f"the LLM endpoint at {ctx.url} sent a chunk the OpenAI client cannot parse ({short(exc, 160)})"
    if isinstance(exc, EndedEarly):
        return f"the stream from {ctx.url} ended without a finish signal"
    msg = err.message.rstrip(".")
    return msg[0].lower() + msg[1:]


def deadline(partial: str, ctx: ErrorContext) -> GenerationError:
    got = f"after {len(partial)} characters; the partial answer is kept" if partial else "before any text"
    return ctx.error(
        "deadline",
        f"The answer from the LLM endpoint at {ctx.url} did not finish within the {ctx.deadline_s:g} s "
        f"deadline and was stopped ({got}). Raise RAGCORE_LLM_DEADLINE_S for longer answers, or use a "
        "faster server or model.",
        partial=partial,
    )


def too_long(partial: str, cap: int, ctx: ErrorContext) -> GenerationError:
    return ctx.error(
        "too_long",
        f"The reply from the LLM endpoint at {ctx.url} passed {cap:,} characters, the client-side limit for "
        f"max_output_tokens={ctx.max_output_tokens}, and was cut there (the server did not stop at the requested "
        "output budget). The partial answer is kept; check the server's max-tokens handling.",
        retryable=False,
        partial=partial,
    )


def cancelled(partial: str) -> GenerationError:
    return GenerationError("cancelled", "Generation was stopped.", retryable=True, partial=partial)


def empty(finish: str | None, ctx: ErrorContext) -> GenerationError:
    if finish == "length":
        msg = (
            f"The model used its whole output budget (max_output_tokens={ctx.max_output_tokens}) "
            "without writing an answer, as reasoning models can. Raise RAGCORE_LLM_MAX_OUTPUT_TOKENS."
        )
    elif finish == "content_filter":
        msg = "The provider's content filter blocked the answer. Rephrase the question."
    else:
        reason = f" (finish_reason: {finish})" if finish else ""
        msg = f"The model '{ctx.model}' returned an empty answer{reason}. Ask again, or try another model."
    return ctx.error("empty", msg, retryable=True)


def no_model() -> GenerationError:
    return GenerationError(
        "bad_request",
        "No LLM model is configured. Set RAGCORE_LLM_MODEL (and OPENAI_BASE_URL for a local "
        "server), or use the extractive composer.",
        retryable=False,
    )
