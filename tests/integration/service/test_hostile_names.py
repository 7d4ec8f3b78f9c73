"""One name rule on every route (issue 39, item 1): a table of hostile collection names sent to
every route that names a collection — REST, SSE, the WebSocket, the OpenAI-compatible ``model``
(streamed and not) and uploads — against a real server whose data folder sits beside another
data folder holding a secret. Nothing outside the named collection is read (the secret never
comes back), nothing answers 5xx, no reply carries a server path, and an upload to a bad name is
refused at once (never 202)."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest
import websockets

from ragcore.engine.engine import Engine
from ragcore.storage.names import collection_name_problem
from tests.integration.service.conftest import base_settings

SECRET = "The heliotrope ledger balances only on leap-year Tuesdays."
QUESTION = "When does the heliotrope ledger balance?"


@pytest.fixture(scope="module")
def other_data(tmp_path_factory: pytest.TempPathFactory, encoder) -> Path:
    """Another data folder, with a collection "secret" the served one must never read."""
    src = tmp_path_factory.mktemp("secret-corpus")
    (src / "ledger.md").write_text(f"# Ledger\n\n{SECRET}\n\nIt is kept in the vault.\n")
    data = tmp_path_factory.mktemp("secret-data")
    engine = Engine(base_settings(data), encoder=encoder)
    engine.ingest([src], "secret")
    engine.close()
    return data


@pytest.fixture(scope="module")
def served(start_server, guide_data):
    return start_server(guide_data)


def hostile_names(guide_data: Path, other_data: Path) -> list[str]:
    escape = os.path.relpath(other_data / "qdrant-edge" / "secret", guide_data / "qdrant-edge")
    return [escape, "../secret", str(other_data / "qdrant-edge" / "secret"), "a" * 300, "ragcore__meta",
            "ragcore__headings", "guide/.", "guide/", "./guide", "guide/../guide", ".", "..", "", " ", " guide",
            "guide ", "guide\n", "gu\x00ide", "guide\x00", "guide%2F..", "日本語", "ｇｕｉｄｅ", "GUIDE", "guide\u200b",
            "e\u0301", "secret", "con", "-", "guide;rm", "guide?x=1", "guide#x"]


def _check(r: httpx.Response, route: str, name: str, data_dirs: list[Path]) -> None:
    where = f"{route} {name[:60]!r}"
    assert r.status_code < 500, f"{where}: {r.status_code} {r.text[:300]}"
    assert r.status_code not in (200, 202), f"{where}: answered {r.status_code}"
    assert "heliotrope" not in r.text, f"{where}: read another data folder"
    for d in data_dirs:
        assert str(d) not in r.text, f"{where}: a server path in the reply"


async def _ws_reply(url: str, name: str) -> dict:
    async with websockets.connect(url.replace("http", "ws", 1) + "/api/ws") as ws:
        await ws.send(json.dumps({"type": "rag.request", "question": QUESTION, "collection": name,
                                  "generator": "extractive", "client_id": 1}))
        return json.loads(await asyncio.wait_for(ws.recv(), 60))


def test_every_route_refuses_every_hostile_name(served, guide_data, other_data) -> None:
    dirs = [guide_data, other_data]
    names = hostile_names(guide_data, other_data)
    with httpx.Client(base_url=served.url, timeout=60) as client:
        assert client.get("/api/collections/guide/documents").status_code == 200  # the control
        before = client.get("/api/collections").json()
        for name in names:
            body = {"question": QUESTION, "collection": name}
            _check(client.post("/api/retrieve", json=body), "retrieve", name, dirs)
            _check(client.post("/api/ask", json={**body, "generator": "extractive"}), "ask", name, dirs)
            _check(client.post("/api/ask/stream", json={**body, "generator": "extractive"}), "ask/stream", name, dirs)
            chat = {"model": name, "messages": [{"role": "user", "content": QUESTION}]}
            _check(client.post("/v1/chat/completions", json=chat), "chat", name, dirs)
            _check(client.post("/v1/chat/completions", json={**chat, "stream": True}), "chat stream", name, dirs)
            path = quote(name, safe="")
            _check(client.get(f"/api/collections/{path}/documents"), "documents", name, dirs)
            if collection_name_problem(name):  # (a name the rule allows is one an upload may create)
                up = client.post(f"/api/collections/{path}/ingest", files={"files": ("a.md", b"# A\n\nSome text here.\n")})
                _check(up, "ingest", name, dirs)
            reply = asyncio.run(_ws_reply(served.url, name))
            assert reply["type"] == "rag.error" and reply["client_id"] == 1, (name, reply)
            assert "heliotrope" not in json.dumps(reply) and str(guide_data) not in json.dumps(reply)
        assert client.get("/api/collections").json() == before  # no upload was taken


def test_refusals_say_why(served) -> None:
    with httpx.Client(base_url=served.url, timeout=60) as client:
        bad = client.post("/api/retrieve", json={"question": QUESTION, "collection": "guide/."})
        assert bad.status_code == 422 and "not allowed" in bad.json()["error"]["message"]
        missing = client.post("/api/retrieve", json={"question": QUESTION, "collection": "nosuch"})
        assert missing.status_code == 404 and "GET /api/collections" in missing.json()["error"]["message"]
        reserved = client.post("/api/ask", json={"question": QUESTION, "collection": "ragcore__meta"})
        assert reserved.status_code == 422
        model = client.post("/v1/chat/completions", json={"model": "nosuch", "messages": [{"role": "user", "content": "q?"}]})
        assert model.status_code == 404 and model.json()["error"]["code"] == "model_not_found"
        up = client.post("/api/collections/ragcore__meta/ingest", files={"files": ("a.md", b"# A\n\ntext\n")})
        assert up.status_code == 422 and "ragcore__" in up.json()["error"]["message"]


async def _mcp_replies(url: str, names: list[str]) -> list[tuple[str, str, bool, str]]:
    from mcp import Client

    from tests.integration.mcp.test_mcp_server import example

    out = []
    async with Client(example.http_server(url + "/mcp"), read_timeout_seconds=120) as client:
        for name in names:
            for tool, args in (("search", {"collection": name, "question": QUESTION}),
                               ("ask", {"collection": name, "question": QUESTION}),
                               ("read", {"collection": name, "path": "08-selected-text-mode.md", "start": 1, "end": 3})):
                r = await client.call_tool(tool, args)
                out.append((tool, name, r.is_error, " ".join(getattr(c, "text", "") for c in r.content)))
    return out


def test_the_mcp_tools_refuse_every_hostile_name(served, guide_data, other_data) -> None:
    """The MCP tools (/mcp on the same server) resolve names through the same rule: a tool error with a
    reason for each hostile name, nothing read from another data folder, no path, no traceback."""
    pytest.importorskip("mcp")
    names = hostile_names(guide_data, other_data)
    replies = asyncio.run(_mcp_replies(served.url, names))
    assert len(replies) == 3 * len(names)
    for tool, name, is_error, text in replies:
        where = f"{tool} {name[:60]!r}"
        assert is_error, f"{where}: answered {text[:200]}"
        assert "heliotrope" not in text and "Traceback" not in text, where
        assert str(guide_data) not in text and str(other_data) not in text, where
