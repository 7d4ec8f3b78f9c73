"""`ragcore bench ingest` on a tiny corpus: both sides run on the same files, each side's texts
are replayed through the bare model, and the figures that README quotes are in the report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.cli import bench_ingest
from tests.conftest import write_corpus


@pytest.mark.slow
def test_bench_ingest_reports_wall_tokens_and_the_model_floor(tmp_path: Path) -> None:
    corpus = write_corpus(tmp_path / "corpus", {
        f"page{i}.md": f"# Page {i}\n\n" + " ".join(f"Sentence {j} of page {i} talks about topic {j % 7}." for j in range(60))
        for i in range(3)})
    out = bench_ingest(corpus, None, tmp_path / "results", runs=1)
    (run,) = out["runs"]
    ours, quick = run["ragcore"], run["llamaindex_quickstart"]
    assert ours["tokens"] == run["model_ceiling"]["tokens"] > 0  # the ceiling replays exactly ragcore's texts
    assert quick["tokens"] == run["quickstart_model_ceiling"]["tokens"] > 0
    assert ours["seconds"] >= ours["ingest_seconds"] > 0
    assert out["model_floor_ratio"] == pytest.approx(
        run["model_ceiling"]["seconds"] / run["quickstart_model_ceiling"]["seconds"], abs=0.01)
    md = (tmp_path / "results" / "ingest.md").read_text()
    assert "raw model, quick-start's texts" in md and "Model floor" in md
    assert json.loads((tmp_path / "results" / "ingest.json").read_text())["files"] == 3


@pytest.mark.slow
def test_bench_cold_times_each_question_in_new_processes_and_records_its_answer(tmp_path: Path, make_engine) -> None:
    from bench.cli import bench_cold

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "auth.md").write_text(
        "# Login\n\nThe login_required decorator redirects anonymous users to the login page.\n", encoding="utf-8")
    eng = make_engine(collection="src")
    eng.ingest([corpus], "src", calibrate=False)
    eng.close()
    q = "What does the login_required decorator do?"
    out = bench_cold("src", 0, 1, [q], tmp_path / "results", eng.settings)
    (row,) = out["questions"]
    assert row["question"] == q and row["status"] in {"ok", "abstained"}
    assert all(len(v) == 1 and v[0] > 0 for v in row["wall_s"].values())
    assert row["phases_snapshots_on"]["qdrant_opened"] is False
    md = (tmp_path / "results" / "query.md").read_text()
    assert "## Cold question" in md and q in md and row["status"] in md


def test_bench_writes_alternates_the_three_stores_on_the_same_chunks(tmp_path: Path, make_engine) -> None:
    from bench.writes import MODES, bench_writes

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for i in range(3):
        (corpus / f"page{i}.md").write_text(f"# Page {i}\n\n## Part\n\nPage {i} says something about topic {i}.\n",
                                            encoding="utf-8")
    eng = make_engine(collection="src")
    eng.ingest([corpus], "src", calibrate=False)
    eng.close()
    out = bench_writes("src", 20, 2, 2, tmp_path / "results", eng.settings)
    assert out["collection_points"] == 20 and out["batch_points"] == 2
    assert all(len(out["seconds"][m]) == 2 and all(s >= 0 for s in out["seconds"][m]) for m in MODES)
    assert len(out["ratio_per_pair"]) == 2 and len(out["edge_ratio_per_run"]) == 2
    md = (tmp_path / "results" / "writes.md").read_text()
    assert "rollback journal" in md and "write-ahead log" in md and "Qdrant Edge" in md
    assert json.loads((tmp_path / "results" / "writes.json").read_text())["bench"] == "writes"
