"""Every input error is a 4xx, and nothing names the server's files or keys (issue 39, items 7
and 8), over a real server: the OpenAI-compatible endpoint's long and malformed messages, the
WebSocket's refusals and binary frames, ``Connection: close`` after a 5xx, strict numbers, blank
questions, bounded selections, answers without the data folder's path, uvicorn's WebSocket log
line without the query string, and two uploads under one name."""

from __future__ import annotations

import asyncio
import json
import logging
import time

import httpx
import pytest
import websockets

QUESTION = "How does hybrid mode fuse the dense and sparse rankings?"
SELECTION_CHARS = 150_000  # over schemas.MAX_SELECTION_CHARS (100,000), within the 1 MB body limit


@pytest.fixture(scope="module")
def served(start_server, guide_data):
    return start_server(guide_data)


@pytest.fixture(scope="module")
def client(served):
    with httpx.Client(base_url=served.url, timeout=60) as c:
        yield c


def _chat(client: httpx.Client, content) -> httpx.Response:
    return client.post("/v1/chat/completions", json={"model": "guide", "messages": [{"role": "user", "content": content}]})


def test_openai_endpoint_refuses_bad_messages_with_4xx_in_openai_shape(client) -> None:
    long = _chat(client, "why? " * 900)  # 4,500 characters: over the question's 4,000
    assert long.status_code == 400 and long.json()["error"]["code"] == "context_length_exceeded"
    assert "4000" in long.json()["error"]["message"]
    for text in (5, None, ["a"], {"x": 1}):
        r = _chat(client, [{"type": "text", "text": text}])
        assert r.status_code == 400, (text, r.text)
        assert set(r.json()["error"]) >= {"code", "message", "type"} and "text" in r.json()["error"]["message"]
    assert _chat(client, [{"type": "text", "text": QUESTION}]).status_code == 200


async def _ws(url: str, *frames) -> list[dict]:
    async with websockets.connect(url.replace("http", "ws", 1) + "/api/ws") as ws:
        out = []
        for frame in frames:
            await ws.send(frame)
            out.append(json.loads(await asyncio.wait_for(ws.recv(), 60)))
        return out


def test_websocket_refusals_are_replies_and_binary_frames_leave_no_traceback(served, caplog) -> None:
    caplog.set_level(logging.INFO)
    bad = [{"type": "rag.request", "question": QUESTION, "top_k": 0, "client_id": "k0"},
           {"type": "rag.request", "question": QUESTION, "top_k": True, "client_id": "kt"},
           {"type": "rag.request", "question": "   ", "client_id": "blank"},
           {"type": "rag.request", "question": QUESTION, "threshold": 7, "client_id": "th"}]
    replies = asyncio.run(_ws(served.url, *(json.dumps(b) for b in bad), b"\x00\x01binary", "not json"))
    assert [r["type"] for r in replies] == ["rag.error"] * 6
    assert [r["client_id"] for r in replies[:4]] == ["k0", "kt", "blank", "th"]
    assert "top_k" in replies[0]["data"]["message"] and "top_k" in replies[1]["data"]["message"]
    assert "text frame" in replies[4]["data"]["message"]
    time.sleep(0.5)  # the server's log lines come from its thread
    assert "Traceback" not in caplog.text and not any(r.exc_info for r in caplog.records)


def test_strict_numbers_and_blank_questions(client) -> None:
    for body in ({"question": QUESTION, "top_k": True}, {"question": QUESTION, "top_k": 2.0},
                 {"question": QUESTION, "threshold": True}, {"question": " \n\t "}):
        r = client.post("/api/retrieve", json=body)
        assert r.status_code == 422, (body, r.text)
    assert client.post("/api/retrieve", json={"question": QUESTION, "top_k": 2, "threshold": 0}).status_code == 200


def test_a_huge_selection_is_refused_before_the_model_runs(client) -> None:
    selection = "The kettle boils water quickly and safely. " * (SELECTION_CHARS // 43)
    t0 = time.monotonic()
    r = client.post("/api/ask", json={"question": "What does the kettle do?", "selection": selection,
                                      "context": "selection", "generator": "extractive"})
    assert r.status_code == 422 and "selection" in r.json()["error"]["message"]
    assert time.monotonic() - t0 < 30  # refused at once (it held a slot for 90 s)


def test_5xx_closes_the_connection_and_names_no_path(served, client, monkeypatch) -> None:
    def broken(*_a, **_k):
        raise OSError(f"[Errno 5] Input/output error: '{served.engine.settings.data_dir}/qdrant-edge/guide/wal'")

    monkeypatch.setattr(served.engine, "documents", broken)  # a fault the real store cannot be made to have on cue
    r = client.get("/api/collections/guide/documents")
    assert r.status_code == 500 and r.headers["connection"] == "close"
    assert str(served.engine.settings.data_dir) not in r.text


def test_answers_carry_no_server_path(served, client) -> None:
    data_dir = str(served.engine.settings.data_dir)
    r = client.post("/api/ask", json={"question": QUESTION, "generator": "extractive"})
    assert r.status_code == 200 and data_dir not in r.text and "pytest-of-" not in r.text  # (no temp path at all)
    retrieved = client.post("/api/retrieve", json={"question": QUESTION})
    assert retrieved.status_code == 200 and "pytest-of-" not in retrieved.text
    assert "data_dir" not in r.json()["metadata"]["config"] and r.json()["metadata"]["config"]["top_k"]
    with client.stream("POST", "/api/ask/stream", json={"question": QUESTION, "generator": "extractive"}) as s:
        assert data_dir not in "".join(s.iter_text())
    (reply,) = asyncio.run(_ws(served.url, json.dumps({"type": "rag.request", "question": QUESTION})))
    assert reply["type"] == "rag.started"


def test_query_strings_never_reach_the_log(served, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    key = "url-key-5b1e77d0c9"

    async def connect() -> None:
        async with websockets.connect(served.url.replace("http", "ws", 1) + f"/api/ws?api_key={key}") as ws:
            await ws.send(json.dumps({"type": "nothing"}))
            await ws.recv()

    asyncio.run(connect())
    httpx.get(served.url + f"/api/collections?api_key={key}")
    deadline = time.monotonic() + 10

    def server_lines() -> str:  # (the clients' own loggers, httpx and websockets.client, print their URLs)
        return "\n".join(r.getMessage() for r in caplog.records if r.name.startswith(("uvicorn", "ragcore")))

    while '"WebSocket /api/ws' not in server_lines() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert '"WebSocket /api/ws' in server_lines()  # uvicorn's WebSocket line was written ...
    assert key not in server_lines() and "api_key=" not in server_lines()  # ... without the query string


def test_two_uploads_under_one_name_are_refused(client) -> None:
    files = [("files", ("notes.md", b"# One\n\nfirst text\n")), ("files", ("sub/notes.md", b"# Two\n\nsecond text\n"))]
    r = client.post("/api/collections/dupes/ingest", files=files)
    assert r.status_code == 422 and "notes.md" in r.json()["error"]["message"]
    assert "dupes" not in [c["name"] for c in client.get("/api/collections").json()]
