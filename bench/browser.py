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
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from bench.common import DEFAULT_RESULTS, REPO, machine, utc_now

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
QUESTIONS = (
    "What does the threshold apply to?",
    "How do I ingest a folder?",
    "What is top-K?",
    "How are citations numbered?",
    "When does the engine abstain?",
    "How do I connect an OpenAI-compatible endpoint?",
    "What does hybrid retrieval fuse?",
    "Where are notebooks saved?",
    "What is selected-text mode?",
    "How do I re-run a cell?",
    "What does the retrieval lab show?",
    "How is the abstain bar calibrated?",
)
SEED_QUESTIONS = QUESTIONS[:6]  # answered once each by the engine, then copied up to --cells

# Installed before the page's scripts: the Enter press in the chat box, the first streamed text,
# the moment the count of finished cells grows.
_WATCH_JS = """
window.__rcB = {enter: null, first: null, done: null, base: null};
document.addEventListener('keydown', e => {
  if (e.key === 'Enter' && e.target && e.target.matches("textarea[data-testid='stChatInputTextArea']")) {
    window.__rcB.enter = performance.now(); window.__rcB.first = null; window.__rcB.done = null;
  }
}, true);
const rcCount = () => [...document.querySelectorAll("button")].filter(b => (b.textContent || '').includes('Re-run')).length;
new MutationObserver(() => {
  const b = window.__rcB;
  if (b.enter === null) return;
  if (b.first === null) {
    const md = [...document.querySelectorAll("[data-testid='stMain'] [data-testid='stMarkdownContainer']")];
    if (md.some(m => m.innerText.includes('\\u258c'))) b.first = performance.now();
  }
  if (b.done === null && b.base !== null && rcCount() > b.base) {
    b.done = performance.now();
    if (b.first === null) b.first = b.done;  // drawn finished in one go
  }
}).observe(document, {subtree: true, childList: true, characterData: true});
window.__rcCount = rcCount;
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _seed(data_dir: Path, size: int, cells: int) -> dict[str, Any]:
    """The guide, a padded copy of it, and ``cells`` answered cells in each one's notebook."""
    from bench.common import pad_collection
    from ragcore.engine.demo import ensure_demo_collection
    from ragcore.engine.engine import Engine
    from ragcore.settings.config import RagcoreSettings
    from ui.notebook import Cell, NotebookStore, RunRecorder

    settings = RagcoreSettings(data_dir=data_dir)
    engine = Engine(settings)
    t0 = time.perf_counter()
    ensure_demo_collection(engine)
    big = f"guide{size // 1000}k"
    pad_collection(engine, "guide", engine, big, size)
    store = NotebookStore(settings.notebooks_dir)
    from ui.notebook import Notebook
    for name in ("guide", big):
        answered: list[Cell] = []
        for q in SEED_QUESTIONS:
            rec = RunRecorder(q, context_mode="corpus", collection=name, config=settings.public_dict(),
                              corpus_version=None, built_at=None, generator="extractive")
            for ev in engine.stream(q, collection=name, settings=settings.with_(collection=name)):
                rec.feed(ev)
            cell = Cell(question=q)
            cell.add_run(rec.finish())
            answered.append(cell)
        nb = Notebook(name, [Cell.from_dict({**answered[i % len(answered)].to_dict(), "id": f"seed{i:04d}"}) for i in range(cells)])
        store.save(nb)
    engine.close()
    return {"collections": ["guide", big], "seed_seconds": round(time.perf_counter() - t0, 1)}


class _App:
    def __init__(self, app_dir: Path, data_dir: Path, log: Path) -> None:
        self.port = _free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGCORE_", "OPENAI_"))}
        # the warm-up thread embeds every sentence in the background: off, so both sides measure the same work
        env.update(RAGCORE_DATA_DIR=str(data_dir), RAGCORE_APP_WARMUP="0", PYTHONUNBUFFERED="1",
                   PYTHONPATH=str(app_dir))
        self.log = open(log, "a")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(self.port),
             "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false",
             "--server.fileWatcherType", "none"],
            cwd=app_dir, env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"streamlit exited ({self.proc.returncode}); see {log}")
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=2):
                    return
            except OSError:
                time.sleep(0.3)
        raise RuntimeError(f"streamlit did not start; see {log}")

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.log.close()


def _pipeline_total(data_dir: Path, collection: str, cells_expected: int, timeout_s: float = 60.0) -> float | None:
    """The newest cell's own pipeline total (ms), as the engine measured it, once its save landed
    (the app draws a finished answer before it saves it)."""
    path = data_dir / "notebooks" / f"{collection}.json"
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            cells = json.loads(path.read_text()).get("cells") or []
        except ValueError:  # caught mid-replace: read again
            cells = []
        if len(cells) >= cells_expected or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    newest = max(cells, key=lambda c: (c.get("runs") or [{}])[-1].get("ran_at") or "")
    return ((newest["runs"][-1]["answer"].get("metadata") or {}).get("latency_ms") or {}).get("total")


def _ask(page, question: str, timeout_s: float) -> dict[str, float]:
    page.wait_for_function("() => !document.querySelector(\"[data-testid='stStatusWidgetRunningIcon']\")", timeout=timeout_s * 1000)
    base = page.evaluate("() => { window.__rcB.base = window.__rcCount(); return window.__rcB.base; }")
    box = page.locator("textarea[data-testid='stChatInputTextArea']")
    box.fill(question)
    box.press("Enter")
    page.wait_for_function("() => window.__rcB.done !== null", timeout=timeout_s * 1000, polling=20)
    b = page.evaluate("() => window.__rcB")
    return {"cells_before": base, "first_token_ms": round(b["first"] - b["enter"], 1), "finished_ms": round(b["done"] - b["enter"], 1)}


def _measure(url: str, data_dir: Path, collection: str, cells: int, questions: list[str], viewport: dict[str, int]) -> list[dict[str, Any]]:
    from playwright.sync_api import sync_playwright

    rows: list[dict[str, Any]] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            ctx = browser.new_context(viewport=viewport)
            ctx.add_init_script(_WATCH_JS)
            page = ctx.new_page()
            page.set_default_timeout(180_000)
            page.goto(f"{url}/?collection={collection}")
            t0 = time.monotonic()
            try:
                page.wait_for_function(f"() => window.__rcCount() >= {cells}", timeout=300_000)
            except Exception:
                print(page.evaluate("() => [...document.querySelectorAll('button')].slice(0, 20).map(b => b.textContent)"))
                raise
            print(f"  {collection}: {cells} cells drawn {time.monotonic() - t0:.1f} s after the page was opened", flush=True)
            page.locator("textarea[data-testid='stChatInputTextArea']").wait_for()
            _ask(page, "What is a notebook cell?", 180)  # warm-up: the composer's first run, not counted
            for q in questions:
                r = _ask(page, q, 180)
                total = _pipeline_total(data_dir, collection, r["cells_before"] + 1)
                rows.append({"collection": collection, "question": q, **r, "pipeline_total_ms": total,
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
        out[col] = {"n": len(rs), **stat}
    return out


def bench_browser(app_dir: Path, label: str, cells: int, size: int, n_questions: int, results_dir: Path,
                  width: int = 1400, height: int = 1000) -> dict[str, Any]:
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install chromium")
    tmp = Path(tempfile.mkdtemp(prefix="ragcore-bench-browser-"))
    try:
        data_dir = tmp / "data"
        seed = _seed(data_dir, size, cells)
        app = _App(app_dir.resolve(), data_dir, tmp / "streamlit.log")
        rows: list[dict[str, Any]] = []
        try:
            qs = list(QUESTIONS[:n_questions])
            for col in seed["collections"]:
                rows += _measure(app.url, data_dir, col, cells, qs, {"width": width, "height": height})
        finally:
            app.stop()
        payload = {"label": label, "when": utc_now(), "machine": machine(), "app_dir": str(app_dir), "cells": cells,
                   "size": size, "viewport": [width, height], "seed": seed, "summary": _summary(rows), "rows": rows}
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
             "(`metadata.latency_ms.total`); *overhead* = finished − pipeline, per answer. Target: overhead ≤ 1 s at p95.", ""]
    for f in sorted(results_dir.glob("browser-*.json")):
        p = json.loads(f.read_text())
        m = p.get("machine") or {}
        lines += [f"## {p['label']} ({p['when']})", "",
                  f"{p['cells']} cells already in each notebook · padded collection {p['size']:,} chunks · viewport "
                  f"{p['viewport'][0]}×{p['viewport'][1]} · load average at start {m.get('load_avg', m.get('loadavg', '?'))}", "",
                  "| collection | answers | first token p50 / p95 | finished p50 / p95 | pipeline p50 / p95 | overhead p50 / p95 |",
                  "|---|---|---|---|---|---|"]
        for col, s in p["summary"].items():
            def cell(key: str) -> str:
                v = s.get(key)
                return f"{v['p50'] / 1000:.2f} / {v['p95'] / 1000:.2f} s" if v else "–"
            lines.append(f"| {col} | {s['n']} | {cell('first_token_ms')} | {cell('finished_ms')} | {cell('pipeline_total_ms')} | {cell('overhead_ms')} |")
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
    bb.set_defaults(func=_cmd_browser)


def _cmd_browser(args: argparse.Namespace) -> int:
    bench_browser(args.app_dir, args.label, args.cells, args.size, args.questions, args.results)
    print((args.results / "browser.md").read_text())
    return 0
