"""Where a shared notebook link's open goes (issue 42 item 6, "a 50-cell shared link opens in ≤ 5 s").

A one-off probe, run from a checkout: ``python -m bench.scripts.link_profile --app-dir DIR [--app-dir DIR2]``.
For each app dir (several: they are opened in turn, so the machine's load is shared alike) it seeds the
guide padded to 10,000 chunks with 50 answered cells (``bench.browser_app.seed_data``, as ``bench
browser-lab`` does), starts the app under ``bench/browser_hooks.py`` and opens the notebook's link to its
last cell in a new browser context, ``--opens`` times. Per open it prints:

* the DOM timeline, in ms after navigation start: the sidebar, the cells, the linked cell, the first code
  block (``stCode``), the chat box's textarea, the bench's end point (the cell, the chat box, no run);
* the server's side of the same open (hook log): script runs, ForwardMsgs, the notebook's load;
* with ``--cpu``, the browser main thread's CPU self time by script file (CDP Profiler, 1 ms samples).

Both clocks are epoch milliseconds on one machine. The numbers move with the load: compare app dirs
measured in the same run, not runs.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import tempfile
import urllib.parse
from pathlib import Path
from typing import Any

from bench.browser_app import ARGS, CHROMIUM, App, seed_data

HOOKS = Path(__file__).resolve().parent.parent / "browser_hooks.py"
CELL = "seed0049"
# first time each thing is in the DOM (ms after navigation start), and the main thread's long tasks
TIMELINE_JS = """
window.__tl = {}; window.__lt = [];
const mark = k => { if (!(k in window.__tl)) window.__tl[k] = Math.round(performance.now()); };
const tick = () => {
  if (document.querySelector("[data-testid='stSidebar']")) mark('sidebar');
  if (document.querySelector('[class*="st-key-cell_"]')) mark('first cell');
  if (document.querySelector('[class*="st-key-cell_%(cell)s"]')) mark('linked cell');
  if (document.querySelector("[data-testid='stCode']")) mark('first code block');
  if (document.querySelector("textarea[data-testid='stChatInputTextArea']")) mark('chat box');
};
new MutationObserver(tick).observe(document, {subtree: true, childList: true, attributes: true});
try { new PerformanceObserver(l => { for (const e of l.getEntries()) window.__lt.push([Math.round(e.startTime), Math.round(e.duration)]); })
  .observe({type: 'longtask', buffered: true}); } catch (e) {}
""" % {"cell": CELL}
DRAWN_JS = (f"() => !!document.querySelector('[class*=\"st-key-cell_{CELL}\"]') && "
            "!document.querySelector(\"[data-testid='stStatusWidgetRunningIcon']\") && "
            "!!document.querySelector(\"textarea[data-testid='stChatInputTextArea']\")")


def _cpu_by_file(profile: dict[str, Any], top: int = 8) -> list[tuple[str, int]]:
    nodes = {n["id"]: n for n in profile["nodes"]}
    ms: collections.Counter[str] = collections.Counter()
    for sid, dt in zip(profile["samples"], profile["timeDeltas"]):
        cf = nodes[sid]["callFrame"]
        ms[cf["url"].rsplit("/", 1)[-1] or cf["functionName"] or "(native)"] += dt / 1000
    return [(k, round(v)) for k, v in ms.most_common(top)]


def _server(log: Path, origin: float, end_ms: float) -> dict[str, Any]:
    ev = [json.loads(line) for line in log.read_text().splitlines()]
    ev = [e for e in ev if origin - 50 <= e[0] <= origin + end_ms]
    at = lambda e: round(e[0] - origin)  # noqa: E731
    return {"runs": [(at(e), e[1]) for e in ev if e[1] in ("run:start", "run:end")],
            "notebook loads": [(at(e), e[1]) for e in ev if e[1].startswith("app.load_notebook")],
            "forward msgs": sum(1 for e in ev if e[1] == "fwd"), "cells drawn": sum(1 for e in ev if e[1] == "app.render_cell:end")}


def _open(browser: Any, url: str, log: Path, cpu: bool) -> dict[str, Any]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    ctx.add_init_script(TIMELINE_JS)
    try:
        page = ctx.new_page()
        page.set_default_timeout(300_000)
        cdp = ctx.new_cdp_session(page) if cpu else None
        if cdp is not None:
            cdp.send("Profiler.enable")
            cdp.send("Profiler.setSamplingInterval", {"interval": 1000})
            cdp.send("Profiler.start")
        page.goto(url)
        page.wait_for_function(DRAWN_JS, polling=50)
        r = page.evaluate("() => ({origin: performance.timeOrigin, end: Math.round(performance.now()), tl: window.__tl, lt: window.__lt})")
        row = {"end": r["end"], "timeline": r["tl"], "long tasks over 200 ms": [t for t in r["lt"] if t[1] >= 200],
               "server": _server(log, r["origin"], r["end"])}
        if cdp is not None:
            row["cpu ms by script"] = _cpu_by_file(cdp.send("Profiler.stop")["profile"])
        return row
    finally:
        ctx.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--app-dir", type=Path, action="append", required=True, dest="app_dirs")
    ap.add_argument("--opens", type=int, default=3)
    ap.add_argument("--cpu", action="store_true", help="CPU self time by script file (CDP Profiler)")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    tmp = Path(tempfile.mkdtemp(prefix="ragcore-link-profile-"))
    apps: list[tuple[str, App, Path, str]] = []
    try:
        info = seed_data(tmp / "seed", 10_000, 50)
        query = urllib.parse.urlencode({"collection": info["collections"][-1], "cell": CELL})
        for i, d in enumerate(args.app_dirs):
            shutil.copytree(tmp / "seed", tmp / f"data{i}")
            log = tmp / f"hooks{i}.jsonl"
            app = App(d.resolve(), tmp / f"data{i}", tmp / f"streamlit{i}.log", launcher=[str(HOOKS)],
                      extra_env={"RCB_PROFILE_LOG": str(log)})
            apps.append((str(d), app, log, f"{app.url}/?{query}"))
        print("load average", os.getloadavg(), flush=True)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            for _, _, log, url in apps:  # the first session of each process (imports, caches) is not counted
                _open(browser, url, log, cpu=False)
            for n in range(args.opens):
                for name, _, log, url in apps:
                    print(json.dumps({"app": name, "open": n, **_open(browser, url, log, args.cpu)}), flush=True)
            browser.close()
        print("load average", os.getloadavg(), flush=True)
    finally:
        for _, app, _, _ in apps:
            app.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
