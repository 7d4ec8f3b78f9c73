"""Limits: request body size, concurrent questions (429 + Retry-After beyond a bounded queue),
and the access log that names neither keys nor document text."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ragcore.service.errors import ApiError, error_response
from ragcore.service.pool import DaemonPool

access_log = logging.getLogger("ragcore.service.access")


class BodyLimit:
    """Refuse a body over its limit with 413: at once when Content-Length says so, else as soon
    as the bytes received pass it (a chunked upload cannot stream past the limit). Uploads
    (paths ending in ``/ingest``) have their own, larger, limit."""

    def __init__(self, app: ASGIApp, max_body: int, max_upload: int) -> None:
        self.app, self.max_body, self.max_upload = app, max_body, max_upload

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_upload if scope["path"].rstrip("/").endswith("/ingest") else self.max_body
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _too_large(limit)(scope, receive, send)
            return
        seen = 0
        over = started = False

        async def counted() -> Message:
            nonlocal seen, over
            if over:
                return {"type": "http.disconnect"}
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > limit:  # the app sees a client gone; its reply is replaced by the 413 below
                    over = True
                    return {"type": "http.disconnect"}
            return msg

        async def watched(msg: Message) -> None:
            nonlocal started
            if over and not started:
                return
            started = started or msg["type"] == "http.response.start"
            await send(msg)

        try:
            await self.app(scope, counted, watched)
        except Exception:
            if not over:
                raise
        if over and not started:
            await _too_large(limit)(scope, receive, send)


def _too_large(limit: int):
    return error_response(413, f"The request body is larger than this service accepts ({limit} bytes).")


class AccessLog:
    """One line per request: method, path (no query string), status, milliseconds. Never a
    header, a query string or a body, so neither keys nor document text reach the log."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        t0 = time.perf_counter()
        status = 0

        async def watched(msg: Message) -> None:
            nonlocal status
            if msg["type"] == "http.response.start":
                status = msg["status"]
            elif msg["type"] == "websocket.accept":
                status = 101
            elif msg["type"] == "websocket.close" and not status:
                status = 403
            await send(msg)

        try:
            await self.app(scope, receive, watched)
        finally:
            method = scope.get("method", "WS")
            access_log.info("%s %s %s %.0f ms", method, scope["path"], status or "-", (time.perf_counter() - t0) * 1e3)


class NoQueryStrings(logging.Filter):
    """Cuts the query string off every path in uvicorn's log lines: its WebSocket lines
    (``"WebSocket /api/ws?key=…" [accepted]``) print it, and a client may put a key there."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple) and any(isinstance(a, str) and "?" in a for a in record.args):
            record.args = tuple(a.split("?", 1)[0] if isinstance(a, str) and a.startswith("/") else a for a in record.args)
        if isinstance(record.msg, str) and "?" in record.msg and not record.args:
            record.msg = _QUERY.sub("", record.msg)
        return True


_QUERY = re.compile(r"(?<=[\w/])\?[^\s\"']*")
SERVER_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access")


def keep_query_strings_out_of_logs() -> None:
    """Put :class:`NoQueryStrings` on uvicorn's loggers (once), whatever logging config it runs with."""
    for name in SERVER_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, NoQueryStrings) for f in logger.filters):
            logger.addFilter(NoQueryStrings())


@dataclass
class Slots:
    """At most ``running`` questions at once and ``queued`` waiting; one more gets 429 with
    Retry-After. Used from the event loop only (a worker thread releases through
    ``loop.call_soon_threadsafe``), so plain counters are safe."""

    running: int
    queued: int
    retry_after_s: int
    taken: int = 0  # running + waiting
    _sem: asyncio.Semaphore | None = field(default=None, repr=False)
    _pool: DaemonPool | None = field(default=None, repr=False)

    def executor(self) -> DaemonPool:
        """Threads for questions and blocking calls (retrievals): one per slot, so a slot never
        waits for a thread (each task holds its slot until it ends); daemons (pool.py)."""
        if self._pool is None:
            self._pool = DaemonPool(self.running)
        return self._pool

    def close(self) -> None:
        """At shutdown: the threads end after their current task (a stuck one ends with the process)."""
        if self._pool is not None:
            self._pool.shutdown()

    def _semaphore(self) -> asyncio.Semaphore:
        if self._sem is None:
            self._sem = asyncio.Semaphore(self.running)
        return self._sem

    def busy(self) -> ApiError:
        return ApiError(429, f"The service is busy ({self.running} questions running, {self.queued} waiting); "
                             f"retry after {self.retry_after_s} s.", headers={"Retry-After": str(self.retry_after_s)})

    async def acquire(self, timeout_s: float) -> "Slot":
        if self.taken >= self.running + self.queued:
            raise self.busy()
        self.taken += 1
        sem = self._semaphore()
        if not sem.locked():  # a free slot: taken at once (wait_for would start a task for it)
            await sem.acquire()
            return Slot(self)
        try:
            await asyncio.wait_for(sem.acquire(), timeout_s)
        except (asyncio.TimeoutError, asyncio.CancelledError) as exc:
            self.taken -= 1
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise self.busy() from None
        return Slot(self)


class Slot:
    def __init__(self, slots: Slots) -> None:
        self._slots: Slots | None = slots

    def release(self) -> None:
        """Idempotent: the worker thread's end releases it, whichever path got there first."""
        if self._slots is not None:
            slots, self._slots = self._slots, None
            slots.taken -= 1
            slots._semaphore().release()
