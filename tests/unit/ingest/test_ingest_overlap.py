"""Ingest keeps the endpoint busy while the writing thread starts up (ragcore/ingest/batch_writer.py):
the writer creates the collection and imports what writing needs (``warm_write_path``) while the
files are read and embedded, so the first write no longer stalls the pipeline. Checked here: the
overlap keeps the store's order, takes only a bounded number of batches ahead of the store, and a
failing request while the writer is still starting loses nothing.

Real parts: the scripted protocol server on 127.0.0.1 (bench/support/scripted_embeddings.py), Qdrant
Edge in a temp folder. The one thing replaced is the writer's start-up, by the real one run behind a
gate the test opens: a start-up of several seconds (what the imports cost on a busy machine) cannot
be produced on demand otherwise, and once imported they cost nothing.
"""

from __future__ import annotations

import threading
import time
from typing import Iterator

import numpy as np
import pytest

from ragcore.encoders.base import EmbedError
from ragcore.ingest import batch_writer
from ragcore.ingest.run import PIPELINE_AHEAD, WRITE_AHEAD
from ragcore.storage.store import embed_text, point_id
from tests.conftest import write_corpus
from bench.support.scripted_embeddings import Fail, ScriptedEmbeddingServer
from tests.unit.ingest.test_ingest_endpoint import DIM, expected, record_write_order
from tests.unit.ingest.test_ingest_endpoint import corpus as sections_corpus

CONCURRENCY = 4


@pytest.fixture
def server() -> Iterator[ScriptedEmbeddingServer]:
    with ScriptedEmbeddingServer(dim=DIM) as s:
        yield s


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[threading.Event]:
    """The writer's real start-up, held until the test sets the event (set at the end in any case)."""
    opened = threading.Event()
    warm = batch_writer.warm_write_path

    def gated() -> None:
        opened.wait(timeout=60)
        warm()

    monkeypatch.setattr(batch_writer, "warm_write_path", gated)
    yield opened
    opened.set()


def settings(engine, server):
    return engine.settings.with_(embed_model="openai:scripted-embed", embed_base_url=server.base_url,
                                 embed_request_size=4, embed_concurrency=CONCURRENCY, chunk_size=40, chunk_overlap=0)


def corpus(n_files: int, tag: str = "") -> dict[str, str]:
    """Files of three sections, each its own chunk at chunk_size 40."""
    return sections_corpus(n_files=n_files, sections=3, tag=tag)


def chunk_requests(server: ScriptedEmbeddingServer) -> int:
    return sum(1 for r in server.requests if r.body["input"] != ["dimension probe"])


def settle(server: ScriptedEmbeddingServer, quiet_s: float = 3.0, limit_s: float = 60.0) -> int:
    """The number of requests once the first has come and then none for ``quiet_s``."""
    end = time.monotonic() + limit_s
    n, since = 0, time.monotonic()
    while time.monotonic() < end:
        time.sleep(0.1)
        if (m := chunk_requests(server)) != n:
            n, since = m, time.monotonic()
        elif n and time.monotonic() - since >= quiet_s:
            break
    return n


def run_in_thread(fn) -> tuple[threading.Thread, dict]:
    out: dict = {}

    def target() -> None:
        try:
            out["report"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            out["error"] = exc

    t = threading.Thread(target=target, daemon=True)
    t.start()
    return t, out


def test_while_the_writer_starts_the_endpoint_runs_on_a_bounded_way_ahead_and_the_store_keeps_order(
        tmp_path, make_engine, server, gate) -> None:
    engine = make_engine()
    s = settings(engine, server)
    n_files = 70  # 210 chunks + 280 headings: ~120 requests of 4, far more than the pipeline may hold
    root = write_corpus(tmp_path / "c", corpus(n_files))
    written = record_write_order(engine)
    server.script(Fail(500))  # a failing request on the way, retried
    t, out = run_in_thread(lambda: engine.ingest([root], "ep", settings=s, calibrate=False))
    held = settle(server)
    # the endpoint ran on while the writer was starting: past the batches that stopped it before
    # (the old queues held 2 × PIPELINE_AHEAD + CONCURRENCY + 1 batches at most), but no further than the
    # queues allow: WRITE_AHEAD waiting for the store, one in hand, the in-order window (memory stays bounded)
    assert held > 2 * PIPELINE_AHEAD + CONCURRENCY + 1
    assert held <= WRITE_AHEAD + 1 + PIPELINE_AHEAD + CONCURRENCY + 1  # + 1: the 500 was sent twice
    assert not written and t.is_alive()
    gate.set()
    t.join(timeout=120)
    assert not t.is_alive() and "error" not in out, out.get("error")
    report = out["report"]
    assert report.count("failed") == 0 and report.chunks_written == 3 * n_files
    chunks = list(engine.store.snapshot("ep").chunks)
    dense = np.asarray(engine.store.snapshot("ep").dense)
    assert len(chunks) == 3 * n_files
    for c, v in zip(chunks, dense):  # each vector is its own chunk's (the server's bag of words of it)
        assert np.allclose(v, expected(embed_text(c)), atol=1e-5), c.chunk_id
    # the store saw the chunks in the order they were read (what makes a crash safe), each once
    assert written == sorted(written) and len(written) == len(set(written)) == len(chunks)


def test_a_request_failing_while_the_writer_starts_loses_nothing_and_the_rerun_repairs(
        tmp_path, make_engine, server, gate) -> None:
    engine = make_engine()
    s = settings(engine, server)
    root = write_corpus(tmp_path / "c", corpus(12))
    gate.set()
    engine.ingest([root], "ep", settings=s, calibrate=False)
    old = {r.id for r in engine.store.point_refs("ep")}
    assert len(old) == 36
    gate.clear()
    write_corpus(root, corpus(12, tag=" v2"))  # every file changed
    server.script(Fail(400, body='{"error": "input too long"}'))
    t, out = run_in_thread(lambda: engine.ingest([root], "ep", settings=s, calibrate=False))
    end = time.monotonic() + 30
    while chunk_requests(server) < 1 and time.monotonic() < end:
        time.sleep(0.05)
    time.sleep(0.5)
    assert t.is_alive()  # failed, but nothing touches the store once ingest has returned: it waits for the writer
    gate.set()
    t.join(timeout=60)
    assert not t.is_alive() and isinstance(out.get("error"), EmbedError) and "HTTP 400" in str(out["error"])
    assert {r.id for r in engine.store.point_refs("ep")} == old  # nothing written, nothing deleted
    report = engine.ingest([root], "ep", settings=s, calibrate=False)  # the next run repairs
    assert report.count("failed") == 0 and report.count("updated") == 12
    chunks = list(engine.store.snapshot("ep").chunks)
    assert len(chunks) == 36 and all(" v2" in c.text for c in chunks)
    assert not old & {point_id(c.chunk_id) for c in chunks}
