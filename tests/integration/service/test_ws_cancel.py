"""``rag.cancel`` on the WebSocket reaches questions that have not started yet (issue 43, item 7): a
cancel sent right after its ``rag.request``, and a cancel-all while a second question of the socket
still waits for a slot. A real ``ragcore serve`` whose engine talks to the scripted OpenAI server."""

from __future__ import annotations

import asyncio
import json

import pytest
import websockets

from tests.integration.service.conftest import scripted_llm
from bench.support.scripted_openai import Text

QUESTION = "How does hybrid mode fuse the dense and sparse rankings?"
SLOW = Text([f"w{i} " for i in range(60)] + ["[1]."], delay=0.1)  # 6 s unless stopped


@pytest.fixture(scope="module")
def served(start_server, guide_data, llm_server):
    # one question at a time, the next one waiting for the slot
    served = start_server(guide_data, llm=scripted_llm(llm_server), deadline_s=60, max_concurrent=1, max_queued=4)
    served.engine.ask(QUESTION)  # the first load of the indexes is not part of any test
    return served


@pytest.fixture(autouse=True)
def _drain(llm_server):
    while llm_server.pending:
        llm_server._next(models=False)


async def _until_done(ws, n: int) -> list[dict]:
    done: list[dict] = []
    async for raw in ws:
        msg = json.loads(raw)
        if msg["type"] == "rag.done":
            done.append(msg)
            if len(done) == n:
                break
    return done


def test_a_cancel_right_after_the_request_is_not_lost(served, llm_server) -> None:
    llm_server.script([SLOW])

    async def talk() -> list[dict]:
        async with websockets.connect(served.url.replace("http", "ws") + "/api/ws") as ws:
            await ws.send(json.dumps({"type": "rag.request", "question": QUESTION, "client_id": "c1"}))
            await ws.send(json.dumps({"type": "rag.cancel", "client_id": "c1"}))  # before rag.started came back
            return await _until_done(ws, 1)

    (done,) = asyncio.run(asyncio.wait_for(talk(), 60))
    assert done["data"]["status"] == "cancelled" and done["client_id"] == "c1"


def test_cancel_all_cancels_every_question_of_the_socket(served, llm_server) -> None:
    llm_server.script([SLOW, SLOW])

    async def talk() -> list[dict]:
        async with websockets.connect(served.url.replace("http", "ws") + "/api/ws") as ws:
            for cid in ("c1", "c2"):
                await ws.send(json.dumps({"type": "rag.request", "question": QUESTION, "client_id": cid}))
            async for raw in ws:  # c1 is answering; c2 waits for the slot
                if json.loads(raw)["type"] == "rag.token":
                    break
            await ws.send(json.dumps({"type": "rag.cancel"}))
            return await _until_done(ws, 2)

    done = asyncio.run(asyncio.wait_for(talk(), 60))
    assert sorted(d["client_id"] for d in done) == ["c1", "c2"]
    assert [d["data"]["status"] for d in done] == ["cancelled", "cancelled"]
