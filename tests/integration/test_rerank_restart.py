"""A reranker killed and restarted (issue 43, item 4): a question asked while it is dead answers in
the fused order within the rerank deadline, with a note naming the setting; once it is back, the next
question is reranked again (nothing about the failure sticks).

* ``RAGCORE_RERANK=endpoint:…``: llama-cpp-python 0.3.x's server has no rerank route, so the endpoint
  is the scripted rerank server of bench/support/scripted_embeddings.py (a real HTTP server on
  127.0.0.1 speaking the protocol), killed while it is answering the question and started again on
  the same port.
* ``RAGCORE_RERANK=llm``: the chat model is the real llama.cpp server (llama-cpp-python serving the
  Gemma 3 270M GGUF, tests/support/llama_server.py), killed and started again on the same port.
"""

from __future__ import annotations

import threading
import time

import pytest

from ragcore.settings.config import LlmSettings
from tests.integration.test_models_rerank import QUESTION, engine  # noqa: F401 (the engine fixture: its shop)
from bench.support.scripted_embeddings import Hang, ScriptedEmbeddingServer


def reranked(answer) -> bool:
    return any(c.rerank_score is not None for c in answer.candidates)


def rerank_notes(answer) -> list[str]:
    return [n for n in answer.validation.notes if n.startswith("rerank (")]


def test_a_rerank_endpoint_killed_mid_question_and_restarted(engine) -> None:
    server = ScriptedEmbeddingServer().start()
    port = server._server.server_address[1]  # type: ignore[union-attr]
    s = engine.settings.with_(collection="shop", rerank="endpoint:scripted-rerank", rerank_base_url=server.base_url,
                              abstain_bar=0.0, calibrated_bar=False)  # RAGCORE_RERANK_TIMEOUT_S at its default
    fused = engine.ask(QUESTION, settings=s.with_(rerank=None))
    try:
        up = engine.ask(QUESTION, settings=s)
        assert reranked(up) and not rerank_notes(up)

        server.script(Hang(60.0))  # the question's rerank request hangs until the server is killed under it
        n = len(server.requests)
        killer = threading.Thread(target=lambda: (_wait(lambda: len(server.requests) > n), server.stop()), daemon=True)
        killer.start()
        t0 = time.monotonic()
        dead = engine.ask(QUESTION, settings=s)
        elapsed = time.monotonic() - t0
        killer.join(timeout=5)
        assert elapsed < s.rerank_timeout_s and dead.metadata["latency_ms"]["rerank"] < s.rerank_timeout_s * 1e3
        assert dead.status == fused.status and dead.answer == fused.answer and not reranked(dead)
        [note] = rerank_notes(dead)
        assert "fused order was kept" in note and "closed the connection" in note and "RAGCORE_RERANK" in note
        again = engine.ask(QUESTION, settings=s)  # still dead: refused at once, the setting to check named
        assert "cannot reach" in rerank_notes(again)[0] and "RAGCORE_RERANK_BASE_URL" in rerank_notes(again)[0]

        server = ScriptedEmbeddingServer(port=port).start()  # back, same address
        back = engine.ask(QUESTION, settings=s)
        assert reranked(back) and not rerank_notes(back) and server.requests  # reranked by the new process
    finally:
        server.stop()


def _wait(cond, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond() and time.monotonic() < deadline:
        time.sleep(0.01)


@pytest.mark.real_llm
@pytest.mark.slow
def test_the_chat_model_killed_during_rerank_llm_and_restarted(tmp_path, engine) -> None:
    from tests.support.llama_server import require_llama, start_llama

    require_llama()
    server = start_llama(tmp_path, embedding=False, n_ctx=4096)
    # a CPU server on this shared machine reads the listwise prompt at ~20-40 tokens/s: the deadlines are
    # raised for it (RAGCORE_RERANK_TIMEOUT_S, RAGCORE_LLM_TIMEOUT_S / _DEADLINE_S), the rest at defaults
    llm = LlmSettings(base_url=server.base, api_key="local", model="local", timeout_s=240, deadline_s=480,
                      max_output_tokens=40, context_window=4096)
    s = engine.settings.with_(collection="shop", rerank="llm", llm=llm, rerank_timeout_s=240.0, abstain_bar=0.0,
                              calibrated_bar=False)
    try:
        # before the kill only the rerank is looked at: retrieval alone, without the answer's own call to the
        # model (a CPU model reads each prompt at 20-40 tokens/s here); the answer is checked after the restart
        up = engine.retrieve(QUESTION, s)
        up_notes = [n for n in up.notes if n.startswith("rerank (")]
        # the 270M model's reply may name no passage; either way the chat model was asked and answered
        assert reranked(up) or "names no passage" in " ".join(up_notes), up_notes

        server.kill()
        t0 = time.monotonic()
        dead = engine.ask(QUESTION, settings=s)
        elapsed = time.monotonic() - t0
        assert elapsed < s.rerank_timeout_s + llm.deadline_s  # the rerank's deadline, then the answer's
        assert dead.status == "partial" and dead.answer.strip() and dead.citations  # quoted from the sources
        [note] = rerank_notes(dead)
        assert "fused order was kept" in note and "RAGCORE_RERANK" in note and not reranked(dead)
        assert dead.error_message and "extractive answer" in dead.error_message

        server = start_llama(tmp_path, embedding=False, n_ctx=4096, port=server.port)  # back, same address
        back = engine.ask(QUESTION, settings=s)
        assert reranked(back) or "names no passage" in " ".join(rerank_notes(back)), rerank_notes(back)
        assert back.error_message is None  # the answer is the model's again
    finally:
        server.stop()
