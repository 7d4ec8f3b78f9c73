"""`ragcore bench ingest --endpoint scripted:MS` on a tiny corpus: the scripted server runs in a
process of its own, the endpoint alone gets exactly the requests ragcore sent, and the share of the
endpoint's throughput is their ratio, written to the results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.endpoint import bench_endpoint
from ragcore.settings.config import RagcoreSettings
from tests.conftest import write_corpus


@pytest.mark.slow
def test_bench_endpoint_replays_ragcores_requests_against_a_server_in_its_own_process(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", {
        f"page{i}.md": f"# Page {i}\n\n## Part {i}\n\n" + " ".join(f"Sentence {j} of page {i} is about topic {j % 5}." for j in range(80))
        for i in range(3)})
    s = RagcoreSettings(data_dir=tmp_path / "unused", embed_request_size=4, embed_concurrency=2)
    out = bench_endpoint(corpus, None, tmp_path / "results", s, "scripted-embed", runs=1, scripted_ms=1)
    (run,) = out["runs"]
    ours, alone = run["ragcore"], run["endpoint_alone"]
    assert ours["failed_files"] == 0 and ours["chunks"] > 0
    assert ours["texts"] == alone["texts"] > ours["chunks"]  # the same texts, the headings among them
    assert ours["requests"] == alone["requests"] >= ours["texts"] / 4
    assert run["share_of_endpoint"] == pytest.approx(alone["seconds"] / ours["seconds"], abs=0.01)
    assert "its own process" in out["server"] and out["concurrency"] == 2
    assert json.loads((tmp_path / "results" / "ingest-endpoint.json").read_text())["files"] == 3
    assert "Median share of the endpoint's own throughput" in (tmp_path / "results" / "ingest-endpoint.md").read_text()


# llama-cpp-python 0.3.36's own lines (its server's log during `bench ingest --endpoint`): a delivered
# call, one whose client had timed out (no 200 line follows), then the next delivered call
LLAMA_LOG = """\
llama_perf_context_print:       total time =   22097.34 ms /   145 tokens
llama_perf_context_print:    graphs reused =          0
INFO:     127.0.0.1:45572 - "POST /v1/embeddings HTTP/1.1" 200 OK
llama_perf_context_print:        load time =    9319.55 ms
llama_perf_context_print: prompt eval time =   14367.41 ms /    94 tokens (  152.84 ms per token,     6.54 tokens per second)
llama_perf_context_print:       total time =   14370.76 ms /    95 tokens
llama_perf_context_print:    graphs reused =          0
llama_perf_context_print: prompt eval time =    2182.27 ms /     3 tokens (  727.42 ms per token,     1.37 tokens per second)
llama_perf_context_print:       total time =    2184.13 ms /     4 tokens
llama_perf_context_print:    graphs reused =          0
INFO:     127.0.0.1:44768 - "POST /v1/embeddings HTTP/1.1" 200 OK
"""


def test_the_server_log_gives_its_time_on_delivered_and_abandoned_calls(tmp_path: Path) -> None:
    from bench.endpoint import summary
    from bench.server_log import busy_since, log_size

    log = tmp_path / "server.log"
    log.write_text("INFO:     Uvicorn running on http://127.0.0.1:8000\n")
    start = log_size(log)
    with log.open("a") as f:
        f.write(LLAMA_LOG)
    busy = busy_since(log, start)
    assert (busy.calls, busy.tokens, busy.abandoned_calls) == (2, 149, 1)
    assert busy.seconds == pytest.approx(24.28147) and busy.abandoned_seconds == pytest.approx(14.37076)
    run = {"ragcore": {"seconds": 30.0, "texts": 9, "texts_per_s": 0.3, "requests": 2}, "server_busy": busy.as_dict(),
           "share_of_server_busy": round(busy.seconds / 30.0, 3)}
    payload = {"when": "now", "files": 1, "corpus": "demo", "model": "m", "server": "", "request_size": 64,
               "concurrency": 4, "machine": {"load_avg": [1, 1, 1], "cpus": 2}, "runs": [run],
               "share_of_endpoint": None, "share_of_server_busy": run["share_of_server_busy"]}
    text = summary(payload)  # no replay: no endpoint-alone rows
    assert "**0.809**" in text and "endpoint alone" not in text and "| 14.37 | | | 1 |" in text
