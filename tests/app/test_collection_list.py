"""ui/listing.py: the collection list is never read on an answer's path once there is one.

The reading function here counts its calls instead of opening a store (what it returns is
irrelevant to the policy under test: when a reading happens, and which result is kept)."""

from __future__ import annotations

import threading
import time

import pytest

import ui.listing as listing
from ui.listing import CollectionList


class Reader:
    def __init__(self) -> None:
        self.calls = 0
        self.gate: threading.Event | None = None

    def __call__(self) -> list:
        self.calls += 1
        if self.gate is not None:
            self.gate.wait(5)
        return [f"read {self.calls}"]  # type: ignore[list-item]


def _wait(pred, timeout: float = 60.0) -> None:  # a bound far above need: met in ms
    end = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.02)


@pytest.fixture(autouse=True)
def short_idle(monkeypatch):
    monkeypatch.setattr(listing, "IDLE_WAIT_S", 0.2)


def test_fresh_list_is_reused_and_a_first_or_forced_reading_happens_at_once():
    r = Reader()
    cl = CollectionList(r, busy=lambda: False)
    assert cl.get(5.0) == ["read 1"] and cl.get(5.0) == ["read 1"] and r.calls == 1
    assert cl.get(0) == ["read 2"] and r.calls == 2  # max_age=0: the Collections tab reads now
    cl.invalidate()
    assert cl.get(5.0) == ["read 3"]  # nothing to show: read now


def test_an_expired_list_is_returned_at_once_and_read_again_after_the_answer_ends():
    r = Reader()
    busy = threading.Event()
    busy.set()
    cl = CollectionList(r, busy=busy.is_set)
    cl.get(5.0)
    time.sleep(0.05)
    assert cl.get(0.01) == ["read 1"]  # expired: the old list, no reading on this path
    time.sleep(0.5)
    assert r.calls == 1  # an answer streams: still not read
    busy.clear()
    _wait(lambda: r.calls == 2)
    _wait(lambda: cl.get(5.0) == ["read 2"])
    assert r.calls == 2


def test_a_reading_begun_before_an_invalidation_is_not_kept():
    r = Reader()
    cl = CollectionList(r, busy=lambda: False)
    cl.get(5.0)
    r.gate = threading.Event()
    time.sleep(0.05)
    cl.get(0.01)  # starts the background reading, which waits at the gate
    _wait(lambda: r.calls == 2)
    cl.invalidate()  # e.g. an ingest ended while it was reading
    r.gate.set()
    time.sleep(0.1)
    r.gate = None
    assert cl.get(5.0) == ["read 3"]  # read now: the older reading was dropped


def test_a_list_older_than_the_stale_limit_is_read_at_once(monkeypatch):
    r = Reader()
    cl = CollectionList(r, busy=lambda: False)
    cl.get(5.0)
    monkeypatch.setattr(listing, "STALE_SERVE_S", 0.01)
    time.sleep(0.05)
    assert cl.get(0.02) == ["read 2"]
