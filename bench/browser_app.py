"""The pieces `bench browser` and `bench browser-profile` share: the seeded data folder, the app
started on a free port on 127.0.0.1 (from any checkout), and the page's own clock in the browser."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

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
WATCH_JS = """
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


# the notebook is drawn: every cell, or (an app that draws the newest cells of a long notebook, with
# "Show earlier cells" above them) the control and the cells below it
DRAWN_JS = "() => window.__rcCount() >= %d || (!!document.querySelector('.st-key-nb_earlier') && window.__rcCount() > 0)"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def seed_data(data_dir: Path, size: int, cells: int) -> dict[str, Any]:
    """The guide, a padded copy of it, and ``cells`` answered cells in each one's notebook."""
    from bench.common import pad_collection
    from ragcore.eval.demo import ensure_demo_collection
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


class App:
    def __init__(self, app_dir: Path, data_dir: Path, log: Path, *, launcher: list[str] | None = None,
                 extra_env: dict[str, str] | None = None) -> None:
        self.port = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGCORE_", "OPENAI_"))}
        # the warm-up thread embeds every sentence in the background: off, so both sides measure the same work
        env.update(RAGCORE_DATA_DIR=str(data_dir), RAGCORE_APP_WARMUP="0", PYTHONUNBUFFERED="1",
                   PYTHONPATH=str(app_dir))
        env.update(extra_env or {})
        self.log = open(log, "a")
        self.proc = subprocess.Popen(
            [sys.executable, *(launcher or ["-m", "streamlit"]), "run", "app.py", "--server.port", str(self.port),
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


def pipeline_total(data_dir: Path, collection: str, cells_expected: int, timeout_s: float = 60.0) -> float | None:
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
