"""The ``openai:<model>`` source against a real HTTP server on 127.0.0.1 that speaks the embeddings
protocol and fails on demand (bench/support/scripted_embeddings.py)."""

from __future__ import annotations

import logging
import time
from typing import Iterator

import numpy as np
import pytest

from ragcore.encoders.base import EmbedError
from ragcore.encoders.openai_embed import OpenAIEmbedder
from bench.support.scripted_embeddings import (
    Drop, Fail, Fewer, Hang, NaNs, PerToken, ScriptedEmbeddingServer, WrongDim, bag_vector,
)
from bench.support.scripted_openai import unused_port

KEY = "sk-test-secret-key-123456"


@pytest.fixture
def server() -> Iterator[ScriptedEmbeddingServer]:
    with ScriptedEmbeddingServer(dim=32) as s:
        yield s


def embedder(server: ScriptedEmbeddingServer, **kw) -> OpenAIEmbedder:
    kw.setdefault("backoff_s", 0.01)
    return OpenAIEmbedder("scripted-embed", base_url=server.base_url, api_key=KEY, **kw)


def test_vectors_come_back_in_input_order_unit_length_with_the_key_sent(server) -> None:
    texts = ["alpha beta", "gamma", "alpha beta gamma delta", ""]
    vecs = embedder(server, batch=3).encode(texts)
    assert vecs.shape == (4, 32)
    for t, v in zip(texts, vecs):  # the server answers in reverse index order: the client sorts
        expected = np.asarray(bag_vector(t or " ", 32), dtype=np.float32)
        assert np.allclose(v, expected / np.linalg.norm(expected), atol=1e-6)
    assert all(r.authorization == f"Bearer {KEY}" for r in server.requests)
    assert [len(r.body["input"]) for r in server.requests] == [3, 1]  # batched by `batch`
    assert server.requests[0].body["model"] == "scripted-embed"


def test_dimension_is_discovered_from_the_first_response(server) -> None:
    enc = embedder(server)
    assert enc.dimension() == 32
    rec = enc.record()
    assert (rec.source, rec.name, rec.dimension, rec.spec) == ("openai", "scripted-embed", 32, "openai:scripted-embed")


def test_several_requests_in_flight(server) -> None:
    server.script(*[Hang(0.5)] * 4)
    embedder(server, batch=1, concurrency=4, dimension=32).encode([f"text {i}" for i in range(4)])
    assert server.max_in_flight >= 2  # the slow replies were awaited together, not one after another
    assert server.max_in_flight <= 4


def test_429_and_500_are_retried_with_backoff(server) -> None:
    server.script(Fail(429, retry_after=0.2), Fail(500), Fail(503))
    t0 = time.perf_counter()
    vecs = embedder(server, max_retries=4).encode(["retried text"])
    assert vecs.shape == (1, 32) and len(server.requests) == 4
    assert time.perf_counter() - t0 >= 0.2  # Retry-After was honoured


def test_retries_give_up_with_a_message_that_never_shows_the_key(server, caplog) -> None:
    server.script(*[Fail(500, body=f'{{"error": "bad key {KEY}"}}')] * 3)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(EmbedError) as err:
        embedder(server, max_retries=2).encode(["x"])
    msg = str(err.value)
    assert "HTTP 500 after 3 attempts" in msg and KEY not in msg and "***" in msg
    assert KEY not in caplog.text and KEY not in repr(embedder(server))


def test_401_is_not_retried_and_names_the_setting(server) -> None:
    server.script(Fail(401))
    with pytest.raises(EmbedError, match="RAGCORE_EMBED_API_KEY"):
        embedder(server).encode(["x"])
    assert len(server.requests) == 1


def test_a_server_that_hangs_times_out(server) -> None:
    server.script(Hang(20.0), Hang(20.0))
    t0 = time.perf_counter()
    with pytest.raises(EmbedError, match="did not answer within 0.3 s"):
        embedder(server, timeout_s=0.3, max_retries=1).encode(["slow"])
    assert time.perf_counter() - t0 < 15  # about a second quiet (two attempts and a backoff), the hangs 20 s


def test_a_dropped_connection_is_retried(server) -> None:
    server.script(Drop())
    assert embedder(server).encode(["after a drop"]).shape == (1, 32)


def test_unreachable_endpoint_fails_clearly() -> None:
    enc = OpenAIEmbedder("m", base_url=f"http://127.0.0.1:{unused_port()}/v1", max_retries=1, backoff_s=0.01)
    with pytest.raises(EmbedError, match="cannot reach the embedding endpoint"):
        enc.encode(["x"])


@pytest.mark.parametrize("reply, match", [
    (WrongDim(16), "returned 16-d vectors; this model's vectors are 32-d"),
    (NaNs(), "NaN"),
    (Fewer(), "returned 1 vectors for 2 texts"),
])
def test_bad_responses_are_refused(server, reply, match) -> None:
    enc = embedder(server, dimension=32)
    server.script(reply)
    with pytest.raises(EmbedError, match=match):
        enc.encode(["first text", "second text"])


def test_per_token_vectors_are_mean_pooled_and_recorded(server) -> None:
    server.script(PerToken())
    enc = embedder(server)
    v = enc.encode(["alpha beta"])[0]
    expected = (np.asarray(bag_vector("alpha", 32)) + np.asarray(bag_vector("beta", 32))) / 2
    assert np.allclose(v, expected / np.linalg.norm(expected), atol=1e-6)
    assert enc.record().pooling == "mean over tokens (client)"


def test_prefixes_go_on_queries_and_documents(server) -> None:
    enc = embedder(server, query_prefix="query: ", document_prefix="passage: ")
    enc.encode_queries(["what"])
    enc.encode(["text"])
    assert [r.body["input"] for r in server.requests] == [["query: what"], ["passage: text"]]


def test_no_endpoint_configured_says_which_setting() -> None:
    with pytest.raises(EmbedError, match="RAGCORE_EMBED_BASE_URL"):
        OpenAIEmbedder("text-embedding-3-small", base_url=None)
