"""Long calls over MCP: ``ask`` reports progress as the question passes its stages, and a call the
client abandons (its timeout sends ``notifications/cancelled``) stops the question: the engine
closes the model's HTTP stream (the scripted OpenAI-protocol server sees the client go)."""

from __future__ import annotations

import time
from dataclasses import replace

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402

from ragcore.engine.engine import Engine  # noqa: E402
from ragcore.service.mcp.server import build_server  # noqa: E402
from ragcore.service.mcp.tools import RagTools  # noqa: E402
from ragcore.service.limits import Slots  # noqa: E402
from tests.integration.service.conftest import base_settings, scripted_llm  # noqa: E402
from bench.support.scripted_openai import Hang, Text  # noqa: E402

QUESTION = "What is reciprocal rank fusion?"


def _server(guide_data, encoder, llm_server):
    # the model's timeout and the deadline are both past the scripted hang: only a cancel ends it sooner
    llm = replace(scripted_llm(llm_server), timeout_s=300)
    engine = Engine(base_settings(guide_data, llm=llm), encoder=encoder)
    return engine, build_server(RagTools(engine, Slots(2, 4, 1), 600.0))


def test_ask_reports_progress(guide_data, encoder, llm_server) -> None:
    engine, server = _server(guide_data, encoder, llm_server)
    llm_server.script([Text(["Reciprocal Rank Fusion ", "fuses rankings by rank [1]."])])
    seen: list[tuple[float, float | None, str | None]] = []

    async def progress(p, total, message) -> None:
        seen.append((p, total, message))

    async def main():
        async with Client(server) as client:
            return await client.call_tool("ask", {"collection": "guide", "question": QUESTION}, progress_callback=progress)

    try:
        result = anyio.run(main)
    finally:
        engine.close()
    assert not result.is_error
    assert [m for _, _, m in seen] == ["started", "sources", "message", "done"] and seen[-1][:2] == (4, 4)


def test_an_abandoned_call_stops_the_question(guide_data, encoder, llm_server) -> None:
    engine, server = _server(guide_data, encoder, llm_server)
    llm_server.script([Hang(seconds=120, pieces=["Reciprocal"])])
    before = len(llm_server.generation_requests())

    async def main():
        async with Client(server) as client:
            with pytest.raises(Exception):  # the client's own timeout: it sends notifications/cancelled
                await client.call_tool("ask", {"collection": "guide", "question": QUESTION}, read_timeout_seconds=3)
            return await client.call_tool("list_collections", {})  # the session goes on

    t0 = time.monotonic()
    try:
        after = anyio.run(main)
        rec = llm_server.wait_for_requests(before + 1)[before]
        assert rec.disconnected.wait(60), "the model's stream was not closed"
    finally:
        engine.close()
    assert not after.is_error
    assert rec.disconnected_at - t0 < 100  # before the 120 s hang, the model's timeout or the deadline would end it
