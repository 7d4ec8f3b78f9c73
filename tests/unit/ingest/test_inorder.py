"""ordered_map (ragcore/ingest/inorder.py): several items worked on at once, results handed on in
the order the items came, a bounded number taken, an error raised at its item's turn."""

from __future__ import annotations

import threading
import time

import pytest

from ragcore.ingest.inorder import ordered_map


class Gauge:
    """Counts calls running at once (the most seen is the concurrency reached)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.now = self.most = 0

    def __call__(self, item: tuple[int, float]) -> int:
        with self.lock:
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            time.sleep(item[1])
            return item[0] * 10
        finally:
            with self.lock:
                self.now -= 1


def nothing() -> None:
    pass


def test_results_come_in_input_order_though_they_finish_out_of_order() -> None:
    delays = [0.3, 0.05, 0.2, 0.01, 0.15, 0.0, 0.1, 0.02]  # later items finish first
    gauge = Gauge()
    out = list(ordered_map(gauge, list(enumerate(delays)), workers=4, window=6, check=nothing))
    assert [r for _, r in out] == [i * 10 for i in range(len(delays))]
    assert [item for item, _ in out] == list(enumerate(delays))
    assert gauge.most == 4  # as many at once as workers, never more


def test_a_slow_first_item_does_not_stop_the_others_up_to_the_window() -> None:
    taken: list[int] = []

    def items():
        for i in range(10):
            taken.append(i)
            yield (i, 0.6 if i == 0 else 0.01)

    t0 = time.perf_counter()
    gen = ordered_map(Gauge(), items(), workers=2, window=5, check=nothing)
    first = next(gen)
    assert first == ((0, 0.6), 0) and time.perf_counter() - t0 >= 0.6
    assert len(taken) <= 6  # the window bounds what was taken while the first was slow (5 pending + 1 being added)
    assert len(taken) >= 4  # ... but the other worker kept going meanwhile
    assert [r for _, r in gen] == [i * 10 for i in range(1, 10)]


def test_an_error_is_raised_at_its_turn_and_what_was_not_started_is_cancelled() -> None:
    started: list[int] = []

    def fn(i: int) -> int:
        started.append(i)
        if i == 2:
            raise ValueError("item 2 failed")
        time.sleep(0.05)
        return i

    got = []
    with pytest.raises(ValueError, match="item 2 failed"):
        for _, r in ordered_map(fn, range(100), workers=2, window=3, check=nothing):
            got.append(r)
    assert got == [0, 1]  # everything before the failed item was handed on, in order
    assert len(started) < 10  # the stream was not run to its end


def test_check_can_give_up_while_waiting() -> None:
    stop = threading.Event()

    class Stop(Exception):
        pass

    def check() -> None:
        if stop.is_set():
            raise Stop()

    threading.Timer(0.3, stop.set).start()
    t0 = time.perf_counter()
    with pytest.raises(Stop):
        list(ordered_map(lambda i: time.sleep(0.5 if i == 0 else 10), range(3), workers=1, window=2, check=check))
    assert time.perf_counter() - t0 < 8  # 0.5 s quiet: the running item was waited for, then no more (each 10 s)
