"""Stopping an answer in time: the caller's cancel event and the whole-answer deadline.

The SDK retries failed requests itself, sleeping between attempts in ``time.sleep``, and
reads a stream with a per-read timeout only: neither can be told "stop now". So:

* :func:`call_until` runs the SDK call in a helper thread and returns as soon as it is done,
  the caller cancels or the deadline passes. An abandoned call is not allowed to send any
  further request (a request hook refuses it), and its response, in flight or late, is closed.
* :class:`Watchdog` watches a streamed response and shuts its socket down when the caller
  cancels or the deadline passes, so that a read blocked on a silent server returns at once
  instead of after ``timeout_s``.

Either way the caller sees :class:`Stopped` and asks :meth:`Budget.reason` why.
"""

from __future__ import annotations

import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, TypeVar

T = TypeVar("T")
StopReason = Literal["cancelled", "deadline"]
_POLL_S = 0.05  # how often a wait looks at the cancel event (threading has no wait-for-any)
_local = threading.local()  # the _Call a helper thread is making, for the client's hooks


class Stopped(Exception):
    """The caller cancelled or the deadline passed (see :meth:`Budget.reason`)."""


@dataclass
class Budget:
    """One answer's limits: ``deadline_s`` from its start, and an optional cancel event."""

    deadline_s: float
    cancel: threading.Event | None = None
    started: float = field(default_factory=time.monotonic)

    def remaining(self) -> float:
        return self.deadline_s - (time.monotonic() - self.started)

    def reason(self) -> StopReason | None:
        if self.cancel is not None and self.cancel.is_set():
            return "cancelled"
        if self.remaining() <= 0:
            return "deadline"
        return None

    def check(self) -> None:
        if self.reason() is not None:
            raise Stopped()

    def wait(self, done: threading.Event) -> bool:
        """Wait until ``done`` is set (True) or the answer must stop (False)."""
        while self.reason() is None:
            step = self.remaining() if self.cancel is None else min(_POLL_S, self.remaining())
            if done.wait(max(0.0, step)):
                return True
        return done.is_set()


class _Call:
    """One SDK call made in a helper thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.abandoned = False
        self.response: Any = None  # the HTTP response in flight (set by the response hook)
        self.value: Any = None
        self.error: BaseException | None = None

    def abandon(self) -> None:
        with self.lock:
            self.abandoned = True
            late = self.value if self.done.is_set() else None
            response = self.response
        shutdown(response)
        close_quietly(late)


def call_until(fn: Callable[[], T], budget: Budget) -> T:
    """``fn()``, or :class:`Stopped` as soon as the budget says stop (the call is abandoned)."""
    budget.check()
    call = _Call()

    def work() -> None:
        _local.call = call
        try:
            value, error = fn(), None
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            value, error = None, exc
        with call.lock:
            call.value, call.error = value, error
            call.done.set()
            late = call.abandoned
        if late:
            close_quietly(value)

    threading.Thread(target=work, name="ragcore-llm-call", daemon=True).start()
    if not budget.wait(call.done):
        call.abandon()
        raise Stopped()
    if call.error is not None:
        raise call.error
    return call.value  # type: ignore[return-value]


def refuse_abandoned(request: Any) -> None:
    """httpx request hook: an abandoned call sends nothing more (the SDK would retry)."""
    call = getattr(_local, "call", None)
    if call is not None and call.abandoned:
        raise Stopped()


def remember_response(response: Any) -> None:
    """httpx response hook: lets an abandoned call shut its response's socket."""
    call = getattr(_local, "call", None)
    if call is not None:
        call.response = response


class Watchdog:
    """Shuts a streamed response's socket when the budget says stop (context manager)."""

    def __init__(self, response: Any, budget: Budget) -> None:
        self._response, self._budget = response, budget
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="ragcore-llm-watchdog", daemon=True)

    def _watch(self) -> None:
        if not self._budget.wait(self._stop):
            shutdown(self._response)

    def __enter__(self) -> "Watchdog":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()


def shutdown(response: Any) -> None:
    """Shut down the socket under an httpx response: a read blocked on it returns now.

    ``close()`` from another thread would not wake the reader; ``shutdown`` does.
    """
    try:
        sock = response.extensions["network_stream"].get_extra_info("socket")
        sock.shutdown(socket.SHUT_RDWR)
    except Exception:  # noqa: BLE001 - no response yet, another transport, already closed
        pass


def close_quietly(value: Any) -> None:
    close = getattr(value, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # noqa: BLE001 - closing an abandoned reply is best effort
            pass
