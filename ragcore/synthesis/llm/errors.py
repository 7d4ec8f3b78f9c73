"""The one error type the LLM generator raises.

Every failure of an OpenAI-compatible endpoint ends as a :class:`GenerationError` whose
``message`` says what happened *and* what to do about it, in words fit for the app, the CLI
and the saved ``Answer.error_message``. The generator builds every message through
:func:`ragcore.settings.redact.redact_text`, so none carries the API key, a part of it, or the
``user:password@`` of the base URL.
"""

from __future__ import annotations

from typing import Any, Literal

ErrorKind = Literal[
    "connection",  # the endpoint could not be reached (refused, DNS, TLS, reset before a token)
    "timeout",  # no answer within timeout_s
    "deadline",  # the whole answer took longer than deadline_s: partial holds what came
    "auth",  # 401 / 403
    "rate_limit",  # 429
    "server",  # 5xx, or an error event inside the stream
    "stream_cut",  # the stream broke after some text had been streamed: partial holds it
    "malformed",  # a reply or SSE chunk the client could not parse
    "empty",  # the model answered with no text
    "bad_request",  # 400 / 404 / 422: wrong model name, wrong API, prompt too long ...
    "cancelled",  # the caller asked to stop
    "too_long",  # the reply passed the client-side cap derived from max_output_tokens: partial holds it
]

#: Kinds whose partial text is the answer (cut, with a note), not a reason to fall back.
KEEPS_PARTIAL: frozenset[str] = frozenset({"deadline", "too_long"})

#: Kinds where asking again later can succeed (the SDK itself retries some of them).
RETRYABLE_KINDS: frozenset[str] = frozenset(
    {"connection", "timeout", "deadline", "rate_limit", "server", "stream_cut", "empty"}
)


class GenerationError(Exception):
    """A failed LLM call.

    ``kind`` is machine-readable, ``message`` is for people (what happened + what to do),
    ``retryable`` tells whether asking again can help, ``partial`` holds the text that was
    streamed before the failure ("" if none). ``status_code`` is the HTTP status where there
    was one, ``attempts`` how many requests were made (the SDK's retries included).
    """

    def __init__(
        self,
        kind: ErrorKind,
        message: str,
        *,
        retryable: bool | None = None,
        partial: str = "",
        status_code: int | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.message: str = message
        self.retryable: bool = kind in RETRYABLE_KINDS if retryable is None else retryable
        self.partial: str = partial
        self.status_code: int | None = status_code
        self.attempts: int = attempts

    @property
    def partial_text(self) -> str:
        """The former name of :attr:`partial`, kept for callers written against it."""
        return self.partial

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return (
            f"GenerationError(kind={self.kind!r}, retryable={self.retryable}, "
            f"status_code={self.status_code}, attempts={self.attempts}, "
            f"partial_chars={len(self.partial)}, message={self.message!r})"
        )

    def __reduce__(self) -> Any:  # picklable despite the keyword-only arguments
        return (
            _rebuild,
            (self.kind, self.message, self.retryable, self.partial, self.status_code, self.attempts),
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly form for ``error`` events and saved answers."""
        return {
            "kind": self.kind,
            "message": self.message,
            "retryable": self.retryable,
            "partial": self.partial,
            "status_code": self.status_code,
            "attempts": self.attempts,
        }


def _rebuild(
    kind: ErrorKind,
    message: str,
    retryable: bool,
    partial: str,
    status_code: int | None,
    attempts: int,
) -> GenerationError:
    return GenerationError(
        kind, message, retryable=retryable, partial=partial, status_code=status_code, attempts=attempts
    )
