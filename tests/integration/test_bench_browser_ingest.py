"""`bench browser-ingest`'s reading of the status line: the time left as ui/jobs.py words it, and each line's
error against the true time left (pure parsing; the bench itself needs a browser and a 525-page ingest)."""

from __future__ import annotations

from bench.browser_ingest import eta_errors, parse_eta
from ui.jobs import fmt_duration


def test_every_duration_the_job_words_is_read_back() -> None:
    for s in (3, 59, 61, 187, 3599, 3600, 4 * 3600 + 9 * 60):
        line = f"120 of ~842 chunks embedded · 3/80 files · a.md · 500 chunks/min · about {fmt_duration(s)} left · 10 s elapsed"
        assert parse_eta(line) == s
    assert parse_eta("estimating time left… · 2 s elapsed") is None


def test_errors_are_against_the_end_the_page_saw_and_counted_after_a_tenth_of_the_chunks() -> None:
    lines = [[0.0, "10 of ~1,000 chunks embedded · about 1 min 40 s left · 1 s elapsed"],  # 1% of the work: not counted
             [20_000.0, "200 of ~1,000 chunks embedded · about 1 min 40 s left · 20 s elapsed"],  # 80 s true: +25%
             [60_000.0, "600 of 1,000 chunks embedded · about 30 s left · 60 s elapsed"]]  # 40 s true: -25%
    done = [100_000.0, "Ingest into 'x' done: 5 added, 0 updated, 0 removed, 0 skipped, 1,000 chunks in 100 s."]
    e = eta_errors(lines, done, 0.0)
    assert e["final_chunks"] == 1000 and e["samples"] == 3 and e["after_10pct"] == 2
    assert [s["error"] for s in e["series"]] == [0.0, 0.25, -0.25]
    assert abs(e["worst_after_10pct"]["error"]) == 0.25 and e["share_within_30pct"] == 1.0
