"""The rerank stage against real servers on 127.0.0.1: the scripted rerank endpoint
(bench/support/scripted_embeddings.py) and the scripted chat server (RAGCORE_RERANK=llm), over
a real engine (embedded Qdrant, the real MiniLM). A reranker that fails or hangs leaves an
answer in the fused order with a note."""

from __future__ import annotations

from typing import Iterator

import pytest
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from ragcore.llamaindex.rerank import RerankPostprocessor
from ragcore.retrieval.rerank import EndpointReranker, LlmReranker, rerank_candidates
from ragcore.settings.config import LlmSettings
from tests.conftest import write_corpus
from bench.support.scripted_embeddings import Drop, Fail, Hang, ScriptedEmbeddingServer
from bench.support.scripted_openai import Text

CORPUS = {
    "refunds.md": "# Refunds\n\nRefunds are issued within 14 days of purchase for unused items.\n\n"
                  "## Exchanges\n\nExchanges of unused items are free within 30 days.\n",
    "shipping.md": "# Shipping\n\nOrders ship within two business days. Express shipping costs extra.\n",
    "returns.md": "# Returns\n\nReturned items must be unused and in their original packaging to be refunded.\n",
}
QUESTION = "How many days until refunds are issued for unused items?"


@pytest.fixture
def rr_server() -> Iterator[ScriptedEmbeddingServer]:
    with ScriptedEmbeddingServer() as s:
        yield s


@pytest.fixture
def engine(tmp_path, make_engine):
    e = make_engine()
    e.ingest([write_corpus(tmp_path / "c", CORPUS)], "shop", calibrate=False)
    return e


def settings(engine, server, **kw):
    return engine.settings.with_(collection="shop", rerank="endpoint:scripted-rerank", rerank_base_url=server.base_url,
                                 abstain_bar=0.0, calibrated_bar=False, **kw)


def test_endpoint_rerank_reorders_the_pool_and_is_its_own_stage(engine, rr_server) -> None:
    s = settings(engine, rr_server)
    result = engine.retrieve(QUESTION, s)
    reranked = [c for c in result.candidates if c.rerank_score is not None]
    assert reranked and "rerank" in result.latency_ms and not result.notes
    scores = [c.rerank_score for c in sorted(reranked, key=lambda c: c.rank)]
    assert scores == sorted(scores, reverse=True)  # the pool's head is in rerank order
    assert [c.rank for c in sorted(result.candidates, key=lambda c: c.rank)] == list(range(1, len(result.candidates) + 1))
    body = rr_server.requests[-1].body
    assert rr_server.requests[-1].path == "/v1/rerank" and body["query"] == QUESTION and body["model"] == "scripted-rerank"
    answer = engine.ask(QUESTION, settings=s)
    assert "rerank" in answer.metadata["latency_ms"] and answer.status == "ok", answer.error_message


def test_the_threshold_can_apply_to_the_rerank_score(engine, rr_server) -> None:
    result = engine.retrieve(QUESTION, settings(engine, rr_server, rerank_threshold=0.5))
    cut = [c for c in result.candidates if c.rerank_score is not None and c.rerank_score < 0.5]
    assert cut and all(not c.kept and c.dropped_reason == "threshold" for c in cut)
    assert all(c.rerank_score >= 0.5 for c in result.candidates if c.kept)


def test_a_rerank_endpoint_that_dies_mid_question_leaves_an_answer_with_a_note(engine, rr_server) -> None:
    s = settings(engine, rr_server)
    baseline = engine.ask(QUESTION, settings=s.with_(rerank=None))
    rr_server.stop()  # the endpoint is gone
    answer = engine.ask(QUESTION, settings=s)
    assert answer.status == baseline.status and answer.answer == baseline.answer  # the fused order's answer
    assert any(n.startswith("rerank (endpoint:scripted-rerank) failed") for n in answer.validation.notes)
    from ragcore.cli.main import render_answer

    assert "note: rerank (endpoint:scripted-rerank) failed, so the fused order was kept" in render_answer(answer)


@pytest.mark.parametrize("reply", [Fail(500), Drop()])
def test_a_failing_rerank_reply_degrades(engine, rr_server, reply) -> None:
    rr_server.script(reply)
    result = engine.retrieve(QUESTION, settings(engine, rr_server))
    assert result.notes and all(c.rerank_score is None for c in result.candidates)


def test_a_slow_reranker_is_abandoned_at_its_timeout(engine, rr_server) -> None:
    rr_server.script(Hang(3.0))  # it would answer, with scores, after 3 s: the note proves the deadline came first
    result = engine.retrieve(QUESTION, settings(engine, rr_server, rerank_timeout_s=0.5))
    assert "within 0.5 s" in result.notes[0] and result.kept  # the deadline or the client's own read timeout, whichever first
    assert all(c.rerank_score is None for c in result.candidates)


def test_no_endpoint_configured_is_a_note_not_a_failure(engine) -> None:
    s = engine.settings.with_(collection="shop", rerank="endpoint:m", abstain_bar=0.0, calibrated_bar=False)
    answer = engine.ask(QUESTION, settings=s)
    assert answer.status != "error" and any("RAGCORE_RERANK_BASE_URL" in n for n in answer.validation.notes)


def test_llm_rerank_is_one_listwise_call_to_the_chat_model(engine, openai_server) -> None:
    llm = LlmSettings(base_url=openai_server.base_url, api_key="k", model="test-model", max_retries=0)
    # a generous rerank timeout: what is tested is the call, and at load 18-25 the default 10 s ran out
    s = engine.settings.with_(collection="shop", rerank="llm", llm=llm, rerank_timeout_s=120.0)
    pool = engine.hybrid_search.pool("shop", QUESTION, s).candidates
    n = min(len(pool), s.rerank_candidates)
    openai_server.script([Text([f"[{n}, 1]"])])
    result = engine.hybrid_search.search("shop", QUESTION, s)
    first = sorted(result.candidates, key=lambda c: c.rank)[:2]
    assert [c.chunk.chunk_id for c in first] == [pool[n - 1].chunk.chunk_id, pool[0].chunk.chunk_id]
    prompt = openai_server.generation_requests()[-1].body["messages"][1]["content"]
    assert QUESTION in prompt and "<passage id=1>" in prompt


def test_llm_reranker_reads_lists_and_ignores_bad_ids() -> None:
    r = LlmReranker(lambda msgs: "Ranking: [3, 3, 9, 1]")
    assert r.scores("q", ["a", "b", "c"]) == [pytest.approx(2 / 3), 0.0, 1.0]
    with pytest.raises(Exception, match="names no passage"):
        LlmReranker(lambda msgs: "none of them").scores("q", ["a"])


def test_endpoint_reranker_falls_back_to_the_other_path(rr_server) -> None:
    r = EndpointReranker("m", rr_server.root_url, None, 5.0)  # no /v1: /rerank first
    assert r.scores("refund days", ["refund in 14 days", "shipping"]) == [1.0, 0.0]
    assert rr_server.requests[-1].path == "/rerank"


def test_llamaindex_postprocessor_reorders_nodes_and_degrades(rr_server) -> None:
    nodes = [NodeWithScore(node=TextNode(text=t), score=s) for t, s in
             (("shipping costs extra", 0.9), ("refunds within 14 days", 0.8))]
    pp = RerankPostprocessor(EndpointReranker("m", rr_server.base_url, None, 5.0), top_n=5)
    out = pp.postprocess_nodes(nodes, QueryBundle("when are refunds issued"))
    assert out[0].node.get_content() == "refunds within 14 days" and out[0].node.metadata["rerank_score"] > 0
    rr_server.script(Fail(503))
    again = pp.postprocess_nodes([NodeWithScore(node=TextNode(text="x"), score=1.0)], QueryBundle("q"))
    assert len(again) == 1 and "fused order was kept" in again[0].node.metadata["rerank_note"] and pp.last_note


def test_the_chunk_table_and_the_probe_show_the_rerank_score(engine, rr_server) -> None:
    from ui.labtable import lab_columns, lab_rows
    from ui.probe import probe, signal_cells

    s = settings(engine, rr_server)
    result = engine.retrieve(QUESTION, s)
    assert "rerank" in [c.key for c in lab_columns(result, fusion="rrf", fields_on=False, docs_on=False)]
    assert lab_rows(result)[0]["rerank"] == max(c.rerank_score for c in result.candidates if c.rerank_score is not None)
    plain = engine.retrieve(QUESTION, s.with_(rerank=None))
    assert "rerank" not in [c.key for c in lab_columns(plain, fusion="rrf", fields_on=False, docs_on=False)]
    pr = probe(engine, QUESTION, s, collection="shop", path="refunds.md")
    assert pr.rerank_score is not None and "rerank score" in signal_cells(pr)
