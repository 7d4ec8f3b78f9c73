"""`ragcore bench scale` at a tiny size: every installed engine gives the same exact results on
the same data, and the report carries every figure the issue asks for.

Real parts throughout: ragcore's chunker and BM25 on the demo corpus, the ONNX model for the
questions, Qdrant local mode, qdrant-edge-py and ragcore's query snapshot in temp folders.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import scale as bs
from bench.common import questions as _questions
from tests.conftest import REPO

DOCS = REPO / "demo"
SIZE = 200  # below the demo corpus's chunk count, so no chunk text repeats


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory, encoder) -> Path:
    wd = tmp_path_factory.mktemp("scale")
    base = bs._prepare(DOCS, _questions()[:8], wd, encoder)
    assert len(base.chunks) > SIZE
    bs.write_dense(wd / f"dense-{SIZE}.npy", SIZE)
    return wd


def _answers(engine: str, workdir: Path) -> list[dict]:
    """Write the engine's store, open it again (as a cold reader would) and answer every question."""
    spec = bs.ENGINES[engine]
    data = bs.load_dataset(workdir, SIZE)
    store = workdir / f"store-{engine}"
    spec.write(data, store)
    handle = spec.open(store)
    settings = bs.RagcoreSettings()
    out = [bs._answer(spec.pool(handle, qd, qs, 50), settings) for qd, qs in zip(data.base.q_dense, data.base.q_sparse)]
    close = getattr(handle, "close", None) or getattr(handle[0] if isinstance(handle, tuple) else None, "close", None)
    if close:
        close()
    return out


@pytest.mark.slow  # local mode writes ~30-100 points/s: 2-20 s here depending on the machine's load
def test_engines_agree_on_exact_search(workdir: Path) -> None:
    engines = [e for e in bs.available_engines() if e != "edge-hnsw"]  # HNSW is approximate by design
    answers = {e: _answers(e, workdir) for e in engines}
    ref = answers["ragcore-snapshot"]
    assert all(len(a["dense"]) == bs.TOP for a in ref)
    assert any(a["bm25_top"] and a["bm25_top"][0] > 0 for a in ref), "no question matched any BM25 term"
    for name, got in answers.items():
        g = bs.agreement(ref, got)
        assert g["dense_top10_same"] == 1.0, name
        assert g["bm25_top10_scores_same"] == 1.0, name
        assert g["hybrid_comparable_queries"] >= 1 and g["hybrid_top10_same"] == 1.0, name





@pytest.mark.slow
def test_bench_scale_report(tmp_path: Path, encoder) -> None:
    """The whole command path: each phase in its own process, the watchdog, JSON and Markdown."""
    limits = bs.RunLimits(repeats=1, phase_timeout_s=300)
    written = []
    payload = bs.run_scale([SIZE], bs.available_engines(), DOCS, _questions()[:5], tmp_path / "w", limits, encoder,
                           on_size=lambda p: written.append(bs.write_results(tmp_path / "res", p, "ragcore bench scale --test")))
    assert written, "results are written after each size"
    saved = json.loads((tmp_path / "res" / "scale.json").read_text())
    assert saved["command"] == "ragcore bench scale --test" and saved["sizes"] == [SIZE]
    rows = {r["engine"]: r for r in payload["runs"]}
    assert set(rows) == set(bs.available_engines())
    for name, r in rows.items():
        assert "error" not in r, (name, r.get("error"))
        for key in ("points_per_s", "open_s", "process_to_first_query_s", "query_p50_ms", "query_p95_ms",
                    "query_peak_rss_mb", "write_peak_rss_mb", "disk_mb"):
            assert r[key] > 0, (name, key)
        assert r["query_p50_ms"] <= r["query_p95_ms"]
        assert r["queries_timed"] == 5
    for name, g in payload["agreement"][str(SIZE)].items():
        if name not in ("reference", "edge-hnsw", "projection_recall"):
            assert g["dense_top10_same"] == 1.0, name
    # the snapshot's projection recall, by oversampling size: every M here is >= 200 rows, so exact
    assert payload["agreement"][str(SIZE)]["projection_recall"] == {str(m): 1.0 for m in bs.RECALL_AT}
    md = (tmp_path / "res" / "scale.md").read_text()
    assert "ragcore bench scale --test" in md and "## Which engine and why" in md and "load average" in md
    assert "## Dense recall of the projection" in md and "measured (UTC)" in md


def test_oversized_phase_is_killed(tmp_path: Path, workdir: Path) -> None:
    """The RSS watchdog stops a phase that passes the limit and says so (the machine is shared)."""
    limits = bs.RunLimits(rss_mb=20.0, phase_timeout_s=120)  # any Python process passes 20 MB
    res = bs.spawn("write", "ragcore-snapshot", workdir, SIZE, tmp_path / "store", limits)
    assert res["error"].startswith("killed: RSS")


def test_engine_skipped_over_its_size_limit() -> None:
    rows = [{"engine": "qdrant-local", "size": 100, "points_per_s": 100.0, "open_s": 1.0, "query_peak_rss_mb": 500.0,
             "disk_mb": 10.0, "query_p95_ms": 5.0}]
    x = bs.extrapolate(rows, "qdrant-local", 1000)
    assert x == {"from_size": 100, "write_s": 10.0, "open_s": 10.0, "query_peak_rss_mb": 5000.0, "disk_mb": 100.0,
                 "query_p95_ms": 50.0}
    assert "not run" in bs._row_md({"engine": "qdrant-local", "size": 1000, "skipped": "too slow", "extrapolated": x})


def test_merge_keeps_earlier_runs_and_commands() -> None:
    """A slow engine measured by a second command joins the first command's results."""
    row = {"points_per_s": 30.0, "open_s": 17.0, "open_first_query_s": 17.1, "query_peak_rss_mb": 500.0,
           "disk_mb": 100.0, "query_p95_ms": 40.0}
    old = {"runs": [{"engine": "qdrant-local", "size": 10_000, **row}, {"engine": "numpy-mmap", "size": 10_000, **row}],
           "engines": {"qdrant-local": "a", "numpy-mmap": "c"}, "sizes": [10_000], "load_avg_start": [1.0],
           "agreement": {"10000": {"reference": "numpy-mmap", "qdrant-local": {"dense_top10_same": 1.0}}},
           "command": "first"}
    new = {"runs": [{"engine": "numpy-mmap", "size": 10_000, **row, "open_s": 0.01},
                    {"engine": "qdrant-local", "size": 1_000_000, "skipped": "too slow"}],
           "engines": {"numpy-mmap": "c", "qdrant-local": "a"}, "sizes": [10_000, 1_000_000], "load_avg_start": [9.0],
           "agreement": {"10000": {"reference": "numpy-mmap"}}}  # as run_scale returns it: no command yet
    m = bs.merged(old, new)
    assert [(r["engine"], r["size"]) for r in m["runs"]] == [("qdrant-local", 10_000), ("numpy-mmap", 10_000),
                                                            ("qdrant-local", 1_000_000)]
    assert m["runs"][1]["open_s"] == 0.01  # the new run of the same engine and size replaces the old one
    assert m["runs"][2]["extrapolated"]["write_s"] == round(1_000_000 / 30.0)
    assert m["agreement"]["10000"]["qdrant-local"] == {"dense_top10_same": 1.0}
    assert "when" not in m["runs"][0]  # neither run was dated: nothing invented
    assert m["earlier_commands"] == ["first"] and m["sizes"] == [10_000, 1_000_000]


def test_a_merged_run_that_compared_nothing_keeps_the_earlier_reference() -> None:
    """One engine re-measured alone in a new workdir is its own run's reference; merged, the
    earlier reference and its agreement rows stay (not "qdrant-local vs qdrant-local")."""
    old = {"10000": {"reference": "numpy-mmap", "qdrant-local": {"dense_top10_same": 1.0}}}
    assert bs._merged_agreement(old["10000"], {"reference": "qdrant-local"}) == old["10000"]
    compared = {"reference": "numpy-mmap", "edge-exact": {"dense_top10_same": 1.0}}
    assert bs._merged_agreement(old["10000"], compared) == {**old["10000"], **compared}


def test_merge_dates_rows_and_keeps_real_recall() -> None:
    """Rows kept from an earlier run carry that run's date; real-vector recall survives a merge."""
    old = {"runs": [{"engine": "edge-exact", "size": 10}], "engines": {"edge-exact": "b"}, "sizes": [10],
           "load_avg_start": [1.0], "agreement": {}, "command": "first", "when": "2026-11-22T23:00:00+00:00",
           "real_recall": {"django": {"chunks": 5, "questions": 2, "recall": {"250": 1.0}}}}
    new = {"runs": [{"engine": "ragcore-snapshot", "size": 10, "when": "2026-11-23T04:00:00+00:00"}],
           "engines": {"ragcore-snapshot": "c"}, "sizes": [10], "load_avg_start": [2.0], "agreement": {},
           "when": "2026-11-23T04:10:00+00:00"}
    m = bs.merged(old, new)
    assert [r["when"][:13] for r in m["runs"]] == ["2026-11-22T23", "2026-11-23T04"]
    assert m["real_recall"] == old["real_recall"]
    assert bs._day(m["runs"][0]) == "2026-11-22 23:00"
