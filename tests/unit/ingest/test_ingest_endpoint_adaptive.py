"""An embedding endpoint that is slow, overloaded or dies mid-ingest (issue 43, items 1-3 and 7):
requests sized to the server, nothing embedded twice, errors that say what to change, and a
failed first ingest that leaves no empty collection behind. Against the scripted embeddings
server on 127.0.0.1, which computes one request at a time like a CPU server
(``seconds_per_text``)."""

from __future__ import annotations

import json
import time
from typing import Iterator

import pytest

from ragcore.cli.main import main
from ragcore.encoders.base import EmbedError
from ragcore.encoders.openai_embed import OpenAIEmbedder
from tests.conftest import write_corpus
from bench.support.scripted_embeddings import Fail, Hang, ScriptedEmbeddingServer
from tests.unit.ingest.test_ingest_endpoint import corpus, endpoint_settings


@pytest.fixture
def server() -> Iterator[ScriptedEmbeddingServer]:
    with ScriptedEmbeddingServer(dim=48) as s:
        yield s


def test_a_slow_sequential_server_is_not_flooded(server) -> None:
    # 20 ms of model time per text, one request at a time. At the old fixed sizing (64 texts a request,
    # 4 in flight) the later requests waited 2.6-3.8 s for the earlier ones and timed out at 2 s.
    server.seconds_per_text = 0.02
    enc = OpenAIEmbedder("scripted-embed", base_url=server.base_url, timeout_s=2.0, batch=64, concurrency=4,
                         max_retries=1, backoff_s=0.01, dimension=48)
    mark = time.monotonic()  # what Aimd.mark() gives
    vecs = enc.encode_uncached([f"text number {i} " + "word " * 80 for i in range(256)])
    assert vecs.shape == (256, 48)
    sizes = [len(r.body["input"]) for r in server.requests]
    assert sizes[0] < 64 and max(sizes) < 64  # started small, and stayed within what the timeout allows
    got = enc.sustained(mark)
    assert got is not None and got.texts == 256 and got.texts_per_s > 0 and got.tokens_per_s > 0
    assert 1 <= got.in_flight <= 4 and got.request_texts >= 1


def test_a_timeout_halves_the_request_and_the_requests_in_flight(server) -> None:
    enc = OpenAIEmbedder("scripted-embed", base_url=server.base_url, timeout_s=0.5, batch=64, concurrency=4,
                         max_retries=3, backoff_s=0.01, dimension=48)
    size, in_flight = enc.aimd.size, enc.aimd.in_flight
    server.script(Hang(2.0))
    assert enc.encode_uncached(["a text that timed out once"]).shape == (1, 48)
    assert enc.aimd.size < size + 512 and enc.aimd.in_flight <= max(1, in_flight // 2) + 1
    assert [r.body["input"] for r in server.requests] == [["a text that timed out once"]] * 2


def test_giving_up_says_which_setting_to_change_and_what_is_kept(tmp_path, server) -> None:
    enc = OpenAIEmbedder("scripted-embed", base_url=server.base_url, timeout_s=0.3, batch=8, concurrency=2,
                         max_retries=1, backoff_s=0.01, dimension=48, cache_path=tmp_path / "cache.sqlite3")
    enc.encode_for_ingest(["kept one", "kept two"])
    server.script(Hang(2.0), Hang(2.0), Hang(2.0))
    with pytest.raises(EmbedError) as err:
        enc.encode_for_ingest(["slow text"])
    msg = str(err.value)
    assert "did not answer within 0.3 s" in msg and "RAGCORE_EMBED_TIMEOUT_S to" in msg
    assert "RAGCORE_EMBED_CONCURRENCY to 1" in msg and "observed latency" in msg
    assert "2 chunk(s) embedded before the failure are kept" in msg


def test_an_interrupted_ingest_sends_no_chunk_twice(tmp_path, make_engine, server) -> None:
    engine = make_engine()
    s = endpoint_settings(engine, server).with_(embed_concurrency=1)
    root = write_corpus(tmp_path / "c", corpus(n_files=8))
    # the probe and three requests are answered, then the endpoint "dies" (refuses everything)
    server.script(Hang(0), Hang(0), Hang(0), Hang(0), *[Fail(400, body='{"error": "gone"}')] * 50)
    with pytest.raises(EmbedError):
        engine.ingest([root], "ep", settings=s, calibrate=False)
    answered = {t for r in server.requests[:4] for t in r.body["input"]} - {"dimension probe"}
    assert len(answered) >= 8
    n = len(server.requests)
    while server._next() is not None:  # the endpoint is back
        pass
    report = engine.ingest([root], "ep", settings=s, calibrate=False)
    assert report.count("failed") == 0 and report.chunks_written > 0
    resent = {t for r in server.requests[n:] for t in r.body["input"]} & answered
    assert not resent  # every text the endpoint had answered was kept and not sent again
    assert report.endpoint is not None and report.endpoint["texts_per_s"] > 0 and report.endpoint["in_flight"] >= 1


def test_a_failed_first_ingest_leaves_no_empty_collection(tmp_path, make_engine, server) -> None:
    engine = make_engine()
    s = endpoint_settings(engine, server)
    root = write_corpus(tmp_path / "c", corpus(n_files=2))
    server.script(Hang(0), *[Fail(401)] * 20)  # the probe passes, then every request is refused
    with pytest.raises(EmbedError, match="RAGCORE_EMBED_API_KEY"):
        engine.ingest([root], "new-one", settings=s, calibrate=False)
    assert "new-one" not in [c.name for c in engine.collections()]  # not listed (nor in /v1/models) as an empty collection


def test_the_ingest_report_says_what_the_endpoint_sustained(tmp_path, make_engine, server, capsys) -> None:
    engine = make_engine()
    root = write_corpus(tmp_path / "c", corpus(n_files=2))
    env = {"RAGCORE_DATA_DIR": str(engine.settings.data_dir), "RAGCORE_EMBED_BASE_URL": server.base_url,
           "RAGCORE_EMBED_MODEL": "openai:scripted-embed", "RAGCORE_CHUNK_SIZE": "40", "RAGCORE_CHUNK_OVERLAP": "0"}
    engine.close()
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        assert main(["ingest", str(root), "-c", "ep", "--no-calibrate", "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert {"texts_per_s", "tokens_per_s", "request_texts", "in_flight"} <= set(report["endpoint"])
        other = write_corpus(tmp_path / "d", corpus(n_files=2, tag=" v2"))  # texts the disk cache does not hold
        assert main(["ingest", str(other), "-c", "ep2", "--no-calibrate"]) == 0
        assert "embedding endpoint sustained" in capsys.readouterr().out


def test_a_request_sent_behind_a_big_one_waits_for_it_within_its_timeout() -> None:
    # through llama.cpp on a loaded machine (bench/results/ingest-endpoint-llama-cpp.md) a 6-token request
    # sent behind a 915-token one timed out at the 10 s floor while it waited, and the server computed it
    # anyway: the timeout now covers the tokens already in flight ahead of it
    from ragcore.encoders.adaptive import TIMEOUT_FACTOR, TIMEOUT_FLOOR_S, Aimd

    aimd = Aimd(max_texts=64, max_in_flight=2, timeout_s=600.0)
    aimd.succeeded(texts=4, tokens=100, start=0.0, end=1.0)  # 10 ms a token
    with aimd.slot(915) as first:
        with aimd.slot(6) as second:
            assert second == pytest.approx(TIMEOUT_FACTOR * 0.01 * (6 + 915))  # 92 s, not the 10 s floor
    assert first == pytest.approx(max(TIMEOUT_FLOOR_S, TIMEOUT_FACTOR * 0.01 * 915 * aimd.in_flight))
    with aimd.slot(6) as alone:  # nothing ahead: as before
        assert alone == TIMEOUT_FLOOR_S and aimd.active_tokens == 6
    assert aimd.active_tokens == 0
