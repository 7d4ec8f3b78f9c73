"""What the SDK hands back, turned into answer text: stream events → text deltas, whole
replies → text, with every ``<think>…</think>`` block removed.

The SDK parses the wire format; this module only knows the two shapes of OpenAI's APIs
(Chat Completions chunks and Responses events), records whether the stream said it was
finished, and refuses shapes it does not know (:class:`Malformed`) instead of guessing.
Errors reported *inside* a stream become :class:`RemoteError`.
"""

from __future__ import annotations

from typing import Any

_SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError)


class Malformed(Exception):
    """A chunk or reply that does not have the OpenAI shape."""


class RemoteError(Exception):
    """An error reported inside a stream (Responses ``error`` / ``response.failed`` events)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


class EndedEarly(Exception):
    """The stream ended cleanly but without a finish signal."""


class ThinkFilter:
    """Drops every ``<think>…</think>`` block (reasoning models served by Ollama or llama.cpp
    put one first; some put more mid-answer) from text that arrives in pieces; a tag may be
    split across pieces. An unclosed block runs to the end and is dropped; whitespace at the
    start of the answer and right after a removed block is dropped with it."""

    OPEN, CLOSE = "<think>", "</think>"

    def __init__(self) -> None:
        self._buf = ""
        self._inside = False
        self._trim = True  # at the start, or right after a block: leading whitespace goes
        self._last = ""  # the last character given out (after a block, whitespace is kept once)

    def feed(self, s: str) -> str:
        self._buf += s
        out: list[str] = []
        while self._buf:
            tag = self.CLOSE if self._inside else self.OPEN
            at = self._buf.lower().find(tag)
            if at < 0:
                keep = _tag_prefix(self._buf, tag)  # a tag may be split across pieces
                if not self._inside:
                    out.append(self._text(self._buf[: len(self._buf) - keep]))
                self._buf = self._buf[len(self._buf) - keep :] if keep else ""
                break
            if not self._inside:
                out.append(self._text(self._buf[:at]))
            self._buf, self._inside = self._buf[at + len(tag) :], not self._inside
            self._trim = self._trim or not self._inside
        return "".join(out)

    def _text(self, s: str) -> str:
        if self._trim and (not self._last or self._last.isspace()):
            s = s.lstrip()
            self._trim = not s
        else:
            self._trim = False  # "word<think>…</think>\n\nNext": the model's own spacing stays
        if s:
            self._last = s[-1]
        return s

    def flush(self) -> str:
        out = "" if self._inside else self._text(self._buf)
        self._buf = ""
        return out


def _tag_prefix(text: str, tag: str) -> int:
    """Length of the longest end of ``text`` that is the start of ``tag`` (0: none)."""
    low = text[-(len(tag) - 1) :].lower()
    for n in range(min(len(low), len(tag) - 1), 0, -1):
        if tag.startswith(low[-n:]):
            return n
    return 0


def strip_think(text: str) -> str:
    """``text`` without its think blocks (for whole, non-streamed replies)."""
    f = ThinkFilter()
    return f.feed(text) + f.flush()


# --------------------------------------------------------------------------- streams


class StreamReader:
    """Feeds on the events of one streamed reply; returns the answer text in each."""

    def __init__(self, api: str) -> None:
        self._parse = _responses_event if api == "responses" else _chat_chunk
        self._think = ThinkFilter()
        self.finished = False
        self.finish_reason: str | None = None
        self.received = 0  # characters of text the server sent, think blocks included (the cap counts these)

    def feed(self, event: Any) -> str:
        try:
            text, finish = self._parse(event)
        except _SHAPE_ERRORS as err:
            raise Malformed(f"unexpected chunk shape: {type(err).__name__}") from None
        self.received += len(text)
        if finish:
            self.finished, self.finish_reason = True, finish
        return self._think.feed(text) if text else ""

    def flush(self) -> str:
        return self._think.flush()


def _chat_chunk(event: Any) -> tuple[str, str | None]:
    choices = event.choices
    if not isinstance(choices, list):
        raise Malformed("a chunk without a choices list")
    if not choices:
        return "", None  # e.g. the usage chunk
    choice = choices[0]
    finish = getattr(choice, "finish_reason", None)
    delta = getattr(choice, "delta", None)
    content = None if delta is None else getattr(delta, "content", None)
    if content is None and delta is not None:
        content = getattr(delta, "refusal", None)
    if content is not None and not isinstance(content, str):
        raise Malformed("a chunk whose delta content is not text")
    return content or "", str(finish) if finish else None


def _responses_event(event: Any) -> tuple[str, str | None]:
    kind = getattr(event, "type", None)
    if kind in ("response.output_text.delta", "response.refusal.delta"):
        if not isinstance(event.delta, str):
            raise Malformed(f"{kind} event without a text delta")
        return event.delta, None
    if kind == "response.completed":
        return "", "stop"
    if kind == "response.incomplete":
        reason = getattr(getattr(event.response, "incomplete_details", None), "reason", None)
        return "", "length" if reason == "max_output_tokens" else str(reason or "incomplete")
    if kind == "response.failed":
        err = getattr(event.response, "error", None)
        raise RemoteError(getattr(err, "message", None) or "the response failed", getattr(err, "code", None))
    if kind == "error":
        raise RemoteError(getattr(event, "message", None) or "error event", getattr(event, "code", None))
    if not isinstance(kind, str):
        raise Malformed("a stream event without a type")
    return "", None


# --------------------------------------------------------------------------- whole replies


def full_text(resp: Any, api: str) -> tuple[str, str | None]:
    """The answer text of a non-streamed reply (think block removed) and its finish reason."""
    try:
        text, finish = _responses_reply(resp) if api == "responses" else _chat_reply(resp)
    except _SHAPE_ERRORS as err:
        raise Malformed(f"unexpected reply shape: {type(err).__name__}") from None
    return strip_think(text), finish


def _chat_reply(resp: Any) -> tuple[str, str | None]:
    choices = resp.choices
    if not isinstance(choices, list) or not choices:
        raise Malformed("a completion without choices")
    msg = choices[0].message
    text = getattr(msg, "content", None) or getattr(msg, "refusal", None) or ""
    if not isinstance(text, str):
        raise Malformed("a completion whose content is not text")
    return text, getattr(choices[0], "finish_reason", None)


def _responses_reply(resp: Any) -> tuple[str, str | None]:
    status = getattr(resp, "status", None)
    if status == "failed":
        err = getattr(resp, "error", None)
        raise RemoteError(getattr(err, "message", None) or "the response failed", getattr(err, "code", None))
    if not isinstance(getattr(resp, "output", None), list):
        raise Malformed("a response without an output list")
    return resp.output_text or "", "length" if status == "incomplete" else "stop"
