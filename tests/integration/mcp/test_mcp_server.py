"""The MCP server with the official `mcp` SDK's own client (examples/mcp_client.py): over stdio
(`ragcore mcp` as a subprocess) and over streamable HTTP (`/mcp` on a real `ragcore serve`), every
tool listed and called; refusals are MCP tool errors with a reason, never a traceback."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402

from tests.integration.service.conftest import KEY  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
QUESTION = "What is reciprocal rank fusion?"
READ_ONLY = {"list_collections", "search", "ask", "read"}


def _example():
    spec = importlib.util.spec_from_file_location("mcp_client_example", REPO / "examples" / "mcp_client.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


example = _example()


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGCORE_")}
    return {**env, "PYTHONPATH": str(REPO), "RAGCORE_CALIBRATED_BAR": "false", "RAGCORE_COLLECTION": "guide"}


def _check_outputs(out: dict[str, Any]) -> None:
    assert out["list_collections"]["collections"][0]["name"] == "guide"
    ev = out["search"]["evidence"]
    assert ev and all(e["id"].startswith("ev-") and e["locator"].startswith("ragcore://guide/") for e in ev)
    assert all(e["score_kind"] in ("cosine", "bm25", "rrf", "weighted") for e in ev)
    assert out["search"]["cut"] and out["search"]["cut_counts"].get("top_k")  # why the rest was cut
    assert out["read"]["lines"][0]["n"] == ev[0]["start_line"] and out["read"]["id"].startswith("ev-")
    assert ev[0]["id"] in {c["id"] for c in out["read"]["chunks"]}
    ask = out["ask"]
    assert ask["status"] in ("ok", "partial", "abstained") and "[1]" in ask["answer"]
    assert {c["id"] for c in ask["citations"]} <= {e["id"] for e in ask["evidence"]}


def test_stdio_client_lists_and_calls_every_tool(guide_data: Path) -> None:
    server = example.stdio_server("--data-dir", str(guide_data), env=_env())
    out = asyncio.run(example.call_every_tool(server, QUESTION))
    assert out["tools"] == sorted(READ_ONLY)  # ingest is off without --allow-ingest
    _check_outputs(out)


def test_http_client_lists_and_calls_every_tool(guide_data: Path, start_server) -> None:
    served = start_server(guide_data, api_keys=(KEY,))
    out = asyncio.run(example.call_every_tool(example.http_server(served.url + "/mcp", KEY), QUESTION))
    assert out["tools"] == sorted(READ_ONLY)
    _check_outputs(out)
    # the same evidence as /api/retrieve for the same question: same ids, same order
    r = httpx.post(served.url + "/api/retrieve", json={"question": QUESTION, "top_k": 3},
                   headers={"Authorization": f"Bearer {KEY}"}, timeout=60).json()
    kept = [c["chunk"]["chunk_id"][:12] for c in r["candidates"] if c["kept"]]
    assert [e["id"][3:] for e in out["search"]["evidence"]] == kept


def test_http_refuses_a_missing_or_wrong_key(guide_data: Path, start_server) -> None:
    served = start_server(guide_data, api_keys=(KEY,))
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream"}
    for auth in ({}, {"Authorization": "Bearer wrong-key"}):
        r = httpx.post(served.url + "/mcp", json=init, headers={**headers, **auth}, timeout=30)
        assert r.status_code == 401 and "API key" in r.json()["error"]["message"]
        assert KEY not in r.text
    with pytest.raises(BaseException):  # the SDK's client cannot even initialise
        asyncio.run(example.call_every_tool(example.http_server(served.url + "/mcp", "wrong-key"), QUESTION))
    ok = httpx.post(served.url + "/mcp", json=init, headers={**headers, "Authorization": f"Bearer {KEY}"}, timeout=30)
    assert ok.status_code == 200


async def _errors(server: Any) -> list[tuple[bool, str]]:
    calls = [("read", {"collection": "guide", "path": "../../etc/passwd", "start": 1, "end": 3}),
             ("read", {"collection": "guide", "path": "/etc/passwd", "start": 1, "end": 3}),
             ("read", {"collection": "guide", "path": "not-in-the-collection.md", "start": 1, "end": 3}),
             ("read", {"collection": "guide", "path": "08-selected-text-mode.md", "start": 5000, "end": 5003}),
             ("search", {"collection": "../guide", "question": QUESTION}),
             ("search", {"collection": "nosuch", "question": QUESTION}),
             ("search", {"collection": "guide", "question": QUESTION, "top_k": 0}),
             ("ask", {"collection": "guide", "question": "   "})]
    async with Client(server, read_timeout_seconds=120) as client:
        return [((r := await client.call_tool(name, args)).is_error, r.content[0].text) for name, args in calls]


def test_errors_are_tool_errors_with_a_reason(guide_data: Path, start_server) -> None:
    served = start_server(guide_data)
    results = asyncio.run(_errors(example.http_server(served.url + "/mcp")))
    assert all(is_error for is_error, _ in results)
    texts = [t for _, t in results]
    assert all("Traceback" not in t and str(guide_data) not in t for t in texts)
    assert "outside the collection" in texts[0] and "outside the collection" in texts[1]
    assert "is not a document of collection 'guide'" in texts[2]
    assert "past its end" in texts[3]
    assert "is not allowed" in texts[4] and "There is no collection 'nosuch'" in texts[5]
    assert "top_k" in texts[6] and "question is empty" in texts[7]


async def _selection_session(server: Any) -> tuple[list[str], dict[str, Any]]:
    async with Client(server, read_timeout_seconds=120) as client:
        names = sorted(t.name for t in (await client.list_tools()).tools)
        r = await client.call_tool("ask", {"collection": "guide", "question": "How long do tokens last?"})
        return names, json.loads(r.content[0].text)


def test_a_session_scoped_to_a_selection_has_no_search(guide_data: Path, tmp_path: Path) -> None:
    passage = tmp_path / "passage.txt"
    passage.write_text("Access tokens expire after ten minutes. Refresh tokens last for thirty days and can be revoked.\n")
    server = example.stdio_server("--data-dir", str(guide_data), env=_env())
    server.args.extend(["--selection-file", str(passage)])
    names, answer = asyncio.run(_selection_session(server))
    assert names == ["ask"]
    assert answer["evidence"] and all(e["origin"] == "selection" for e in answer["evidence"])


async def _ingest_and_search(server: Any) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    async with Client(server, read_timeout_seconds=120) as client:
        names = sorted(t.name for t in (await client.list_tools()).tools)
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert tools["ingest"].annotations.destructive_hint is False and tools["search"].annotations.read_only_hint
        r = await client.call_tool("ingest", {"collection": "notes", "files": [
            {"name": "tokens.md", "text": "# Tokens\n\nAccess tokens expire after ten minutes.\n"}]})
        assert not r.is_error, r.content[0].text
        s = await client.call_tool("search", {"collection": "notes", "question": "When do access tokens expire?"})
        return names, json.loads(r.content[0].text), json.loads(s.content[0].text)


def test_ingest_is_offered_only_with_allow_ingest(guide_data: Path, tmp_path: Path) -> None:
    import shutil

    data = tmp_path / "data"
    shutil.copytree(guide_data, data)
    server = example.stdio_server("--data-dir", str(data), env=_env())
    server.args.append("--allow-ingest")
    names, ingested, found = asyncio.run(_ingest_and_search(server))
    assert names == sorted(READ_ONLY | {"ingest"})
    assert ingested["files"][0]["status"] == "added"
    assert found["evidence"][0]["path"] == "tokens.md"
