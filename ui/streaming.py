"""Stream an answer into a notebook cell, with a Stop button that really stops it.

``Engine.stream`` runs in a pump thread that puts events on a queue; the script thread
renders them (and ticks every 0.1 s, so it stays interruptible while a slow model has not
sent its first token). Two ways a run is stopped, both ending the same way — the cancel
event is set, the engine's stream closed (which closes the LLM's HTTP response) and the
cell saved with what arrived so far, outcome "cancelled". Nothing vanishes.

- Stop pressed while the answer streams inside a fragment (the notebook's question box is
  one): Streamlit queues a click on a fragment's widget until the running script ends — only
  a full-app rerun or ``st.rerun(scope="fragment")`` preempts a run — so the click would wait
  for the whole answer. The render loop looks at the queued request instead
  (:func:`pressed_since_run_began`) and stops the stream itself; the queued fragment run then
  draws the stopped cell.
- Any full-app rerun (another widget outside a fragment, a closed tab): the next ``st.*``
  call raises inside the render loop and the ``finally`` clause stops the stream.

With ``runner.fastReruns`` (Streamlit's default) the next run starts in a new thread while
this one is being stopped; it waits for the save (``st.session_state["rc_inflight"]``)
before it reads the notebook, so the cancelled cell is there.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import streamlit as st

from ragcore.engine.engine import SelectionInput
from ragcore.types import Event

from . import state
from .notebook import Cell, RunRecorder
from .render import answer_markdown, link_targets, md_escape, md_inline

_END = object()
STATUS_EVERY_S = 0.5  # the "Generating… 1.5 s" line is redrawn this often
TOKENS_EVERY_S = 0.1  # streamed text is redrawn at most this often (the first piece at once)


class Pump:
    """Consumes a generator in a thread; the consumer reads :meth:`get`."""

    def __init__(self, gen: Iterator[Event], cancel: threading.Event) -> None:
        self.gen = gen
        self.cancel = cancel
        self.q: queue.Queue[Any] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="ragcore-stream", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            for ev in self.gen:
                if self.cancel.is_set():
                    break
                self.q.put(ev)
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer
            self.q.put(exc)
        finally:
            try:
                self.gen.close()  # GeneratorExit inside Engine.stream closes the LLM response
            except Exception:  # noqa: BLE001
                pass
            self.q.put(_END)

    def get(self, timeout: float) -> Any:
        try:
            return self.q.get(timeout=timeout)
        except queue.Empty:
            return None


def _is_interruption(exc: BaseException) -> bool:
    """Streamlit stopping or rerunning the script (Stop, another widget, a closed tab)."""
    try:
        from streamlit.runtime.scriptrunner_utils.exceptions import ScriptControlException
    except ImportError:  # pragma: no cover
        return type(exc).__name__ in ("StopException", "RerunException")
    return isinstance(exc, (ScriptControlException, KeyboardInterrupt, GeneratorExit))


def pressed_since_run_began(key: str) -> bool:
    """Whether the browser pressed the button ``key`` (a trigger widget of this run) after this run
    began: a rerun request carrying its trigger is waiting. Reads Streamlit's pending request
    (``ScriptRunContext.script_requests``), the one place a fragment's click is visible before the
    running script ends; on a Streamlit without it this says False and Stop falls back to waiting."""
    try:
        from streamlit.runtime.scriptrunner_utils.script_requests import ScriptRequestType
        from streamlit.runtime.scriptrunner_utils.script_run_context import get_script_run_ctx
        from streamlit.runtime.state.common import user_key_from_element_id
    except ImportError:  # pragma: no cover
        return False
    ctx = get_script_run_ctx(suppress_warning=True)
    requests = getattr(ctx, "script_requests", None)
    lock = getattr(requests, "_lock", None)
    if lock is None:
        return False
    with lock:
        if getattr(requests, "_state", None) != ScriptRequestType.RERUN:
            return False
        states = getattr(getattr(requests, "_rerun_data", None), "widget_states", None)
    if states is None:
        return False
    return any(w.WhichOneof("value") == "trigger_value" and w.trigger_value and user_key_from_element_id(w.id) == key
               for w in states.widgets)


def selection_input(cell: Cell) -> SelectionInput | None:
    sel = cell.selection
    if not sel or cell.context_mode == "corpus":
        return None
    page = sel.get("page")
    return SelectionInput(text=str(sel.get("text") or ""), source=sel.get("source") or None, start_line=int(sel.get("start_line") or 1),
                          page=int(page) if page else None, line_numbers=tuple(int(n) for n in sel.get("line_numbers") or ()))


@dataclass(frozen=True)
class _View:
    """Where a streaming answer is drawn: the final cell's slot, then the live view's parts."""

    final_slot: Any
    slot: Any
    status: Any
    sources: Any
    body: Any
    stop_key: str


def _streaming_view(cell: Cell, title: str) -> _View:
    # the finished cell goes into its own slot: re-sending a block at the streaming view's path
    # would keep the streaming view's (current-run) children around it
    final_slot = st.empty()
    slot = st.empty()
    stop_key = f"stop_{cell.id}_{len(cell.runs)}"
    with slot.container(border=True):
        # the title takes the room left by the button: a 14% column broke "Stop" over two lines at 1024 px
        with st.container(horizontal=True, vertical_alignment="center", gap="small"):
            st.markdown(f"**{md_escape(title)}** {md_escape(cell.question)}", width="stretch")
            st.button("Stop", key=stop_key, icon=":material/stop_circle:", width="content",
                      help="Stop generating; the text so far is kept and the cell is marked cancelled.")
        status = st.empty()
        status.caption("Retrieving evidence…")
        sources = st.empty()
        body = st.empty()
    return _View(final_slot, slot, status, sources, body, stop_key)


def _draw_events(pump: Pump, recorder: RunRecorder, view: _View, collection: str) -> bool:
    """Feed the stream's events to the recorder and draw them, until the stream ends (True) or
    the analyst pressed Stop (False)."""
    t0 = time.perf_counter()
    last_draw = last_tick = 0.0
    targets: dict[int, str] = {}
    while True:
        item = pump.get(timeout=0.1)
        now = time.perf_counter()
        if pressed_since_run_began(view.stop_key):
            return False
        if item is None:
            # every delta makes the browser redraw the page (50-100 ms of its main thread in a notebook
            # of 50 cells, on the 2 cores the answer runs on): the elapsed time ticks twice a second
            if now - last_tick >= STATUS_EVERY_S:
                label = "Generating" if recorder.has_sources else "Retrieving evidence"
                view.status.caption(f"{label}… {now - t0:.1f} s")
                last_tick = now
            continue
        if item is _END:
            return True
        if isinstance(item, BaseException):
            raise item
        recorder.feed(item)
        if item.type == "sources":
            targets = link_targets([], recorder.evidence, collection)
            n_ev, n_c = len(recorder.evidence), len(recorder.candidates)
            listing = " · ".join(f"\\[{e.n}\\] {md_inline(e.chunk.locator.split('#')[0])}" for e in recorder.evidence[:12])
            view.sources.caption(f"**{n_ev} pieces of evidence**" + (f" from {n_c} candidates" if n_c else "")
                                 + f" — composing the answer…  \n{listing}")
        elif item.type == "token" and now - last_draw > TOKENS_EVERY_S:
            view.body.markdown(answer_markdown(recorder.text, targets) + " ▌")
            last_draw = now


def _recorder(rt: state.Runtime, cell: Cell, collection: str, s: Any) -> RunRecorder:
    info = rt.info(collection) if cell.context_mode != "selection" else None
    return RunRecorder(
        cell.question, context_mode=cell.context_mode, collection=collection, config=s.public_dict(),
        corpus_version=info.corpus_version if info else None, built_at=info.built_at if info else None,
        generator=state.generator_name(s),
    )


def _save(rt: state.Runtime, cell: Cell, collection: str, saved: threading.Event, *, report: bool) -> None:
    """Save the cell's new run, keep the saved notebook as this session's cached copy, release the
    next run (``saved``) and the warm-up (``rt.busy``); ``report``: show a failure on the page."""
    try:
        cache = st.session_state.setdefault("rc_nb_cache", {})
        saved_nb = rt.notebooks.upsert_cell(collection, cell, known=cache.get(collection))
        # the next run reads the notebook from this cache, not by parsing the file again
        cache[collection] = (rt.notebooks.signature(collection), saved_nb)
    except Exception as exc:  # noqa: BLE001
        if report:
            state.show_error(exc, "Saving the notebook")
    finally:
        saved.set()
        with rt.lock:
            rt.busy -= 1


def stream_cell(
    rt: state.Runtime, cell: Cell, collection: str, *, title: str, render_final: Callable[[Cell], None] | None = None,
    history: Sequence[tuple[str, str]] = (), ask_on: str | None = None,
) -> bool:
    """Run ``cell``'s question now, rendering into the page, and save the run (in ``collection``'s
    notebook; ``ask_on``: answered from that collection instead, e.g. another git ref's).

    When it finished or the analyst pressed Stop, ``render_final(cell)`` draws the cell in the
    same place (no rerun needed). Returns True when the answer finished, False when it was cut off.
    """
    s = state.settings().with_(collection=ask_on or collection)
    recorder = _recorder(rt, cell, ask_on or collection, s)
    cancel = threading.Event()
    finished = stopped = False
    failure: BaseException | None = None
    # Streamlit's fast reruns start the next run in a new thread while this one is still being
    # stopped; the next run waits on this event before it reads the notebook (state.load_notebook)
    saved = threading.Event()
    st.session_state["rc_inflight"] = saved
    with rt.lock:
        rt.busy += 1
    try:
        view = _streaming_view(cell, title)
        gen = rt.engine.stream(
            cell.question, collection=ask_on or collection, settings=s, context=cell.context_mode,  # type: ignore[arg-type]
            selection=selection_input(cell), cancel=cancel, history=tuple(history),
        )
        stopped = not _draw_events(Pump(gen, cancel), recorder, view, collection)
        finished = not stopped
    except BaseException as exc:
        if not _is_interruption(exc):  # a real failure: record it as an error, not as "stopped"
            failure = exc
            recorder.errors.append(state.friendly(exc, "Answering"))
        raise
    finally:
        if not finished:
            cancel.set()
        # only disk I/O from here on: after an interruption Streamlit must not be called again
        cell.add_run(recorder.finish(cancelled=not finished and failure is None))
        if not finished and not stopped:
            _save(rt, cell, collection, saved, report=False)
    # finished or stopped by the Stop button: the answer is drawn first, then saved (the save parses and writes the whole notebook
    # file, a second or more in a long notebook on a loaded machine); an interruption while drawing
    # still saves it (the finally below), and the next run waits for the save (rc_inflight)
    try:
        view.slot.empty()  # drop the streaming view (Stop button, progress lines) at once
        if render_final is not None:
            with view.final_slot.container():
                render_final(cell)
    finally:
        _save(rt, cell, collection, saved, report=True)
    return finished
