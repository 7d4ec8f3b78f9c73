"""The event contract over SSE and a WebSocket, cancel, client disconnects, the deadline and
429 — against a real server whose engine talks to the scripted OpenAI-protocol server, so a
test can make an answer take time and see whether the model's stream was really closed."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
import websockets

from tests.integration.service.conftest import scripted_llm
from bench.support.scripted_openai import Hang, Text

QUESTION = "How does hybrid mode fuse the dense and sparse rankings?"
DEADLINE = 8.0
SLOW = Text([f"w{i} " for i in range(600)] + ["[1]."], delay=0.1)  # 60 s unless stopped: far beyond any bound below


@pytest.fixture(scope="module")
def served(start_server, guide_data, llm_server):
    # one question at a time and none waiting: the second one gets 429
    served = start_server(guide_data, llm=scripted_llm(llm_server), deadline_s=DEADLINE, max_concurrent=1,
                          max_queued=0, retry_after_s=3)
    # the tests time questions, not the first load of the indexes and of the OpenAI SDK (seconds on a busy machine)
    served.engine.ask(QUESTION)
    return served


@pytest.fixture(autouse=True)
def _drain(llm_server, served):
    while llm_server.pending:  # nothing left over from an earlier test
        llm_server._next(models=False)
    yield
    _wait_idle(served)


def _wait_idle(served, timeout: float = 20) -> None:
    """The question slot is free again (its worker thread has ended)."""
    end = time.monotonic() + timeout
    from ragcore.service.state import Service

    svc: Service = served.server.config.app.state.service
    while svc.slots.taken and time.monotonic() < end:
        time.sleep(0.05)
    assert svc.slots.taken == 0


def _sse_events(lines) -> list[dict]:
    out, event = [], None
    for line in lines:
        if line.startswith("event:"):
            event = line.split(":", 1)[1].strip()
        elif line.startswith("data:"):
            obj = json.loads(line[5:])
            assert obj["type"] == event
            out.append(obj)
    return out


def test_sse_streams_the_event_contract(served, llm_server) -> None:
    llm_server.script([Text(["Hybrid mode ", "fuses the rankings ", "with RRF [1]."])])
    with httpx.stream("POST", served.url + "/api/ask/stream", json={"question": QUESTION}, timeout=60) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        events = _sse_events(r.iter_lines())
    types = [e["type"] for e in events]
    assert types[:2] == ["rag.started", "rag.sources"] and types[-2:] == ["rag.message", "rag.done"]
    assert [e["data"]["text"] for e in events if e["type"] == "rag.token"] == ["Hybrid mode ", "fuses the rankings ", "with RRF [1]."]
    assert [e["seq"] for e in events] == list(range(len(events)))
    assert len({e["request_id"] for e in events}) == 1 and all(e["ts"] > 1e9 for e in events)
    done = events[-1]["data"]
    assert done["status"] == "ok" and done["answer"]["citations"][0]["n"] == 1
    assert events[1]["data"]["evidence"][0]["chunk"]["path"].endswith(".md")


def test_websocket_cancel_mid_answer_closes_the_model_stream(served, llm_server) -> None:
    llm_server.script([SLOW])
    n_before = len(llm_server.requests)

    async def talk() -> list[dict]:
        async with websockets.connect(served.url.replace("http", "ws") + "/api/ws") as ws:
            await ws.send(json.dumps({"type": "rag.request", "question": QUESTION, "client_id": "c1"}))
            got = []
            async for raw in ws:
                msg = json.loads(raw)
                got.append(msg)
                if msg["type"] == "rag.token" and sum(m["type"] == "rag.token" for m in got) == 2:
                    await ws.send(json.dumps({"type": "rag.cancel", "request_id": msg["request_id"]}))
                if msg["type"] == "rag.done":
                    return got
        return got

    t0 = time.monotonic()
    got = asyncio.run(asyncio.wait_for(talk(), 30))
    assert time.monotonic() - t0 < 30  # ~1 s quiet; long before the scripted answer's end (60 s)
    done = got[-1]
    assert done["type"] == "rag.done" and done["data"]["status"] == "cancelled" and done["data"]["reason"] == "cancelled"
    assert done["client_id"] == "c1" and got[0]["type"] == "rag.started"
    upstream = llm_server.wait_for_requests(n_before + 1)[n_before]
    assert upstream.stream and upstream.disconnected.wait(5)


def test_closing_the_socket_cancels_and_closes_the_model_stream(served, llm_server) -> None:
    llm_server.script([SLOW])
    n_before = len(llm_server.requests)

    async def talk() -> None:
        ws = await websockets.connect(served.url.replace("http", "ws") + "/api/ws")
        await ws.send(json.dumps({"type": "rag.request", "question": QUESTION}))
        async for raw in ws:
            if json.loads(raw)["type"] == "rag.token":
                break
        await ws.close()

    asyncio.run(asyncio.wait_for(talk(), 30))
    upstream = llm_server.wait_for_requests(n_before + 1)[n_before]
    assert upstream.disconnected.wait(5)


def test_dropping_an_sse_stream_closes_the_model_stream(served, llm_server) -> None:
    # one piece, then silence: after it no write could notice that the client left
    llm_server.script([Hang(seconds=20, pieces=["Hybrid mode "])])
    n_before = len(llm_server.requests)
    with httpx.stream("POST", served.url + "/api/ask/stream", json={"question": QUESTION}, timeout=60) as r:
        lines = r.iter_lines()  # kept: a dropped line iterator closes the connection (httpcore)
        for line in lines:
            if line.startswith("event: rag.token"):
                break
    upstream = llm_server.wait_for_requests(n_before + 1)[n_before]
    assert upstream.disconnected.wait(5)


def test_a_question_past_its_deadline_is_answered_with_its_status(served, llm_server) -> None:
    llm_server.script([Hang(seconds=30, pieces=["Hybrid mode fuses ", "the rankings"])])
    n_before = len(llm_server.requests)
    t0 = time.monotonic()
    r = httpx.post(served.url + "/api/ask", json={"question": QUESTION}, timeout=60)
    took = time.monotonic() - t0
    assert r.status_code == 200 and DEADLINE - 0.5 < took < 25  # cut at the deadline, long before the 30 s hang
    answer = r.json()
    assert answer["status"] == "partial" and answer["answer"].startswith("Hybrid mode fuses")
    assert "deadline of 8 s" in answer["error_message"] and answer["metadata"]["deadline_s"] == DEADLINE
    assert llm_server.requests[n_before].disconnected.wait(5)


def test_overload_gets_429_with_retry_after(served, llm_server) -> None:
    llm_server.script([SLOW])
    with httpx.stream("POST", served.url + "/api/ask/stream", json={"question": QUESTION}, timeout=60) as r:
        lines = r.iter_lines()  # kept: a dropped line iterator closes the connection (httpcore)
        for line in lines:
            if line.startswith("event: rag.token"):
                break
        for path, body in (("/api/ask", {"question": QUESTION}), ("/api/retrieve", {"question": QUESTION}),
                           ("/api/ask/stream", {"question": QUESTION}),
                           ("/v1/chat/completions", {"model": "guide", "messages": [{"role": "user", "content": QUESTION}]})):
            busy = httpx.post(served.url + path, json=body, timeout=30)
            assert busy.status_code == 429, path
            assert busy.headers["Retry-After"] == "3" and busy.json()["error"]["code"] == "busy"
    _wait_idle(served)
    assert httpx.post(served.url + "/api/retrieve", json={"question": QUESTION}, timeout=30).status_code == 200
