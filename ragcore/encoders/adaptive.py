"""Requests sized to the server: additive increase, multiplicative decrease (AIMD) on the size of
an embedding request (estimated tokens) and on the number of requests in flight.

A CPU server (llama.cpp, Ollama on a laptop) works through requests one after another: sent 64
texts at a time, 4 requests at once, each with 60 s, the later ones time out while they wait and
their retries send the same oversized requests again. So requests start small and grow while
the server's latency per token stays flat (it is keeping up); when latency per token climbs, the
server is queueing and one request fewer is kept in flight; a timeout, 429 or 503 halves both.
Each request's timeout follows its size and the work already in flight ahead of it (ten times
what it should take, never under ``TIMEOUT_FLOOR_S``), and the request size stays where its expected
time fits well inside the timeout. The settings (``RAGCORE_EMBED_REQUEST_SIZE``, ``RAGCORE_EMBED_CONCURRENCY``,
``RAGCORE_EMBED_TIMEOUT_S``) are ceilings.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator

CHARS_PER_TOKEN = 4  # no tokenizer of the server's model is at hand: English runs ~4 characters a token
START_TOKENS = 512  # the first requests: about one chunk
STEP_TOKENS = 512  # added after each request whose latency stayed flat
MAX_TOKENS = 16_384  # servers cap a request's batch (llama.cpp's n_batch, TEI's max-batch-tokens)
START_IN_FLIGHT = 2  # one being computed, one on its way: a sequential server never idles
FLAT = 1.5  # seconds per token within 1.5x the best seen: the server keeps up
SLOW = 2.5  # beyond 2.5x: requests wait in the server's queue
TIMEOUT_FACTOR = 10.0
TIMEOUT_FLOOR_S = 10.0
FIT = 4.0  # a request's expected time stays under timeout / FIT


def tokens_of(text: str) -> int:
    return max(1, math.ceil(len(text) / CHARS_PER_TOKEN))


@dataclass(frozen=True)
class Sustained:
    """What an endpoint sustained over a stretch of work (an ingest)."""

    texts: int
    tokens: int
    seconds: float  # from the first request sent to the last answer
    texts_per_s: float
    tokens_per_s: float
    request_texts: int  # the request size reached (texts, estimated tokens) and requests in flight
    request_tokens: int
    in_flight: int
    shrinks: int  # timeouts / 429 / 503 that halved the size and the requests in flight
    median_latency_s: float

    def describe(self) -> str:
        return (f"{self.texts_per_s:.1f} texts/s, {self.tokens_per_s:,.0f} tokens/s (est.), requests of up to "
                f"{self.request_texts} texts / ~{self.request_tokens:,} tokens, {self.in_flight} in flight, "
                f"median {self.median_latency_s:.2f} s per request" + (f", {self.shrinks} back-off(s)" if self.shrinks else ""))


class Aimd:
    """The request size and the requests in flight for one endpoint (shared by every caller)."""

    def __init__(self, *, max_texts: int, max_in_flight: int, timeout_s: float) -> None:
        self.max_texts, self.max_in_flight, self.timeout_ceiling = max(1, max_texts), max(1, max_in_flight), timeout_s
        self.size = START_TOKENS
        self.in_flight = min(START_IN_FLIGHT, self.max_in_flight)
        self.best: float | None = None  # seconds per token of the fastest request seen
        self.active = 0
        self.active_tokens = 0  # of the requests now at the server: a request sent now waits for them
        self._shrunk: deque[float] = deque(maxlen=10_000)  # when each halving happened
        self._flat = 0
        self._cond = threading.Condition()
        self._done: deque[tuple[float, float, int, int]] = deque(maxlen=200_000)  # (start, end, texts, tokens)

    # ------------------------------------------------------------------ shaping a request

    def take(self, pending: deque[Any], tokens: Any) -> list[Any]:
        """The next request from the front of ``pending`` (``tokens(item)`` its size): at least one
        item, then as many as fit in the current size and the ``max_texts`` ceiling."""
        out: list[Any] = []
        total = 0
        while pending and len(out) < self.max_texts:
            t = tokens(pending[0])
            if out and total + t > self.size:
                break
            out.append(pending.popleft())
            total += t
        return out

    def timeout_for(self, tokens: int, ahead: int = 0) -> float:
        """Ten times the time ``tokens`` should take with the requests now in flight, or behind
        ``ahead`` tokens already at the server, whichever is longer (the ceiling until a first answer
        has been timed). Through llama.cpp on a loaded machine, a 6-token request sent behind a
        915-token one timed out at the 10 s floor while it waited, and the server computed it anyway."""
        if self.best is None:
            return self.timeout_ceiling
        expected = self.best * max(tokens * max(1, self.in_flight), tokens + ahead)
        return min(self.timeout_ceiling, max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR * expected))

    @contextmanager
    def slot(self, tokens: int = 0) -> Iterator[float]:
        """Hold one of the requests in flight (waits while they are all taken); yields the timeout
        for a request of ``tokens`` sent now, behind the ones already in flight."""
        with self._cond:
            while self.active >= self.in_flight:
                self._cond.wait()
            timeout = self.timeout_for(tokens, self.active_tokens)
            self.active += 1
            self.active_tokens += tokens
        try:
            yield timeout
        finally:
            with self._cond:
                self.active -= 1
                self.active_tokens -= tokens
                self._cond.notify_all()

    # ------------------------------------------------------------------ learning

    def succeeded(self, texts: int, tokens: int, start: float, end: float) -> None:
        with self._cond:
            self._done.append((start, end, texts, tokens))
            per = max(end - start, 1e-6) / tokens
            # the best drifts up slowly: a machine that got busier is not judged against an idle moment forever
            self.best = per if self.best is None else min(per, self.best * 1.02)
            if per <= FLAT * self.best:
                self._grow()
            else:
                self._flat = 0
                if per > SLOW * self.best and self.in_flight > 1:
                    self.in_flight -= 1
            self._cond.notify_all()

    def _grow(self) -> None:
        fit = self.timeout_ceiling / (FIT * (self.best or 1e-9) * max(1, self.in_flight))  # tokens that fit in time
        self.size = int(max(1, min(MAX_TOKENS, self.size + STEP_TOKENS, fit)))
        self._flat += 1
        if self._flat >= self.in_flight and self.in_flight < self.max_in_flight:
            self.in_flight += 1
            self._flat = 0

    def overloaded(self) -> None:
        """A timeout, 429 or 503: halve the request size and the requests in flight."""
        with self._cond:
            self.size = max(1, self.size // 2)
            self.in_flight = max(1, self.in_flight // 2)
            self._shrunk.append(time.monotonic())
            self._flat = 0
            self._cond.notify_all()

    # ------------------------------------------------------------------ reporting

    def mark(self) -> float:
        """A point in time to measure from (:meth:`sustained`)."""
        return time.monotonic()

    def median_latency(self) -> float:
        with self._cond:
            recent = [e - s for s, e, _, _ in list(self._done)[-50:]]
        return statistics.median(recent) if recent else 0.0

    def sustained(self, since: float) -> Sustained | None:
        """What the endpoint did for requests sent since ``since`` (None: no request)."""
        with self._cond:
            done = [d for d in self._done if d[0] >= since]
            shrinks, size, in_flight = sum(1 for t in self._shrunk if t >= since), self.size, self.in_flight
        if not done:
            return None
        span = max(max(d[1] for d in done) - min(d[0] for d in done), 1e-6)
        texts, tokens = sum(d[2] for d in done), sum(d[3] for d in done)
        return Sustained(texts=texts, tokens=tokens, seconds=round(span, 3), texts_per_s=round(texts / span, 2),
                         tokens_per_s=round(tokens / span, 1), request_texts=max(d[2] for d in done[-20:]),
                         request_tokens=min(size, max(d[3] for d in done[-20:])), in_flight=in_flight, shrinks=shrinks,
                         median_latency_s=round(statistics.median(d[1] - d[0] for d in done), 3))
