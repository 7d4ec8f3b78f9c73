"""``/mcp`` on ``ragcore serve`` takes the same question slots and deadline as the HTTP API: a question
past the deadline ends with the service's deadline message, and a call beyond the slots and the queue
is refused as busy, both as the tool's output or error text an agent can read."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp")

from mcp import Client  # noqa: E402

from tests.integration.service.conftest import scripted_llm  # noqa: E402
from bench.support.scripted_openai import Hang  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
QUESTION = "What is reciprocal rank fusion?"


def _example():
    spec = importlib.util.spec_from_file_location("mcp_client_example", REPO / "examples" / "mcp_client.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_deadline_and_busy_over_mcp(guide_data: Path, start_server, llm_server) -> None:
    example = _example()
    served = start_server(guide_data, llm=scripted_llm(llm_server), deadline_s=10, max_concurrent=1, max_queued=0)
    llm_server.script([Hang(seconds=60, pieces=["Reciprocal"])])
    before = len(llm_server.generation_requests())
    results: dict[str, object] = {}

    async def ask() -> None:
        async with Client(example.http_server(served.url + "/mcp"), read_timeout_seconds=120) as client:
            results["ask"] = await client.call_tool("ask", {"collection": "guide", "question": QUESTION})

    async def search_while_busy() -> None:
        # once the model has the question, it holds the only slot (until the 10 s deadline)
        for _ in range(600):
            if len(llm_server.generation_requests()) > before:
                break
            await anyio.sleep(0.1)
        async with Client(example.http_server(served.url + "/mcp"), read_timeout_seconds=120) as client:
            results["search"] = await client.call_tool("search", {"collection": "guide", "question": QUESTION})

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            tg.start_soon(search_while_busy)

    anyio.run(main)
    ask_result, search_result = results["ask"], results["search"]
    text = ask_result.content[0].text
    assert "deadline of 10 s" in (text if ask_result.is_error else json.loads(text)["error_message"])
    assert search_result.is_error and "busy" in search_result.content[0].text
