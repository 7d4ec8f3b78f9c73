"""`python bench/browser_hooks.py run app.py …` (by path: the measured checkout's own ``bench`` may differ): Streamlit with timing hooks, for `bench browser-profile`.

The hooks live only in this launcher (the app is the one measured, unchanged): each writes one
JSON line ``[epoch_ms, what, detail]`` to ``$RCB_PROFILE_LOG`` — a request arriving from the
browser, a script or fragment run starting and ending, every ForwardMsg the run enqueues (type,
delta path, element kind, bytes), and the app's own steps (loading the notebook, drawing a
finished cell, streaming, saving). Epoch milliseconds, so they line up with the browser's
``performance.timeOrigin + performance.now()`` on the same machine.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import threading
import time
from typing import Any, Callable

_LOCK = threading.Lock()
_OUT: Any = None


def log(what: str, detail: Any = None) -> None:
    line = json.dumps([round(time.time() * 1000, 2), what, detail])
    with _LOCK:
        _OUT.write(line + "\n")
        _OUT.flush()


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*a: Any, **k: Any) -> Any:
        log(name + ":start")
        try:
            return fn(*a, **k)
        finally:
            log(name + ":end")
    return wrapper


def _describe(msg: Any) -> dict[str, Any]:
    kind = msg.WhichOneof("type")
    out: dict[str, Any] = {"type": kind, "bytes": msg.ByteSize()}
    if kind == "delta":
        d = msg.delta
        dk = d.WhichOneof("type")
        out["path"] = list(msg.metadata.delta_path)
        out["delta"] = dk
        if dk == "new_element":
            out["el"] = d.new_element.WhichOneof("type")
        elif dk == "add_block":
            out["el"] = "block"
    return out


def _install_streamlit_hooks() -> None:
    from streamlit.runtime import app_session
    from streamlit.runtime.scriptrunner import script_runner

    orig_backmsg = app_session.AppSession.handle_backmsg

    def handle_backmsg(self: Any, msg: Any) -> None:
        kind = msg.WhichOneof("type")
        detail: dict[str, Any] = {"type": kind}
        if kind == "rerun_script":
            detail["fragment"] = msg.rerun_script.fragment_id or None
        log("backmsg", detail)
        return orig_backmsg(self, msg)

    app_session.AppSession.handle_backmsg = handle_backmsg

    orig_enqueue = app_session.AppSession._enqueue_forward_msg

    def enqueue(self: Any, msg: Any) -> None:
        log("fwd", _describe(msg))
        return orig_enqueue(self, msg)

    app_session.AppSession._enqueue_forward_msg = enqueue
    script_runner.ScriptRunner._run_script = _timed("run", script_runner.ScriptRunner._run_script)


def _install_app_hooks() -> None:
    """The app's own steps, patched on the modules the pages import them from."""
    import ui.state as state
    import ui.streaming as streaming
    import ui.cells as cells

    state.load_notebook = _timed("app.load_notebook", state.load_notebook)
    cells.render_cell = _timed("app.render_cell", cells.render_cell)
    streaming.stream_cell = _timed("app.stream_cell", streaming.stream_cell)
    streaming._save = _timed("app.save", streaming._save)
    streaming._streaming_view = _timed("app.streaming_view", streaming._streaming_view)
    orig_feed = streaming.RunRecorder.feed

    def feed(self: Any, ev: Any) -> Any:
        log("app.event", getattr(ev, "type", None))
        return orig_feed(self, ev)

    streaming.RunRecorder.feed = feed


def main() -> None:
    global _OUT
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # run by path: bench/ is no package root
    _OUT = open(os.environ["RCB_PROFILE_LOG"], "a", encoding="utf-8")
    _install_streamlit_hooks()
    try:
        _install_app_hooks()
    except Exception as exc:  # noqa: BLE001 - an older app without one of these: profile Streamlit's side only
        log("app.hooks_failed", repr(exc))
    from streamlit.web.cli import main as st_main

    sys.argv = ["streamlit", *sys.argv[1:]]
    st_main()


if __name__ == "__main__":
    main()
