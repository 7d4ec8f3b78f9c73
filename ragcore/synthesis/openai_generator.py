"""Generation with any OpenAI-compatible endpoint: OpenAI itself, vLLM, llama.cpp, Ollama ...

:class:`OpenAIGenerator` streams an answer through the Chat Completions API
(``settings.api == "chat"``) or the Responses API (``"responses"``) with the official
``openai`` SDK, and turns every failure into a :class:`GenerationError` that says what
happened and what to do.

Retries are done here, not in the SDK (its ``max_retries`` is 0), so that ``Retry-After`` is
honoured (capped at :data:`RETRY_AFTER_CAP_S`), every attempt is logged and reported to an
optional ``on_attempt`` callback, and nothing is retried once text has reached the caller:

* retried: connection errors, timeouts, HTTP 408/409/429 and 5xx, a stream that ends before
  its first token, with exponential backoff (0.5 s, 1 s, 2 s … capped at 8 s) for
  ``settings.max_retries`` attempts after the first;
* a failure after text was streamed ends as ``kind="stream_cut"`` with ``partial_text``;
* 401/403 → ``auth``, 400/404/422 → ``bad_request``, an unparseable chunk → ``malformed``,
  no text at all → ``empty``.

Two 400s are answered by adapting instead of failing, once per generator: a model that
rejects ``max_tokens`` (OpenAI's reasoning models want ``max_completion_tokens``) and a model
that rejects ``temperature``. A leading ``<think>…</think>`` block (reasoning models served
by Ollama or llama.cpp) is removed from the streamed text.

Closing the generator returned by :meth:`OpenAIGenerator.stream` (``gen.close()``, or
dropping it) closes the HTTP response at once; a ``threading.Event`` passed as ``cancel``
stops it from another thread (``GenerationError(kind="cancelled")``). The API key is never
logged, printed or put in a message.
"""

from __future__ import annotations

import email.utils
import json
import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator
from urllib.parse import urlsplit, urlunsplit

from ..config import LlmSettings
from .errors import GenerationError

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
BACKOFF_BASE_S = 0.5
BACKOFF_MAX_S = 8.0
RETRY_AFTER_CAP_S = 10.0
CHECK_TIMEOUT_CAP_S = 10.0

_RETRY_KINDS = {"connection", "timeout", "rate_limit", "server"}


@dataclass(frozen=True)
class Attempt:
    """One request to the endpoint, as reported to ``on_attempt`` and the log."""

    number: int  # 1-based
    max_attempts: int
    ok: bool
    kind: str | None = None  # the GenerationError kind when it failed
    status_code: int | None = None
    wait_s: float | None = None  # the wait before the next attempt; None: no further attempt
    elapsed_ms: float = 0.0
    message: str = ""
    finish_reason: str | None = None


# --------------------------------------------------------------------------- internals


class _Malformed(Exception):
    """A chunk or reply that does not have the OpenAI shape."""


class _RemoteError(Exception):
    """An error reported inside a stream (Responses ``error`` / ``response.failed`` events)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class _EndedEarly(Exception):
    """The stream ended cleanly but without a finish signal."""


class _State:
    __slots__ = ("finished", "finish_reason")

    def __init__(self) -> None:
        self.finished = False
        self.finish_reason: str | None = None


class _ThinkFilter:
    """Drops a leading ``<think>…</think>`` block from streamed text."""

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self._buf = ""
        self._mode = "start"  # start → think → text

    def feed(self, s: str) -> str:
        if self._mode == "text":
            return s
        self._buf += s
        if self._mode == "start":
            head = self._buf.lstrip()
            if head.startswith(self.OPEN):
                self._mode, self._buf = "think", head[len(self.OPEN):]
            elif self.OPEN.startswith(head):
                return ""  # could still become "<think>": wait for more
            else:
                out, self._buf, self._mode = self._buf, "", "text"
                return out
        if self._mode == "think":
            end = self._buf.find(self.CLOSE)
            if end < 0:
                self._buf = self._buf[-len(self.CLOSE):]  # keep only what may hold a split tag
                return ""
            out, self._buf, self._mode = self._buf[end + len(self.CLOSE):].lstrip(), "", "text"
            return out
        return ""

    def flush(self) -> str:
        out = self._buf if self._mode == "start" else ""
        self._buf = ""
        return out


_SK = re.compile(r"\b(sk-[A-Za-z0-9_\-*.]{4,})")
_BEARER = re.compile(r"(?i)(bearer\s+)\S+")


def _display_url(url: str) -> str:
    """The URL without user:password@ (never shown)."""
    try:
        p = urlsplit(url)
    except ValueError:
        return url
    if p.username or p.password:
        host = p.hostname or ""
        if p.port:
            host += f":{p.port}"
        return urlunsplit((p.scheme, host, p.path, p.query, p.fragment))
    return url


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --------------------------------------------------------------------------- the generator


class OpenAIGenerator:
    """Answers with an OpenAI-compatible endpoint; see the module docstring."""

    def __init__(
        self,
        settings: LlmSettings,
        *,
        http_client: "httpx.Client | None" = None,
        on_attempt: Callable[[Attempt], None] | None = None,
    ) -> None:
        self.settings = settings
        self._http_client = http_client
        self._on_attempt = on_attempt
        self._client: Any = None
        self._lock = threading.Lock()
        self._max_tokens_param = "max_tokens"  # switched once if the model rejects it
        self._send_temperature = True  # dropped once if the model rejects it
        self.base_url = (settings.base_url or DEFAULT_BASE_URL).rstrip("/")

    # -- identity
    @property
    def name(self) -> str:
        api = "responses" if self.settings.api == "responses" else "chat"
        return f"openai-{api}:{self.settings.model or '(no model)'}"

    @property
    def display_url(self) -> str:
        return _display_url(self.base_url)

    def __repr__(self) -> str:
        key = "set" if self.settings.api_key else "unset"
        return f"OpenAIGenerator(name={self.name!r}, base_url={self.display_url!r}, api_key={key})"

    # -- client
    def _get_client(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    import openai

                    self._client = openai.OpenAI(
                        base_url=self.base_url,
                        api_key=self.settings.api_key or "not-needed",
                        timeout=self.settings.timeout_s,
                        max_retries=0,
                        http_client=self._http_client,
                    )
        return self._client

    def close(self) -> None:
        """Release the connection pool (not a caller's own ``http_client``)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None and self._http_client is None:
            client.close()

    def __enter__(self) -> "OpenAIGenerator":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- requests
    def _require_model(self) -> None:
        if not self.settings.model:
            raise GenerationError(
                "bad_request",
                "No LLM model is configured. Set RAGCORE_LLM_MODEL (and OPENAI_BASE_URL for a local "
                "server), or use the extractive composer.",
                retryable=False,
            )

    def _request(
        self, messages: list[dict], *, stream: bool, max_tokens: int | None = None, client: Any = None
    ) -> Any:
        client = client or self._get_client()
        s = self.settings
        limit = s.max_output_tokens if max_tokens is None else max_tokens
        if s.api == "responses":
            instructions = "\n\n".join(
                str(m.get("content") or "") for m in messages if m.get("role") in ("system", "developer")
            )
            items = [
                {"role": m["role"], "content": m.get("content") or ""}
                for m in messages
                if m.get("role") not in ("system", "developer")
            ]
            kwargs: dict[str, Any] = {"model": s.model, "input": items, "max_output_tokens": limit, "store": False}
            if instructions:
                kwargs["instructions"] = instructions
            if self._send_temperature:
                kwargs["temperature"] = s.temperature
            return client.responses.create(stream=stream, **kwargs)
        kwargs = {"model": s.model, "messages": messages, self._max_tokens_param: limit}
        if self._send_temperature:
            kwargs["temperature"] = s.temperature
        return client.chat.completions.create(stream=stream, **kwargs)

    # -- parsing
    def _delta(self, event: Any, state: _State) -> str:
        """The text in one stream event; records the finish signal in ``state``."""
        try:
            if self.settings.api == "responses":
                kind = getattr(event, "type", None)
                if kind in ("response.output_text.delta", "response.refusal.delta"):
                    delta = event.delta
                    if not isinstance(delta, str):
                        raise _Malformed(f"{kind} event without a text delta")
                    return delta
                if kind == "response.completed":
                    state.finished, state.finish_reason = True, "stop"
                elif kind == "response.incomplete":
                    details = getattr(event.response, "incomplete_details", None)
                    reason = getattr(details, "reason", None) or "incomplete"
                    state.finished = True
                    state.finish_reason = "length" if reason == "max_output_tokens" else str(reason)
                elif kind == "response.failed":
                    err = getattr(event.response, "error", None)
                    raise _RemoteError(
                        getattr(err, "message", None) or "the response failed", getattr(err, "code", None)
                    )
                elif kind == "error":
                    raise _RemoteError(getattr(event, "message", None) or "error event", getattr(event, "code", None))
                elif not isinstance(kind, str):
                    raise _Malformed("a stream event without a type")
                return ""
            choices = event.choices
            if not isinstance(choices, list):
                raise _Malformed("a chunk without a choices list")
            if not choices:
                return ""  # e.g. the usage chunk
            choice = choices[0]
            finish = getattr(choice, "finish_reason", None)
            if finish:
                state.finished, state.finish_reason = True, str(finish)
            delta = getattr(choice, "delta", None)
            if delta is None:
                return ""
            content = getattr(delta, "content", None)
            if content is None:
                content = getattr(delta, "refusal", None)
            if content is not None and not isinstance(content, str):
                raise _Malformed("a chunk whose delta content is not text")
            return content or ""
        except (AttributeError, TypeError, KeyError, IndexError) as err:
            raise _Malformed(f"unexpected chunk shape: {type(err).__name__}") from None

    def _full_text(self, resp: Any) -> tuple[str, str | None]:
        try:
            if self.settings.api == "responses":
                status = getattr(resp, "status", None)
                if status == "failed":
                    err = getattr(resp, "error", None)
                    raise _RemoteError(getattr(err, "message", None) or "the response failed", getattr(err, "code", None))
                if not isinstance(getattr(resp, "output", None), list):
                    raise _Malformed("a response without an output list")
                text = resp.output_text
                finish = "length" if status == "incomplete" else "stop"
                return text or "", finish
            choices = resp.choices
            if not isinstance(choices, list) or not choices:
                raise _Malformed("a completion without choices")
            msg = choices[0].message
            text = getattr(msg, "content", None) or getattr(msg, "refusal", None) or ""
            if not isinstance(text, str):
                raise _Malformed("a completion whose content is not text")
            return text, getattr(choices[0], "finish_reason", None)
        except (AttributeError, TypeError, KeyError, IndexError) as err:
            raise _Malformed(f"unexpected reply shape: {type(err).__name__}") from None

    # -- errors
    def _redact(self, text: str) -> str:
        key = self.settings.api_key
        if key and len(key) >= 4:
            text = text.replace(key, "***")
        text = _SK.sub("sk-***", text)
        return _BEARER.sub(r"\1***", text)

    def _server_detail(self, exc: Any) -> tuple[str, str | None]:
        """The (redacted, shortened) error message and code from an error body."""
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
            response = getattr(exc, "response", None)
            try:
                msg = response.text if response is not None else None
            except Exception:  # noqa: BLE001 - an unread stream
                msg = None
        if not msg:
            msg = getattr(exc, "message", None) or str(exc)
        return self._redact(_short(str(msg))), (str(code) if code is not None else None)

    @staticmethod
    def _retry_after(exc: Any) -> float | None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        if headers is None:
            return None
        raw_ms = headers.get("retry-after-ms")
        if raw_ms:
            try:
                return max(0.0, float(raw_ms) / 1000.0)
            except ValueError:
                pass
        raw = headers.get("retry-after")
        if not raw:
            return None
        try:
            return max(0.0, float(raw))
        except ValueError:
            pass
        try:
            when = email.utils.parsedate_to_datetime(raw)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())

    @staticmethod
    def _connection_reason(exc: BaseException) -> str:
        chain: list[BaseException] = []
        cur: BaseException | None = exc
        while cur is not None and cur not in chain and len(chain) < 8:
            chain.append(cur)
            cur = cur.__cause__ or cur.__context__
        text = " ".join(f"{type(e).__name__}: {e}" for e in chain).lower()
        if "refused" in text:
            return "connection refused"
        if any(s in text for s in ("name or service not known", "nodename nor servname", "getaddrinfo", "name resolution", "no address associated")):
            return "host name not found"
        if "certificate" in text or "ssl" in text or "tls" in text:
            return "TLS/SSL error"
        if "peer closed" in text or "server disconnected" in text or "remoteprotocolerror" in text:
            return "the server closed the connection"
        if "reset" in text:
            return "connection reset"
        if "unreachable" in text:
            return "network unreachable"
        return _short(f"{type(chain[-1]).__name__}: {chain[-1]}", 120)

    def _classify(self, exc: BaseException) -> tuple[GenerationError, float | None]:
        """A GenerationError for ``exc`` (no partial text yet) and the server's Retry-After."""
        import openai

        url, s = self.display_url, self.settings
        model = s.model or ""
        if isinstance(exc, GenerationError):
            return exc, None
        if isinstance(exc, openai.APITimeoutError):
            return GenerationError(
                "timeout",
                f"The LLM endpoint at {url} did not answer within {s.timeout_s:g} s. Check that the "
                "server is running and not overloaded, or raise RAGCORE_LLM_TIMEOUT_S.",
            ), None
        if isinstance(exc, openai.APIConnectionError):
            reason = self._redact(self._connection_reason(exc))
            return GenerationError(
                "connection",
                f"Could not reach the LLM endpoint at {url} ({reason}). Check that the server is "
                "running and OPENAI_BASE_URL is right.",
            ), None
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail, code = self._server_detail(exc)
            if status in (401, 403):
                if not s.api_key:
                    msg = (
                        f"The LLM endpoint at {url} requires an API key (HTTP {status}: {detail}) and none "
                        "is set. Set OPENAI_API_KEY (or OPENAI_API_KEY in .streamlit/secrets.toml)."
                    )
                elif status == 401:
                    msg = f"The LLM endpoint at {url} rejected the API key (HTTP 401: {detail}). Check OPENAI_API_KEY."
                else:
                    msg = (
                        f"The LLM endpoint at {url} refused access (HTTP 403: {detail}). Check OPENAI_API_KEY "
                        f"and that the key may use model '{model}'."
                    )
                return GenerationError("auth", msg, retryable=False, status_code=status), None
            if status == 429:
                low = f"{detail} {code or ''}".lower()
                if "insufficient_quota" in low or "quota" in low or "billing" in low:
                    return GenerationError(
                        "rate_limit",
                        f"The LLM endpoint at {url} says the account's quota is used up (HTTP 429: {detail}). "
                        "Check the plan and billing of the account behind OPENAI_API_KEY.",
                        retryable=False,
                        status_code=429,
                    ), None
                return GenerationError(
                    "rate_limit",
                    f"The LLM endpoint at {url} is rate limiting requests (HTTP 429: {detail}). Wait a "
                    "little and ask again, or lower the request rate.",
                    status_code=429,
                ), self._retry_after(exc)
            if status == 408:
                return GenerationError(
                    "timeout",
                    f"The LLM endpoint at {url} timed out the request (HTTP 408: {detail}). Try again, or "
                    "raise RAGCORE_LLM_TIMEOUT_S.",
                    status_code=408,
                ), self._retry_after(exc)
            if status >= 500 or status == 409:
                return GenerationError(
                    "server",
                    f"The LLM endpoint at {url} had a server error (HTTP {status}: {detail}). Check that the "
                    "server and its model are up (see its logs), then try again.",
                    status_code=status,
                ), self._retry_after(exc)
            low = f"{detail} {code or ''}".lower()
            if status == 404:
                hint = f"Check RAGCORE_LLM_MODEL (now '{model}'): the model name must be one the server serves"
                if s.api == "responses":
                    hint += "; and that the server has the Responses API (else set RAGCORE_LLM_API=chat)"
                hint += "; and that OPENAI_BASE_URL includes the API prefix, usually /v1."
                msg = f"The LLM endpoint at {url} answered 404 Not Found ({detail}). {hint}"
            elif "context_length" in low or "context length" in low or "maximum context" in low or "too many tokens" in low or "prompt is too long" in low:
                msg = (
                    f"The prompt is longer than the model's context window (HTTP {status}: {detail}). Set "
                    "RAGCORE_LLM_CONTEXT_WINDOW to the model's real window, or lower top_k."
                )
            else:
                msg = (
                    f"The LLM endpoint at {url} rejected the request (HTTP {status}: {detail}). Check "
                    f"RAGCORE_LLM_MODEL (now '{model}') and the model's settings (RAGCORE_LLM_API, "
                    "temperature, max_output_tokens)."
                )
            return GenerationError("bad_request", msg, retryable=False, status_code=status), None
        if isinstance(exc, openai.APIResponseValidationError):
            return self._malformed(str(exc)), None
        if isinstance(exc, (_Malformed, json.JSONDecodeError)):
            return self._malformed(str(exc)), None
        if isinstance(exc, _RemoteError):
            code = (exc.code or "").lower()
            kind = "rate_limit" if "rate_limit" in code else "server"
            return GenerationError(
                kind,
                f"The LLM endpoint at {url} reported an error during generation: "
                f"{self._redact(_short(str(exc)))}. Try again; if it keeps happening, check the server's logs.",
            ), None
        if isinstance(exc, openai.APIError):  # an error object inside the stream data
            detail, code = self._server_detail(exc)
            kind = "rate_limit" if "rate_limit" in (code or "") else "server"
            return GenerationError(
                kind,
                f"The LLM endpoint at {url} reported an error during generation: {detail}. Try again; "
                "if it keeps happening, check the server's logs.",
            ), None
        if isinstance(exc, _EndedEarly):
            return GenerationError(
                "stream_cut",
                f"The LLM stream from {url} ended without a finish signal before any text. Try again.",
            ), None
        raise exc  # a bug here, not an endpoint failure: let it surface

    def _malformed(self, detail: str) -> GenerationError:
        return GenerationError(
            "malformed",
            f"The LLM endpoint at {self.display_url} sent a reply the OpenAI client cannot parse "
            f"({self._redact(_short(detail, 160))}). Check that OPENAI_BASE_URL points at an "
            "OpenAI-compatible API (usually ending in /v1) and that RAGCORE_LLM_API matches it.",
            retryable=False,
        )

    def _adapt(self, exc: BaseException, err: GenerationError) -> bool:
        """Change a rejected parameter for a 400 that names it; True if a retry makes sense."""
        if err.kind != "bad_request" or err.status_code != 400:
            return False
        detail, code = self._server_detail(exc)  # the server's words only, not our hints
        low = f"{detail} {code or ''}".lower()
        if "max_tokens" in low and self._max_tokens_param == "max_tokens" and self.settings.api == "chat":
            if "max_completion_tokens" in low or "unsupported" in low or "not supported" in low:
                log.info("the model rejects max_tokens; using max_completion_tokens")
                self._max_tokens_param = "max_completion_tokens"
                return True
        if "temperature" in low and self._send_temperature:
            if "unsupported" in low or "not supported" in low or "does not support" in low:
                log.info("the model rejects temperature; sending none")
                self._send_temperature = False
                return True
        return False

    # -- retry bookkeeping
    def _report(self, attempt: Attempt) -> None:
        if attempt.ok:
            if attempt.number > 1:
                log.info("LLM call succeeded on attempt %d/%d", attempt.number, attempt.max_attempts)
        elif attempt.wait_s is not None:
            log.warning(
                "LLM attempt %d/%d failed (%s); retrying in %.2f s",
                attempt.number,
                attempt.max_attempts,
                attempt.kind,
                attempt.wait_s,
            )
        else:
            log.warning("LLM attempt %d/%d failed (%s): %s", attempt.number, attempt.max_attempts, attempt.kind, attempt.message)
        if self._on_attempt is not None:
            try:
                self._on_attempt(attempt)
            except Exception:  # noqa: BLE001 - an observer must not break generation
                log.exception("on_attempt callback failed")

    def _after_failure(
        self,
        exc: BaseException,
        *,
        number: int,
        retries_used: int,
        started: float,
        partial: str,
        cancel: threading.Event | None,
    ) -> bool:
        """Raise the final GenerationError, or wait and return True to retry.

        Returns False when a parameter was adapted (retry at once, not counted as a retry).
        """
        err, retry_after = self._classify(exc)
        max_attempts = 1 + max(0, self.settings.max_retries)
        elapsed = (time.monotonic() - started) * 1000
        if partial:
            kind = "malformed" if err.kind == "malformed" else "stream_cut"
            final = GenerationError(
                kind,
                f"The answer stopped after {len(partial)} character{'s' if len(partial) != 1 else ''}: "
                f"{self._cut_reason(err, exc)}. The partial answer is kept; ask again for a complete one.",
                retryable=kind == "stream_cut",
                partial_text=partial,
                status_code=err.status_code,
                attempts=number,
            )
            self._report(Attempt(number, max_attempts, False, kind, err.status_code, None, elapsed, final.message))
            raise final from None
        if self._adapt(exc, err):
            self._report(Attempt(number, max_attempts, False, err.kind, err.status_code, 0.0, elapsed, err.message))
            return False
        retryable = err.retryable and (err.kind in _RETRY_KINDS or err.kind == "stream_cut")
        if retryable and retries_used < self.settings.max_retries:
            if retry_after is not None:
                wait = min(retry_after, RETRY_AFTER_CAP_S)
            else:
                wait = min(BACKOFF_BASE_S * (2**retries_used), BACKOFF_MAX_S)
            self._report(Attempt(number, max_attempts, False, err.kind, err.status_code, wait, elapsed, err.message))
            if cancel is not None:
                if cancel.wait(wait):
                    raise self._cancelled("", number)
            else:
                time.sleep(wait)
            return True
        message = err.message
        if number > 1:
            message = f"{message} (Gave up after {number} attempts.)"
        final = GenerationError(
            err.kind, message, retryable=err.retryable, status_code=err.status_code, attempts=number
        )
        self._report(Attempt(number, max_attempts, False, err.kind, err.status_code, None, elapsed, message))
        raise final from None

    def _cut_reason(self, err: GenerationError, exc: BaseException) -> str:
        url = self.display_url
        if err.kind == "timeout":
            return f"the LLM endpoint at {url} sent nothing for {self.settings.timeout_s:g} s"
        if err.kind == "connection":
            return f"the connection to the LLM endpoint at {url} broke ({self._redact(self._connection_reason(exc))})"
        if err.kind == "malformed":
            return f"the LLM endpoint at {url} sent a chunk the OpenAI client cannot parse ({self._redact(_short(str(exc), 160))})"
        if isinstance(exc, _EndedEarly):
            return f"the stream from {url} ended without a finish signal"
        msg = err.message.rstrip(".")
        return msg[0].lower() + msg[1:]

    @staticmethod
    def _cancelled(partial: str, number: int) -> GenerationError:
        return GenerationError(
            "cancelled", "Generation was stopped.", retryable=True, partial_text=partial, attempts=number
        )

    def _empty(self, finish: str | None, number: int) -> GenerationError:
        if finish == "length":
            msg = (
                f"The model used its whole output budget (max_output_tokens={self.settings.max_output_tokens}) "
                "without writing an answer, as reasoning models can. Raise RAGCORE_LLM_MAX_OUTPUT_TOKENS."
            )
        elif finish == "content_filter":
            msg = "The provider's content filter blocked the answer. Rephrase the question."
        else:
            msg = (
                f"The model '{self.settings.model}' returned an empty answer"
                + (f" (finish_reason: {finish})" if finish else "")
                + ". Ask again, or try another model."
            )
        return GenerationError("empty", msg, retryable=True, attempts=number)

    # -- public API
    def stream(
        self,
        messages: list[dict],
        *,
        cancel: threading.Event | None = None,
    ) -> Iterator[str]:
        """Yield text deltas of the answer. Raises :class:`GenerationError`.

        Close the generator to stop: the HTTP response is closed at once.
        """
        self._require_model()
        max_attempts = 1 + max(0, self.settings.max_retries)
        sent: list[str] = []
        number = retries_used = 0
        while True:
            number += 1
            started = time.monotonic()
            state = _State()
            think = _ThinkFilter()
            try:
                with self._request(messages, stream=True) as sdk_stream:
                    for event in sdk_stream:
                        text = think.feed(self._delta(event, state))
                        if text:
                            sent.append(text)
                            yield text
                        if cancel is not None and cancel.is_set():
                            raise self._cancelled("".join(sent), number)
                tail = think.flush()
                if tail:
                    sent.append(tail)
                    yield tail
                if not state.finished:
                    raise _EndedEarly()
            except GenerationError:
                raise
            except Exception as exc:  # noqa: BLE001 - classified below; unknown ones re-raised
                retry = self._after_failure(
                    exc,
                    number=number,
                    retries_used=retries_used,
                    started=started,
                    partial="".join(sent),
                    cancel=cancel,
                )
                retries_used += int(retry)
                continue
            elapsed = (time.monotonic() - started) * 1000
            if not "".join(sent).strip():
                err = self._empty(state.finish_reason, number)
                self._report(Attempt(number, max_attempts, False, "empty", None, None, elapsed, err.message, state.finish_reason))
                raise err
            self._report(Attempt(number, max_attempts, True, None, None, None, elapsed, "ok", state.finish_reason))
            return

    def complete(self, messages: list[dict], *, cancel: threading.Event | None = None) -> str:
        """The whole answer in one non-streaming request. Raises :class:`GenerationError`."""
        self._require_model()
        max_attempts = 1 + max(0, self.settings.max_retries)
        number = retries_used = 0
        while True:
            number += 1
            started = time.monotonic()
            if cancel is not None and cancel.is_set():
                raise self._cancelled("", number)
            try:
                raw, finish = self._full_text(self._request(messages, stream=False))
            except GenerationError:
                raise
            except Exception as exc:  # noqa: BLE001
                retry = self._after_failure(
                    exc, number=number, retries_used=retries_used, started=started, partial="", cancel=cancel
                )
                retries_used += int(retry)
                continue
            think = _ThinkFilter()
            text = think.feed(raw) + think.flush()
            elapsed = (time.monotonic() - started) * 1000
            if not text.strip():
                err = self._empty(finish, number)
                self._report(Attempt(number, max_attempts, False, "empty", None, None, elapsed, err.message, finish))
                raise err
            self._report(Attempt(number, max_attempts, True, None, None, None, elapsed, "ok", finish))
            return text

    def check_connection(self) -> tuple[bool, str]:
        """Is the endpoint reachable, is the key accepted, is the model served?

        Lists the models; when the list does not name the model (or the server has no
        model list) it asks for a few tokens instead. One attempt, no retries.
        """
        if not self.settings.model:
            return False, (
                "No LLM is configured: set RAGCORE_LLM_MODEL (and OPENAI_BASE_URL for a local server). "
                "The extractive composer answers without one."
            )
        import openai

        url, model = self.display_url, self.settings.model
        timeout = min(self.settings.timeout_s, CHECK_TIMEOUT_CAP_S)
        listed: list[str] | None = None
        try:
            page = self._get_client().models.list(timeout=timeout)
            listed = [str(getattr(m, "id", "")) for m in getattr(page, "data", []) or []]
        except openai.APIStatusError as exc:
            if exc.status_code not in (404, 405, 501):
                err, _ = self._classify(exc)
                return False, err.message
        except Exception as exc:  # noqa: BLE001
            try:
                err, _ = self._classify(exc)
            except Exception:  # noqa: BLE001
                return False, f"Could not check the LLM endpoint at {url} ({type(exc).__name__})."
            return False, err.message
        if listed is not None and model in listed:
            return True, f"Connected to {url}; model '{model}' is available ({len(listed)} model(s) listed)."
        try:
            probe = self._probe(timeout)
        except GenerationError as err:
            if listed:
                names = ", ".join(listed[:5]) + (" …" if len(listed) > 5 else "")
                return False, f"{err.message} The server lists: {names}."
            return False, err.message
        if listed is None:
            return True, f"Connected to {url}; model '{model}' answered ({probe}; the server has no model list)."
        return True, f"Connected to {url}; model '{model}' answered ({probe}), though the server does not list it."

    def _probe(self, timeout: float) -> str:
        messages = [{"role": "user", "content": "Reply with the word OK."}]
        for _ in range(3):  # room for the two parameter adaptations
            try:
                client = self._get_client().with_options(timeout=timeout)
                resp = self._request(messages, stream=False, max_tokens=16, client=client)
                text, _ = self._full_text(resp)
                return "a test completion worked" if text.strip() else "a test completion came back empty"
            except Exception as exc:  # noqa: BLE001
                err, _ = self._classify(exc)
                if self._adapt(exc, err):
                    continue
                raise err from None
        raise GenerationError("bad_request", f"The LLM endpoint at {self.display_url} rejected a test completion.")
