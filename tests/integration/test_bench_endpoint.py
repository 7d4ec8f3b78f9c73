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
