"""`ragcore bench browser-profile`: where the time from Enter to a finished answer goes.

One app (``--app-dir``) run under :mod:`bench.browser_hooks` (server-side timestamps: the
browser's request arriving, the fragment run, each ForwardMsg, the app's own steps), opened in
headless chromium with a recorder installed before the page's scripts (the Enter press, each
websocket message's arrival and size, the first streamed text, the finished cell, long tasks on
the main thread). Both clocks are epoch milliseconds on one machine, so one timeline per question
lines them up; the phases between the marks are summarised (median over the questions) and
written to ``bench/results/browser-profile-LABEL.{json,md}``.
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

_PROFILE_JS = """
window.__rcP = {ws: [], longtasks: []};
const RcWS = window.WebSocket;
window.WebSocket = class extends RcWS {
  constructor(...a) {
    super(...a);
    // registered before Streamlit sets onmessage: this sees each message as it arrives
    this.addEventListener('message', e => {
      const n = e.data && (e.data.byteLength || e.data.size || e.data.length) || 0;
      window.__rcP.ws.push([performance.timeOrigin + performance.now(), n]);
    });
  }
};
try {
  new PerformanceObserver(l => { for (const e of l.getEntries())
    window.__rcP.longtasks.push([performance.timeOrigin + e.startTime, e.duration]); })
    .observe({type: 'longtask', buffered: true});
} catch (e) {}
"""


def _epoch(b: dict[str, Any], key: str) -> float | None:
    return None if b.get(key) is None else b["origin"] + b[key]


_METRICS = ("TaskDuration", "ScriptDuration", "RecalcStyleDuration", "LayoutDuration", "Nodes")


def _metrics(cdp: Any) -> dict[str, float]:
    got = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return {k: got.get(k, 0.0) for k in _METRICS}


def _ask(page: Any, question: str, cdp: Any = None) -> dict[str, Any]:
    page.wait_for_function("() => !document.querySelector(\"[data-testid='stStatusWidgetRunningIcon']\")", timeout=180_000)
    # a fragment run that just ended may still show its old chat box beside the new one for a moment
    page.wait_for_function("() => document.querySelectorAll(\"textarea[data-testid='stChatInputTextArea']\").length === 1", timeout=60_000)
    page.evaluate("() => { window.__rcB.base = window.__rcCount(); window.__rcP.ws = []; window.__rcP.longtasks = []; }")
    m0 = _metrics(cdp) if cdp is not None else None
    box = page.locator("textarea[data-testid='stChatInputTextArea']")
    box.fill(question)
    box.press("Enter")
    page.wait_for_function("() => window.__rcB.done !== null", timeout=180_000, polling=20)
    # the run goes on after the cell is drawn (the save, the last deltas): wait for it to end too
    page.wait_for_function("() => !document.querySelector(\"[data-testid='stStatusWidgetRunningIcon']\")", timeout=180_000)
    time.sleep(0.3)
    m1 = _metrics(cdp) if cdp is not None else None
    b = page.evaluate("() => ({...window.__rcB, origin: performance.timeOrigin, ws: window.__rcP.ws, longtasks: window.__rcP.longtasks})")
    return {"question": question, "enter": _epoch(b, "enter"), "first": _epoch(b, "first"), "done": _epoch(b, "done"),
            "ws": b["ws"], "longtasks": b["longtasks"],
            # the browser's main-thread work for this answer (s → ms), by kind, until the run ended
            "browser_ms": {k: round((m1[k] - m0[k]) * (1 if k == "Nodes" else 1000), 1) for k in _METRICS} if m0 else None}


def _server_events(log: Path, t0: float, t1: float) -> list[list[Any]]:
    out = []
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            ev = json.loads(line)
        except ValueError:
            continue
        if t0 <= ev[0] <= t1:
            out.append(ev)
    return out


def _first(evs: list[list[Any]], what: str, after: float = 0.0, pred=lambda d: True) -> float | None:
    return next((e[0] for e in evs if e[1] == what and e[0] >= after and pred(e[2])), None)


def _last(evs: list[list[Any]], what: str, before: float = float("inf"), pred=lambda d: True) -> float | None:
    hits = [e[0] for e in evs if e[1] == what and e[0] <= before and pred(e[2])]
    return hits[-1] if hits else None


def _phases(b: dict[str, Any], evs: list[list[Any]]) -> dict[str, Any]:
    """Marks on one clock (ms after Enter) and the phases between them."""
    enter = b["enter"]
    back = _first(evs, "backmsg", enter, lambda d: d.get("type") == "rerun_script")
    run0 = _first(evs, "run:start", back or enter)
    sc0 = _first(evs, "app.stream_cell:start", run0 or enter)
    ev_started = _first(evs, "app.event", sc0 or enter, lambda d: d == "started")
    ev_last = _last(evs, "app.event", float("inf"), lambda d: d in ("done", "message"))
    final0 = _first(evs, "app.render_cell:start", ev_last or enter)
    final1 = _first(evs, "app.render_cell:end", final0 or enter)
    save1 = _first(evs, "app.save:end", final1 or enter)
    run1 = _first(evs, "run:end", run0 or enter)
    fwd = [e for e in evs if e[1] == "fwd" and (run0 or enter) <= e[0] <= (run1 or float("inf"))]
    deltas = [e for e in fwd if e[2].get("type") == "delta"]
    marks = {"backmsg": back, "run_start": run0, "stream_cell_start": sc0, "engine_started": ev_started,
             "engine_last_event": ev_last, "final_draw_start": final0, "final_draw_end": final1, "save_end": save1,
             "run_end": run1, "first_token_dom": b["first"], "done_dom": b["done"]}
    rel = {k: (round(v - enter, 1) if v is not None else None) for k, v in marks.items()}
    ws_after = [w for w in b["ws"] if w[0] >= enter]
    ws_before_done = [w for w in ws_after if b["done"] is None or w[0] <= b["done"]]
    last_ws = ws_before_done[-1][0] if ws_before_done else None
    lt = [t for t in b["longtasks"] if t[0] >= enter and (b["done"] is None or t[0] <= b["done"])]

    def gap(a: str, z: str) -> float | None:
        return round(rel[z] - rel[a], 1) if rel.get(a) is not None and rel.get(z) is not None else None

    phases = {
        "enter→request at server": rel["backmsg"],
        "request→fragment run starts": gap("backmsg", "run_start"),
        "run start→stream_cell (notebook load, cells since the full run)": gap("run_start", "stream_cell_start"),
        "stream_cell→engine started (streaming view)": gap("stream_cell_start", "engine_started"),
        "engine: started→last event (pipeline)": gap("engine_started", "engine_last_event"),
        "last event→final cell drawn (server)": gap("engine_last_event", "final_draw_end"),
        "final draw→last message in browser": round(last_ws - final1, 1) if last_ws and final1 else None,
        "last message→finished in DOM (browser render)": round(b["done"] - last_ws, 1) if last_ws and b["done"] else None,
        "save after the draw (not on the path)": gap("final_draw_end", "save_end"),
    }
    return {"question": b["question"], "marks_ms": rel, "phases_ms": phases,
            "deltas": len(deltas), "delta_bytes": sum(e[2].get("bytes", 0) for e in deltas),
            "elements": _count_elements(deltas),
            "ws_messages_to_done": len(ws_before_done), "ws_bytes_to_done": sum(w[1] for w in ws_before_done),
            "longtasks_to_done_ms": round(sum(t[1] for t in lt), 1), "longtasks": [[round(t[0] - enter, 1), round(t[1], 1)] for t in lt]}


def _count_elements(deltas: list[list[Any]]) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in deltas:
        k = e[2].get("el") or e[2].get("delta") or "?"
        out[k] = out.get(k, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def _seeded_copy(seeded: Path | None, data_dir: Path, size: int, cells: int) -> dict[str, Any]:
    """A fresh copy of the seeded data folder (``seeded``, built by the first run that names it), so
    every profiled run starts from the same notebooks without seeding again."""
    if seeded is None:
        return seed_data(data_dir, size, cells)
    marker = seeded / "seed.json"
    if not marker.exists():
        info = seed_data(seeded / "data", size, cells)
        marker.write_text(json.dumps(info))
    shutil.copytree(seeded / "data", data_dir)
    return json.loads(marker.read_text())


def profile(app_dir: Path, label: str, cells: int, size: int, n_questions: int, results_dir: Path,
            collection: str = "guide", seeded: Path | None = None) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="ragcore-bench-profile-"))
    try:
        data_dir = tmp / "data"
        seed = _seeded_copy(seeded, data_dir, size, cells)
        log = tmp / "profile.jsonl"
        app = App(app_dir.resolve(), data_dir, tmp / "streamlit.log", launcher=[str(Path(__file__).with_name("browser_hooks.py"))],
                   extra_env={"RCB_PROFILE_LOG": str(log)})
        rows: list[dict[str, Any]] = []
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
                ctx.add_init_script(WATCH_JS)
                ctx.add_init_script(_PROFILE_JS)
                page = ctx.new_page()
                cdp = ctx.new_cdp_session(page)
                cdp.send("Performance.enable")
                page.goto(f"{app.url}/?collection={collection}")
                page.wait_for_function(DRAWN_JS % cells, timeout=300_000)
                page.locator("textarea[data-testid='stChatInputTextArea']").wait_for()
                _ask(page, "What is a notebook cell?")  # warm-up, not counted
                for q in QUESTIONS[:n_questions]:
                    b = _ask(page, q, cdp)
                    row = _phases(b, _server_events(log, b["enter"] - 50, b["enter"] + 120_000))
                    row["browser_ms"] = b["browser_ms"]
                    row["pipeline_total_ms"] = pipeline_total(data_dir, collection, cells + 2 + len(rows))
                    rows.append(row)
                    print(f"  {q!r}: " + ", ".join(f"{k} {v}" for k, v in row["phases_ms"].items())
                          + f"; pipeline {row['pipeline_total_ms']}; browser {row['browser_ms']}", flush=True)
                browser.close()
        finally:
            app.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    summary = {k: round(statistics.median([r["phases_ms"][k] for r in rows if r["phases_ms"][k] is not None]), 1)
               for k in rows[0]["phases_ms"] if any(r["phases_ms"][k] is not None for r in rows)}
    for k in ("deltas", "delta_bytes", "ws_messages_to_done", "ws_bytes_to_done", "longtasks_to_done_ms"):
        summary[k] = statistics.median([r[k] for r in rows])
    summary["finished (DOM)"] = statistics.median([r["marks_ms"]["done_dom"] for r in rows])
    summary["pipeline total"] = statistics.median([r["pipeline_total_ms"] or 0 for r in rows])
    for k in _METRICS:
        summary[f"browser {k}"] = statistics.median([r["browser_ms"][k] for r in rows])
    payload = {"label": label, "when": utc_now(), "machine": machine(), "app_dir": str(app_dir), "cells": cells,
               "collection": collection, "seed": seed, "summary_median_ms": summary, "rows": rows}
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / f"browser-profile-{label}.json").write_text(json.dumps(payload, indent=2))
    write_markdown(results_dir)
    return payload


def write_markdown(results_dir: Path) -> None:
    """browser-profile.md: the phase medians of every browser-profile-*.json, one column per label."""
    runs = [json.loads(f.read_text()) for f in sorted(results_dir.glob("browser-profile-*.json"))]
    if not runs:
        return
    keys = [k for k in runs[0]["summary_median_ms"]]
    lines = ["# Browser profile: where Enter → finished answer goes", "",
             "`ragcore bench browser-profile` (bench/browser_profile.py): one app run under timing hooks "
             "(bench/browser_hooks.py, the app unchanged) in headless chromium, a notebook of 50 cells on the guide, "
             "the extractive generator. Medians over the questions, in ms after the Enter key press; *browser …* is "
             "chromium's own main-thread time (CDP Performance metrics) between Enter and the end of the run.", "",
             "| phase (median ms) | " + " | ".join(f"{r['label']} ({r['when'][:16]}, load {r['machine'].get('load_avg', '?')})" for r in runs) + " |",
             "|---|" + "---|" * len(runs)]
    for k in keys:
        lines.append(f"| {k} | " + " | ".join(str(r["summary_median_ms"].get(k, "–")) for r in runs) + " |")
    (results_dir / "browser-profile.md").write_text("\n".join(lines) + "\n")


def add_profile_parser(bsub: argparse._SubParsersAction) -> None:
    bp = bsub.add_parser("browser-profile", help="timeline of one Enter → finished answer, server and browser side")
    bp.add_argument("--app-dir", type=Path, default=REPO, dest="app_dir")
    bp.add_argument("--label", default="after")
    bp.add_argument("--cells", type=int, default=50)
    bp.add_argument("--size", type=int, default=2_000, help="chunks of the padded collection (seeded, not profiled)")
    bp.add_argument("--questions", type=int, default=4)
    bp.add_argument("--collection", default="guide")
    bp.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    bp.add_argument("--seeded", type=Path, default=None, help="keep the seeded data folder here and reuse it on later runs")
    bp.set_defaults(func=_cmd_profile)


def _cmd_profile(args: argparse.Namespace) -> int:
    p = profile(args.app_dir, args.label, args.cells, args.size, args.questions, args.results, args.collection, args.seeded)
    print(json.dumps(p["summary_median_ms"], indent=2))
    return 0
