"""`ragcore bench browser`: Enter → first token and Enter → finished answer, in a real browser.

The app (``streamlit run app.py`` from ``--app-dir``, so a checkout of an older commit can be
measured the same way) is opened in Debian's headless chromium through Playwright, with a
notebook of ``--cells`` cells already in it, on the guide and on a collection padded to ``--size``
chunks (the guide's own vectors copied, no re-embedding: ``bench.common.pad_collection``). For each
question the page's own clock (``performance.now()``) records:

* Enter: the key press in the chat box (a capturing listener, before Streamlit sees it);
* first token: the first answer text with the streaming cursor "▌" in the page;
* finished: one more "Re-run" button (a finished cell's) than before Enter.

Beside each, the pipeline's own total for that very answer (``metadata.latency_ms.total``, read
from the saved notebook), so the browser's overhead is ``finished − total`` in the same run: the
machine is shared, and the ratio, not the absolute figure, is what compares across runs.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.browser_app import ARGS, CHROMIUM, DRAWN_JS, QUESTIONS, WATCH_JS, App, pipeline_total, seed_data
from bench.common import DEFAULT_RESULTS, REPO, machine, utc_now


def _ask(page, question: str, timeout_s: float) -> dict[str, float]:
    page.wait_for_function("() => !document.querySelector(\"[data-testid='stStatusWidgetRunningIcon']\")", timeout=timeout_s * 1000)
    # a fragment run that just ended may show its old chat box beside the new one for a moment
    page.wait_for_function("() => document.querySelectorAll(\"textarea[data-testid='stChatInputTextArea']\").length === 1",
                           timeout=timeout_s * 1000)
    # and the finished cells' count has settled (a count taken mid-redraw rose at once after Enter: "finished in 6 ms")
    page.wait_for_function("""() => { const n = window.__rcCount(), t = performance.now(), s = window.__rcStable;
        if (!s || s.n !== n) { window.__rcStable = {n: n, t: t}; return false; } return t - s.t > 300; }""",
                           timeout=timeout_s * 1000, polling=50)
    base = page.evaluate("() => { window.__rcB.base = window.__rcCount(); return window.__rcB.base; }")
    box = page.locator("textarea[data-testid='stChatInputTextArea']")
    box.fill(question)
    box.press("Enter")
    page.wait_for_function("() => window.__rcB.done !== null", timeout=timeout_s * 1000, polling=20)
    b = page.evaluate("() => window.__rcB")
    return {"cells_before": base, "first_token_ms": round(b["first"] - b["enter"], 1), "finished_ms": round(b["done"] - b["enter"], 1)}


def _measure(url: str, data_dir: Path, collection: str, cells: int, questions: list[str], viewport: dict[str, int],
             pause_s: float = 0.0) -> list[dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    rows: list[dict[str, Any]] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            ctx = browser.new_context(viewport=viewport)
            ctx.add_init_script(WATCH_JS)
            page = ctx.new_page()
            page.set_default_timeout(180_000)
            page.goto(f"{url}/?collection={collection}")
            t0 = time.monotonic()
            try:
                page.wait_for_function(DRAWN_JS % cells, timeout=300_000)
            except Exception:
                print(page.evaluate("() => [...document.querySelectorAll('button')].slice(0, 20).map(b => b.textContent)"))
                raise
            drawn = page.evaluate("() => document.querySelectorAll('[class*=\"st-key-cell_\"]').length")
            print(f"  {collection}: {drawn} of {cells} cells drawn {time.monotonic() - t0:.1f} s after the page was opened", flush=True)
            page.locator("textarea[data-testid='stChatInputTextArea']").wait_for()
            _ask(page, "What is a notebook cell?", 180)  # warm-up: the composer's first run, not counted
            for i, q in enumerate(questions):
                time.sleep(pause_s)  # the analyst reads the last answer: caches with a short life expire as in use
                r = _ask(page, q, 180)
                # the seeded cells, the warm-up's and one per question so far: this answer's own total once its save landed
                # (the count of "Re-run" buttons in the page is no count of the file's cells)
                total = pipeline_total(data_dir, collection, cells + 2 + i)
                rows.append({"collection": collection, "question": q, "cells_drawn_at_open": drawn, **r, "pipeline_total_ms": total,
                             "overhead_ms": round(r["finished_ms"] - total, 1) if total is not None else None})
                print(f"  {collection}: {q!r} first {r['first_token_ms']:.0f} ms, finished {r['finished_ms']:.0f} ms, "
                      f"pipeline {total} ms", flush=True)
        finally:
            browser.close()
    return rows


def _p(values: list[float], q: float) -> float:
    vals = sorted(values)
    if not vals:
        return float("nan")
    k = max(0, min(len(vals) - 1, int(round(q * (len(vals) - 1)))))
    return vals[k]


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for col in sorted({r["collection"] for r in rows}):
        rs = [r for r in rows if r["collection"] == col]
        stat = {}
        for key in ("first_token_ms", "finished_ms", "pipeline_total_ms", "overhead_ms"):
            vals = [float(r[key]) for r in rs if r.get(key) is not None]
            stat[key] = {"p50": round(statistics.median(vals), 1), "p95": round(_p(vals, 0.95), 1)} if vals else None
        out[col] = {"n": len(rs), "cells_drawn_at_open": rs[0].get("cells_drawn_at_open"), **stat}
    return out


def bench_browser(app_dir: Path, label: str, cells: int, size: int, n_questions: int, results_dir: Path,
                  width: int = 1400, height: int = 1000, pause_s: float = 6.0) -> dict[str, Any]:
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install chromium")
    tmp = Path(tempfile.mkdtemp(prefix="ragcore-bench-browser-"))
    try:
        data_dir = tmp / "data"
        seed = seed_data(data_dir, size, cells)
        app = App(app_dir.resolve(), data_dir, tmp / "streamlit.log")
        rows: list[dict[str, Any]] = []
        try:
            qs = list(QUESTIONS[:n_questions])
            for col in seed["collections"]:
                rows += _measure(app.url, data_dir, col, cells, qs, {"width": width, "height": height}, pause_s)
        finally:
            app.stop()
        payload = {"label": label, "when": utc_now(), "machine": machine(), "app_dir": str(app_dir), "cells": cells,
                   "size": size, "pause_s": pause_s, "viewport": [width, height], "seed": seed, "summary": _summary(rows), "rows": rows}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / f"browser-{label}.json").write_text(json.dumps(payload, indent=2))
    _write_markdown(results_dir)
    return payload


def _write_markdown(results_dir: Path) -> None:
    """browser.md: every browser-*.json in the folder, one table per label (before/after)."""
    lines = ["# Browser: Enter → first token and finished answer, in a long notebook", "",
             "`ragcore bench browser` (bench/browser.py): the app in Debian's headless chromium (Playwright), "
             "a notebook already holding the stated number of cells, the extractive generator. Times are the page's "
             "own clock from the Enter key press; *pipeline* is the engine's own total for the same answer "
             "(`metadata.latency_ms.total`); *overhead* = finished − pipeline, per answer. Target: overhead ≤ 1 s at p95. "
             "Before round 4 the bench waited for a save by a count of the page's Re-run buttons (two per cell), so it "
             "waited 60 s between questions on an app drawing every cell, and paired an answer on one drawing fewer "
             "cells with the previous answer's total now and then; since round 4 it counts the saved cells and waits "
             "`--pause` s between questions (an analyst reading the answer).", ""]
    for f in sorted(results_dir.glob("browser-*.json")):
        if f.name.startswith("browser-profile-"):  # bench browser-profile's own (browser-profile.md)
            continue
        p = json.loads(f.read_text())
        m = p.get("machine") or {}
        lines += [f"## {p['label']} ({p['when']})", "",
                  f"{p['cells']} cells already in each notebook · padded collection {p['size']:,} chunks · viewport "
                  f"{p['viewport'][0]}×{p['viewport'][1]} · {p.get('pause_s', '–')} s between questions · load average as the run ended {m.get('load_avg', m.get('loadavg', '?'))}", "",
                  "| collection | answers | cells drawn | first token p50 / p95 | finished p50 / p95 | pipeline p50 / p95 | overhead p50 / p95 |",
                  "|---|---|---|---|---|---|---|"]
        for col, s in p["summary"].items():
            def cell(key: str) -> str:
                v = s.get(key)
                return f"{v['p50'] / 1000:.2f} / {v['p95'] / 1000:.2f} s" if v else "–"
            lines.append(f"| {col} | {s['n']} | {s.get('cells_drawn_at_open') or p['cells']} | {cell('first_token_ms')} | {cell('finished_ms')} | {cell('pipeline_total_ms')} | {cell('overhead_ms')} |")
        lines.append("")
    (results_dir / "browser.md").write_text("\n".join(lines))


def add_browser_parser(bsub: argparse._SubParsersAction) -> None:
    bb = bsub.add_parser("browser", help="Enter → first token / finished answer in headless chromium, with a long notebook")
    bb.add_argument("--app-dir", type=Path, default=REPO, dest="app_dir", help="checkout whose app.py is run (default: this one)")
    bb.add_argument("--label", default="after", help="results go to bench/results/browser-LABEL.json (e.g. before, after)")
    bb.add_argument("--cells", type=int, default=50, help="cells already in each notebook")
    bb.add_argument("--size", type=int, default=10_000, help="chunks of the padded collection")
    bb.add_argument("--questions", type=int, default=8, help="questions timed per collection")
    bb.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    bb.add_argument("--pause", type=float, default=6.0, help="seconds between an answer and the next question (reading it)")
    bb.set_defaults(func=_cmd_browser)
    from bench.browser_profile import add_profile_parser

    add_profile_parser(bsub)  # `bench browser-profile`: where the time between Enter and the answer goes
    from bench.browser_ingest import add_ingest_parser

    add_ingest_parser(bsub)  # `bench browser-ingest`: Enter → answer while the app ingests ≥ 500 files, and the ETA
    from bench.browser_lab import add_lab_parser

    add_lab_parser(bsub)  # `bench browser-lab`: the lab's top-K re-filter and a shared notebook link


def _cmd_browser(args: argparse.Namespace) -> int:
    bench_browser(args.app_dir, args.label, args.cells, args.size, args.questions, args.results, pause_s=args.pause)
    print((args.results / "browser.md").read_text())
    return 0
