"""Shared set-up for the AppTest suites (tests/test_app_*.py).

The real Engine (embedded Qdrant in a temp folder, the real ONNX model) is created once per
test process through the app's own ``st.cache_resource``, over a copy of the data folder whose
collection "guide" holds the demo corpus, built once per run (tests/conftest.py
``guide_folder``); every app test points RAGCORE_DATA_DIR at that folder. Notebooks are wiped
before each test.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
import threading
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Iterator

import pytest
from tests.conftest import REPO, copy_guide

ROOT = REPO
APP = str(ROOT / "app.py")
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_lock = threading.Lock()
_shared: dict[str, Any] = {}
QUESTION = "What does the threshold apply to?"


def shared_data_dir() -> Path:
    """A temp data dir with 'guide' ingested — once per process."""
    with _lock:
        if "dir" not in _shared:
            tmp = Path(tempfile.mkdtemp(prefix="ragcore-apptest-"))
            atexit.register(shutil.rmtree, tmp, ignore_errors=True)
            d = copy_guide(tmp / "data")
            from ragcore.eval.demo import ensure_demo_collection
            from ui.state import get_runtime

            rt = get_runtime(str(d), None)
            # the app's first-start step finds 'guide' built and calibrated: nothing to ingest
            assert ensure_demo_collection(rt.engine) is None and rt.engine.store.count("guide") > 100
            assert "calibration" in rt.engine.store.read_meta("guide")
            rt.engine.encoder.encode(["warm up"])
            _shared["dir"] = d
            _shared["runtime"] = rt
        return _shared["dir"]


def shared_runtime():
    shared_data_dir()
    return _shared["runtime"]


@pytest.fixture
def app_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    d = shared_data_dir()
    for var in ("RAGCORE_QDRANT_URL", "RAGCORE_LLM_MODEL", "RAGCORE_COLLECTION", "RAGCORE_TOP_K", "RAGCORE_THRESHOLD",
                "RAGCORE_RETRIEVAL_MODE", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(d))
    monkeypatch.setenv("RAGCORE_APP_WARMUP", "0")  # keep the two cores for the tests

    shutil.rmtree(d / "notebooks", ignore_errors=True)
    (d / "app_settings.json").unlink(missing_ok=True)  # settings saved by a test must not reach the next one
    yield d
    shutil.rmtree(d / "notebooks", ignore_errors=True)
    (d / "app_settings.json").unlink(missing_ok=True)


def new_app(timeout: float = 120):
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(APP, default_timeout=timeout)


def started(page: str | None = None, **session: Any):
    """A fresh AppTest, run once (and switched to ``page`` when given)."""
    at = new_app()
    for k, v in session.items():
        at.session_state[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    if page:
        at.switch_page(page).run()
        assert not at.exception, [e.value for e in at.exception]
    return at


def ok(at) -> None:
    assert not at.exception, [(e.value, e.stack_trace[-6:]) for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def markdown_text(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def captions(at) -> str:
    return "\n".join(c.value for c in at.caption)


def page_links(at) -> list[Any]:
    """The page links of the main area (the sidebar's are the app's navigation: ``nav_links``)."""
    return list(at.main.get("page_link"))


def nav_links(at) -> list[Any]:
    return list(at.sidebar.get("page_link"))


def ask(at, question: str = QUESTION):
    at.chat_input[0].set_value(question).run()
    ok(at)
    return at


def wait_for_job(at, timeout: float = 180):
    """Wait for the app's background ingest (ui/jobs.py) to end, then run the script again."""
    rt = shared_runtime()
    job = rt.job
    if job is not None and job.thread is not None:
        job.thread.join(timeout)
        assert not job.running, "the ingest did not end in time"
    at.run()
    return at


class AppServer:
    """`streamlit run app.py` on a free port with its own data directory, for real-browser tests and
    the screenshot script; ``restart()`` keeps the data directory (settings, collections, notebooks)."""

    def __init__(self, data_dir: Path, log: Path, env: dict[str, str] | None = None) -> None:
        self.data_dir, self.log, self.extra_env = data_dir, log, env or {}
        self.proc = None
        self.url = ""

    def start(self, timeout: float = 90) -> str:
        import os
        import socket
        import subprocess
        import time
        import urllib.request

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("RAGCORE_", "OPENAI_"))}
        env.update(RAGCORE_DATA_DIR=str(self.data_dir), PYTHONUNBUFFERED="1", **self.extra_env)
        with open(self.log, "a") as fh:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port), "--server.address",
                 "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false",
                 "--server.fileWatcherType", "none"],
                cwd=ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
            )
        self.url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"streamlit exited early ({self.proc.returncode}):\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url + "/_stcore/health", timeout=2) as r:
                    if r.status == 200:
                        return self.url
            except OSError:
                time.sleep(0.3)
        raise AssertionError(f"streamlit did not become healthy:\n{self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        import os
        import signal
        import subprocess

        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=5)
        self.proc = None

    def restart(self) -> str:
        self.stop()
        return self.start()


class _TableParser(HTMLParser):
    """Cells of an HTML table as (shown text, attributes), rows with their ``<tr>`` class."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, list[tuple[str, dict[str, str]]]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "tr":
            self.rows.append((a.get("class", ""), []))
        elif tag in ("td", "th") and self.rows:
            self._cell = []
            self.rows[-1][1].append(("", a))

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            _, a = self.rows[-1][1][-1]
            self.rows[-1][1][-1] = ("".join(self._cell), a)
            self._cell = None


def html_table(at, box: str):
    """The first ``st.html`` table inside ``<div class="{box}">`` as a DataFrame of what the cells
    show (numbers as floats, "–" as NaN), plus ``<header> title`` columns with each cell's hover text
    and ``row class`` (kept / cut / cited / used). A narrow table's passage rows (class "stk", shown
    instead of the passage column in a narrow window: ui/htmltable.py) repeat a row's passage: skipped."""
    import pandas as pd

    body = next(h.proto.body for h in at.main.get("html") if f'class="{box}' in h.proto.body)
    p = _TableParser()
    p.feed(body)
    (_, head), *rows = p.rows
    names = [text for text, _ in head]
    records = []
    for klass, cells in rows:
        if "stk" in klass.split():
            continue
        klass = " ".join(k for k in klass.split() if k != "has-stk")
        rec: dict[str, Any] = {"row class": klass}
        for name, (text, attrs) in zip(names, cells):
            num = "num" in attrs.get("class", "")
            rec[name] = (float("nan") if text == "–" else float(text)) if num else text
            rec[f"{name} title"] = attrs.get("title")
        records.append(rec)
    return pd.DataFrame(records)
