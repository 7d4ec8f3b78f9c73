"""`ragcore bench browser-ingest`: Enter → answer on one collection while the app ingests ≥ 500 files into
another, against the same app quiet, and the ingest's reported time left against the true one (issue 42,
items 4 and 5).

One run, one app (``streamlit run app.py`` from ``--app-dir``, so a checkout of an older commit is measured
the same way), Debian's headless chromium through Playwright:

1. the guide is seeded; the notebook page opens on it and every question is asked once (warm-up, not counted:
   every counted answer then meets the same caches);
2. *quiet*: the questions, each Enter → finished answer (the page's own clock, ``bench.browser._ask``);
3. a second browser context starts the ingest of ``--corpus`` on the Library page, as an analyst would, and
   closes; the notebook page is loaded again (the analyst comes back to it); the questions are then asked round after round until the ingest ends (*ingest*);
4. *quiet after*: the questions again, the ingest done.

The ratio ingest / quiet (medians, quiet = both quiet blocks) is the figure that compares across runs: the
machine is shared, so absolute times move. Meanwhile the notebook page records every status line the sidebar
shows (``… chunks embedded · … · about X left · Y elapsed``) with the page's clock, and the message the job
ends with (``… N chunks in S s``): the time left each line reported against the true time left (the end as the
page saw it), and the reported duration against the wall time from the click to the end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from bench.browser_app import ARGS, CHROMIUM, QUESTIONS, WATCH_JS, App
from bench.common import DEFAULT_RESULTS, DJANGO, REPO, machine, utc_now

DJANGO_CORPUS = DJANGO / "corpus"

# Every text the sidebar's job status shows, with the page's epoch clock, and the job's closing message.
STATUS_JS = """
window.__rcIngest = {lines: [], done: null};
new MutationObserver(() => {
  const s = window.__rcIngest, now = performance.timeOrigin + performance.now();
  for (const el of document.querySelectorAll("[data-testid='stSidebar'] [data-testid='stCaptionContainer']")) {
    const t = el.innerText || '';
    if (t.includes(' elapsed') && (!s.lines.length || s.lines[s.lines.length - 1][1] !== t)) s.lines.push([now, t]);
  }
  if (s.done === null) {
    const m = (document.body.innerText || '').match(/Ingest into '[^']+' done: [^\\n]* in \\d+ s\\./);
    if (m) s.done = [now, m[0]];
  }
}).observe(document, {subtree: true, childList: true, characterData: true});
"""

_ETA_RE = re.compile(r"about (?:(?P<h>\d+) h )?(?:(?P<m>\d+) min )?(?:(?P<s>\d+) s)?\s*left")
_HM_RE = re.compile(r"about (?P<h>\d+) h (?P<m>\d+) min left")
_CHUNKS_RE = re.compile(r"(?P<w>[\d,]+) of ~?(?P<e>[\d,]+) chunks embedded")
_DONE_RE = re.compile(r"(?P<c>[\d,]+) chunks in (?P<s>\d+) s\.")


def parse_eta(line: str) -> float | None:
    """Seconds in "about 1 h 05 min left" / "about 3 min 07 s left" / "about 12 s left" (ui.jobs.fmt_duration)."""
    m = _HM_RE.search(line)
    if m:
        return int(m["h"]) * 3600 + int(m["m"]) * 60
    m = _ETA_RE.search(line)
    if not m or not any(m.group(k) for k in ("h", "m", "s")):
        return None
    return int(m["h"] or 0) * 3600 + int(m["m"] or 0) * 60 + int(m["s"] or 0)


def eta_errors(lines: list[list[Any]], done: list[Any], started_ms: float) -> dict[str, Any]:
    """Each status line's time left against the true one; the worst error once 10% of the chunks were written."""
    end_ms = float(done[0])
    d = _DONE_RE.search(done[1])
    final_chunks = int(d["c"].replace(",", "")) if d else None
    samples = []
    for t, text in lines:
        eta = parse_eta(text)
        c = _CHUNKS_RE.search(text)
        true_left = (end_ms - t) / 1000
        if eta is None or true_left <= 0:
            continue
        written = int(c["w"].replace(",", "")) if c else None
        work = written / final_chunks if written is not None and final_chunks else None
        samples.append({"t_s": round((t - started_ms) / 1000, 1), "reported_left_s": eta, "true_left_s": round(true_left, 1),
                        "error": round((eta - true_left) / true_left, 3), "work": None if work is None else round(work, 3)})
    after = [s for s in samples if s["work"] is not None and s["work"] >= 0.1]
    # the last minute's relative error says little (a 10 s miss is 100% of 10 s): shown, apart
    steady = [s for s in after if s["true_left_s"] >= 60]
    worst = max(after, key=lambda s: abs(s["error"]), default=None)
    worst_steady = max(steady, key=lambda s: abs(s["error"]), default=None)
    return {"final_chunks": final_chunks, "samples": len(samples), "after_10pct": len(after),
            "worst_after_10pct": worst, "worst_after_10pct_with_a_minute_left": worst_steady,
            "share_within_30pct": round(sum(abs(s["error"]) <= 0.3 for s in after) / len(after), 3) if after else None,
            "series": samples}


def _soft_wait(page, js: str, timeout_s: float, polling: int = 50) -> bool:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(js, timeout=timeout_s * 1000, polling=polling)
        return True
    except PlaywrightTimeout:
        return False


def _ask_during(page, question: str, timeout_s: float) -> dict[str, Any]:
    """``bench.browser._ask`` without its waits for an idle page: while an ingest runs, the sidebar's status
    refreshes every second (a fragment run), so Streamlit's running indicator is seldom off and a stale chat
    box may stay beside the new one. Each wait gives up after 20 s (noted) and the newest chat box is used."""
    one_box = _soft_wait(page, "() => document.querySelectorAll(\"textarea[data-testid='stChatInputTextArea']\").length === 1", 20)
    settled = _soft_wait(page, """() => { const n = window.__rcCount(), t = performance.now(), s = window.__rcStable;
        if (!s || s.n !== n) { window.__rcStable = {n: n, t: t}; return false; } return t - s.t > 300; }""", 20)
    page.evaluate("() => { window.__rcB.base = window.__rcCount(); }")
    box = page.locator("textarea[data-testid='stChatInputTextArea']").last
    box.fill(question)
    box.press("Enter")
    page.wait_for_function("() => window.__rcB.done !== null", timeout=timeout_s * 1000, polling=20)
    b = page.evaluate("() => window.__rcB")
    return {"first_token_ms": round(b["first"] - b["enter"], 1), "finished_ms": round(b["done"] - b["enter"], 1),
            "one_chat_box": one_box, "count_settled": settled}


@contextmanager
def _ingest_tab(browser, url: str, timeout_s: float) -> Iterator[Any]:
    """The Library page's Ingest tab in a browser context of its own (another tab of the analyst's)."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = ctx.new_page()
        page.set_default_timeout(timeout_s * 1000)
        page.goto(url + "/library")
        page.get_by_role("tab", name="Ingest").click()
        yield page
    finally:
        ctx.close()


def _start_ingest(browser, url: str, corpus: Path, timeout_s: float) -> float:
    """As an analyst: the folder path, Enter, "Ingest folder"; returns the click's epoch ms."""
    with _ingest_tab(browser, url, timeout_s) as page:
        box = page.get_by_role("textbox", name="Folder path")
        box.fill(str(corpus))
        box.press("Enter")
        page.get_by_text(re.compile(r"Creates the collection")).first.wait_for()
        page.get_by_role("button", name="Ingest folder").click()
        clicked = time.time() * 1000
        page.get_by_text(re.compile(r"\d+/\d+ files")).first.wait_for()  # the job runs
        return clicked


def _cancel_ingest(browser, url: str, timeout_s: float) -> None:
    """Cancel (a run that measures only the answers need not wait for the whole ingest)."""
    with _ingest_tab(browser, url, timeout_s) as page:
        page.get_by_role("button", name="Cancel").click()
        page.get_by_text(re.compile(r"cancelled after")).first.wait_for()


def _block(page, label: str, questions: list[str], pause_s: float, rows: list[dict[str, Any]]) -> None:
    for q in questions:
        time.sleep(pause_s)
        r = _ask_during(page, q, 600)  # the same steps in every block, quiet or not
        rows.append({"block": label, "question": q, "at": round(time.time(), 1), **r})
        print(f"  {label}: {q!r} finished {r['finished_ms']:.0f} ms", flush=True)


def _run(app: App, corpus: Path, questions: list[str], pause_s: float, max_rounds: int, cancel: bool,
         checkpoint: Any = None) -> dict[str, Any]:
    """``checkpoint(run so far)`` after each round during the ingest: a run cut short keeps what it measured."""
    from playwright.sync_api import sync_playwright

    rows: list[dict[str, Any]] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
            ctx.add_init_script(WATCH_JS)
            ctx.add_init_script(STATUS_JS)
            page = ctx.new_page()
            page.set_default_timeout(600_000)
            page.goto(f"{app.url}/?collection=guide")
            page.locator("textarea[data-testid='stChatInputTextArea']").wait_for()
            _block(page, "warm-up", questions, 0.0, [])
            _block(page, "quiet", questions, pause_s, rows)
            started = _start_ingest(browser, app.url, corpus, 600)
            # the analyst goes back to the notebook: a full run, which shows the job in the sidebar (a page drawn
            # before the job started shows it at its next full run only)
            page.reload()
            page.locator("textarea[data-testid='stChatInputTextArea']").wait_for()
            page.locator("[data-testid='stSidebar'] [data-testid='stProgress']").first.wait_for()
            rounds = 0
            ended = "() => window.__rcIngest.done !== null"
            while not page.evaluate(ended) and rounds < max_rounds:
                _block(page, "ingest", questions, pause_s, rows)
                rounds += 1
                if checkpoint is not None:
                    checkpoint({"rows": rows, "started_ms": started, "status": page.evaluate("() => window.__rcIngest")})
            if cancel and not page.evaluate(ended):
                try:
                    _cancel_ingest(browser, app.url, 300)
                except Exception as exc:  # noqa: BLE001 - the answers timed so far are kept; the next block says so
                    print(f"  the cancel failed ({type(exc).__name__}); 'quiet after' runs beside the ingest", flush=True)
                    rows.append({"block": "cancel failed", "question": "", "at": round(time.time(), 1), "finished_ms": None})
            else:
                page.wait_for_function(ended, timeout=7_200_000, polling=1000)
            done = page.evaluate("() => window.__rcIngest")
            end_ms = done["done"][0] if done["done"] else time.time() * 1000
            for r in rows:  # answers that ended after the ingest did are not "during" it
                if r["block"] == "ingest" and r["at"] * 1000 > end_ms:
                    r["block"] = "ingest (ended after it)"
            _block(page, "quiet after", questions, pause_s, rows)
        finally:
            browser.close()
    return {"rows": rows, "started_ms": started, "status": done}


def _median(rows: list[dict[str, Any]], *blocks: str) -> float | None:
    vals = [r["finished_ms"] for r in rows if r["block"] in blocks]
    return round(statistics.median(vals), 1) if vals else None


def bench_browser_ingest(app_dir: Path, label: str, corpus: Path, n_questions: int, results_dir: Path,
                         pause_s: float = 3.0, max_rounds: int = 50, cancel: bool = False) -> dict[str, Any]:
    from bench.browser_app import seed_data

    if not Path(CHROMIUM).exists():
        raise SystemExit(f"{CHROMIUM} is missing: apt-get install chromium")
    files = sum(1 for f in corpus.rglob("*") if f.is_file())
    tmp = Path(tempfile.mkdtemp(prefix="ragcore-bench-ingest-"))
    try:
        data_dir = tmp / "data"
        seed_data(data_dir, 0, 0)  # the guide (and an empty padded copy, unused)
        app = App(app_dir.resolve(), data_dir, tmp / "streamlit.log")
        load_before = os.getloadavg()
        try:
            partial = Path(tempfile.gettempdir()) / f"browser-ingest-{label}.partial.json"
            run = _run(app, corpus, list(QUESTIONS[:n_questions]), pause_s, max_rounds, cancel,
                       lambda r: partial.write_text(json.dumps(r)))
        finally:
            app.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows, st = run["rows"], run["status"]
    quiet, during = _median(rows, "quiet", "quiet after"), _median(rows, "ingest")
    d = _DONE_RE.search(st["done"][1]) if st["done"] else None
    wall = (st["done"][0] - run["started_ms"]) / 1000 if st["done"] else None
    summary = {"files": files, "quiet_ms": quiet, "quiet_before_ms": _median(rows, "quiet"),
               "quiet_after_ms": _median(rows, "quiet after"), "ingest_ms": during,
               "ratio": round(during / quiet, 2) if quiet and during else None,
               "answers_during_ingest": sum(r["block"] == "ingest" for r in rows),
               "ingest_wall_s": round(wall, 1) if wall else None, "ingest_reported_s": int(d["s"]) if d else None,
               "ingest_cancelled": st["done"] is None}
    payload = {"label": label, "when": utc_now(), "machine": machine(), "load_avg_at_start": [round(x, 2) for x in load_before],
               "app_dir": str(app_dir), "corpus": str(corpus), "pause_s": pause_s, "summary": summary,
               "eta": eta_errors(st["lines"], st["done"], run["started_ms"]) if st["done"] else {"status_lines": st["lines"]},
               "done_message": st["done"][1] if st["done"] else None, "rows": rows}
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / f"browser-ingest-{label}.json").write_text(json.dumps(payload, indent=2))
    write_markdown(results_dir)
    return payload


def add_ingest_parser(bsub: argparse._SubParsersAction) -> None:
    bi = bsub.add_parser("browser-ingest", help="Enter → answer in headless chromium quiet and while the app ingests ≥ 500 files; the ETA's error")
    bi.add_argument("--app-dir", type=Path, default=REPO, dest="app_dir", help="checkout whose app.py is run (default: this one)")
    bi.add_argument("--label", default="after", help="results go to bench/results/browser-ingest-LABEL.json")
    bi.add_argument("--corpus", type=Path, default=DJANGO_CORPUS, help="folder the app ingests (default: the Django set's 525 pages)")
    bi.add_argument("--questions", type=int, default=4, help="questions per block")
    bi.add_argument("--pause", type=float, default=3.0, help="seconds between an answer and the next question")
    bi.add_argument("--max-rounds", type=int, default=50, dest="max_rounds", help="rounds of questions during the ingest at most")
    bi.add_argument("--cancel", action="store_true", help="cancel the ingest after --max-rounds (answers only: no ETA against its end)")
    bi.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    bi.set_defaults(func=_cmd)


def _cmd(args: argparse.Namespace) -> int:
    p = bench_browser_ingest(args.app_dir, args.label, args.corpus.resolve(), args.questions, args.results,
                             args.pause, args.max_rounds, args.cancel)
    print(json.dumps({"summary": p["summary"], "eta": {k: v for k, v in p["eta"].items() if k != "series"}}, indent=2))
    return 0


def _secs(ms: float | None) -> str:
    return f"{ms / 1000:.2f} s" if ms is not None else "–"


def write_markdown(results_dir: Path) -> Path:
    """browser-ingest.md: every browser-ingest-*.json in the folder, one section per label."""
    lines = ["# Enter → answer while the app ingests 525 pages, and the ingest's time left", "",
             "`ragcore bench browser-ingest` (bench/browser_ingest.py): the app in headless chromium; questions on the "
             "guide before, during and after an ingest of the Django set's 525 HTML pages started on the Library page. "
             "Times are the page's own clock from Enter to the finished answer; *ratio* = median during / median of "
             "both quiet blocks, in the same run. The machine is shared: the load average is given, and only the "
             "ratio compares across runs.", ""]
    for f in sorted(results_dir.glob("browser-ingest-*.json")):
        p = json.loads(f.read_text())
        s, e = p["summary"], p.get("eta") or {}
        m = p.get("machine") or {}
        lines += [f"## {p['label']} ({p['when']})", "", f"`{p.get('app_dir')}` · load average at the start "
                  f"{p.get('load_avg_at_start')}, at the end {m.get('load_avg', m.get('loadavg', '?'))} · {p['pause_s']} s between questions", "",
                  "| quiet before | during the ingest | quiet after | ratio | answers during |", "|---|---|---|---|---|",
                  f"| {_secs(s['quiet_before_ms'])} | {_secs(s['ingest_ms'])} | {_secs(s['quiet_after_ms'])} "
                  f"| **{s['ratio']}×** | {s['answers_during_ingest']} |", ""]
        if p.get("note"):
            lines += [f"*{p['note']}.*", ""]
        if s.get("ingest_cancelled") and not p.get("note"):
            lines += ["The ingest was cancelled once the answers during it were timed (`--cancel`): no time left to compare.", ""]
        elif e.get("worst_after_10pct"):
            w, ws = e["worst_after_10pct"], e.get("worst_after_10pct_with_a_minute_left") or {}
            lines += [f"Ingest: {s['ingest_wall_s']:.0f} s from the click to the end as the page saw it; the job reported "
                      f"{s['ingest_reported_s']} s. Time left, {e['after_10pct']} status lines after 10% of the chunks: "
                      f"{e['share_within_30pct']:.0%} within ±30% of the true time left; worst {w['error']:+.0%} "
                      f"({w['reported_left_s']} s reported, {w['true_left_s']} s true, at {w['work']:.0%} of the chunks); "
                      f"worst with at least a minute left {ws.get('error', 0):+.0%} (at {ws.get('work', 0):.0%}).", ""]
    out = results_dir / "browser-ingest.md"
    out.write_text("\n".join(lines))
    return out
