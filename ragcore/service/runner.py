"""One question, run by the engine in a worker thread and read by the event loop.

``Engine.stream`` is a blocking generator; :class:`QuestionRun` iterates it in a thread and hands
each event to the loop. It holds a concurrency slot until the thread has really ended (so the bound
is real even for work that outlives its client), and stops the question three ways, all through
the engine's own contract: ``cancel()`` (``rag.cancel``, a client that went away) sets the engine's
``cancel`` event and closes the generator, which closes the model's HTTP stream; the deadline
does the same and marks the answer with it.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, AsyncIterator, Callable

from ragcore.service.limits import Slot, Slots
from ragcore.service.pool import DaemonPool
from ragcore.types import Answer, Event

_END = object()
_OVERRUN = object()  # put in the queue when the deadline and its grace have passed
GRACE_S = 2.0  # after the deadline, how long the engine gets to end the question itself


@dataclass
class QuestionRun:
    deadline_s: float
    cancel_event: threading.Event = field(default_factory=threading.Event)
    reason: str | None = None  # why it was stopped: "cancelled", "disconnected" or "deadline"
    request_id: str | None = None
    started: float = field(default_factory=time.monotonic)
    _queue: "asyncio.Queue[Any]" = field(default_factory=asyncio.Queue)
    _closed: bool = False
    _finished: bool = False  # the worker thread has ended
    _seq: int = -1
    _timers: tuple[asyncio.TimerHandle, ...] = ()

    def cancel(self, reason: str = "cancelled") -> None:
        if self.reason is None:
            self.reason = reason
        self.cancel_event.set()

    def close(self) -> None:
        """The reader is gone: the thread closes the engine's generator after its current event."""
        self.cancel("disconnected")
        self._closed = True

    # ------------------------------------------------------------------ reading

    async def events(self) -> AsyncIterator[Event]:
        """The engine's events in order; a question that overruns its deadline by ``GRACE_S``
        (stuck before any cancellable step) ends here with an error and ``done {cancelled}``."""
        while True:
            item = await self._queue.get()  # one timer (start) marks the overrun: no wait_for per event
            if item is _OVERRUN:
                self.cancel("deadline")
                for ev in self._overrun():
                    yield ev
                return
            if item is _END:
                for timer in self._timers:
                    timer.cancel()
                return
            if isinstance(item, BaseException):
                raise item
            self.request_id = item.request_id
            self._seq = item.seq
            yield self._marked(item)

    def _marked(self, ev: Event) -> Event:
        """A cancelled ``done`` says why (and a deadline names itself in the answer)."""
        if ev.type != "done" or ev.data.get("status") != "cancelled":
            return ev
        data = dict(ev.data, reason=self.reason or "cancelled")
        answer = data.get("answer")
        if self.reason == "deadline" and isinstance(answer, Answer):
            data["answer"] = replace(answer, error_message=deadline_message(self.deadline_s),
                                     metadata={**answer.metadata, "deadline_s": self.deadline_s})
        return replace(ev, data=data)

    def _overrun(self) -> list[Event]:
        rid = self.request_id or "-"
        now = time.time()
        return [Event("error", rid, self._seq + 1, now, {"message": deadline_message(self.deadline_s), "kind": "deadline"}),
                Event("done", rid, self._seq + 2, now, {"status": "cancelled", "reason": "deadline", "answer": None})]

    # ------------------------------------------------------------------ the worker thread

    def start(self, produce: Callable[[threading.Event], Any], slot: Slot, pool: DaemonPool,
              keep: Callable[[Event], bool] | None = None) -> None:
        """Run ``produce(cancel_event)`` in ``pool`` (a thread per question slot: starting a thread
        per question cost ~4 ms on a busy machine) and hand its events, those ``keep`` accepts, to
        the reader (``answer_of`` needs only ``done``: one hop to the event loop instead of ~14)."""
        loop = asyncio.get_running_loop()
        overrun = self.started + self.deadline_s + GRACE_S - time.monotonic()
        self._timers = (loop.call_later(self.deadline_s, self._expire),
                        loop.call_later(max(overrun, 0.01), self._queue.put_nowait, _OVERRUN))

        def hand(item: Any) -> None:
            try:
                loop.call_soon_threadsafe(self._queue.put_nowait, item)
            except RuntimeError:  # the loop is closed (server shutting down): nobody is reading
                pass

        def work() -> None:
            gen = None
            try:
                gen = produce(self.cancel_event)
                for ev in gen:
                    if keep is None or keep(ev):
                        hand(ev)
                    if self._closed:
                        break
            except BaseException as exc:  # handed to the reader, which answers with a JSON error
                hand(exc)
            finally:
                if gen is not None:
                    gen.close()  # closes the model's HTTP stream at once
                self._finished = True
                hand(_END)
                try:
                    loop.call_soon_threadsafe(slot.release)
                except RuntimeError:
                    pass

        pool.submit(work)

    def _expire(self) -> None:
        if not self._finished:
            self.cancel("deadline")


def deadline_message(deadline_s: float) -> str:
    return (f"The question passed this service's deadline of {deadline_s:g} s (RAGCORE_SERVE_DEADLINE_S); "
            "the answer stops where it was.")


async def start_question(slots: Slots, deadline_s: float, produce: Callable[[threading.Event], Any],
                         keep: Callable[[Event], bool] | None = None) -> QuestionRun:
    """A running question (429 when the service is full; queueing counts against the deadline)."""
    run = QuestionRun(deadline_s)
    slot = await slots.acquire(deadline_s)
    run.start(produce, slot, slots.executor(), keep)
    return run


async def run_blocking(slots: Slots, deadline_s: float, fn: Callable[[], Any]) -> Any:
    """``fn()`` in a worker thread under a concurrency slot; 504 past the deadline (the slot is
    held until the thread ends, so work that outlives its client still counts)."""
    from ragcore.service.errors import ApiError

    t0 = time.monotonic()
    slot = await slots.acquire(deadline_s)
    loop = asyncio.get_running_loop()
    fut = loop.create_future()

    def work() -> None:  # one hop back to the loop with the outcome (no concurrent.futures.Future)
        try:
            outcome: tuple[bool, Any] = (True, fn())
        except BaseException as exc:  # noqa: BLE001 - raised again on the event loop
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(_settle, fut, slot, *outcome)
        except RuntimeError:  # the loop is closed (server shutting down): nobody is waiting
            pass

    slots.executor().submit(work)
    try:  # asyncio.timeout, not wait_for: no extra task per request; cancelling ``fut`` (no shield
        # needed) leaves the thread running, and _settle then releases the slot
        async with asyncio.timeout(max(deadline_s - (time.monotonic() - t0), 0.01)):
            return await fut
    except TimeoutError:
        raise ApiError(504, f"The request passed this service's deadline of {deadline_s:g} s.") from None


def _settle(fut: "asyncio.Future[Any]", slot: Slot, ok: bool, value: Any) -> None:
    slot.release()
    if fut.done():  # the waiter gave up (deadline, client gone)
        return
    if ok:
        fut.set_result(value)
    else:
        fut.set_exception(value)
