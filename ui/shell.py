"""The app's frame: the page registry, the navigation and the shared sidebar around every page.

Why the navigation is drawn by hand (``st.page_link``) and Streamlit's own is hidden: with a
``pages/`` folder next to app.py, Streamlit 1.67 serves the first request of a fresh process
through its file-based fallback (``PagesManager.uses_pages_directory``), which lists every
file of pages/ in the sidebar ("app, evaluate, library…") until app.py's ``st.navigation``
replaces it. ``[client] showSidebarNavigation = false`` in .streamlit/config.toml hides any
navigation Streamlit draws — the fallback's as well as ours — so the only navigation a visitor
ever sees is the list of links below, drawn before anything slow (opening the store, ingesting
the demo corpus) runs.

That fallback may also run a deep-linked page (``/library``) directly, without app.py; the page
then calls :func:`ensure_frame`, which runs the whole app around it instead (see there).

Checked against Streamlit 1.67's source (issue 42): ``PagesManager.uses_pages_directory`` is set when
the process's first session starts, from whether pages/ exists, and only an ``st.navigation`` call
clears it (for the whole process); no configuration option does. So the first run of a fresh process
always takes the fallback, whatever app.py does. ``position="sidebar"`` is hidden by
``showSidebarNavigation = false`` as well (commands/navigation.py), and without that option the
fallback's file list shows on a cold start; ``position="top"`` would drop the links below but move the
navigation out of the sidebar, and ``ensure_frame`` would still be needed. Hence this way.
"""

from __future__ import annotations

from pathlib import Path

import sys
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import streamlit as st

if TYPE_CHECKING:
    from ui.state import Runtime

PAGE_TITLE = "ragcore — research notebook"
# an emoji favicon is drawn by the browser itself; a ":material/…:" one is fetched from
# fonts.gstatic.com, and the app must not reach the internet
PAGE_ICON = "📓"


@dataclass(frozen=True)
class PageSpec:
    path: str  # relative to app.py
    title: str
    icon: str
    url_path: str
    default: bool = False


ROOT = Path(__file__).resolve().parent.parent  # the folder of app.py and pages/

PAGES: tuple[PageSpec, ...] = (
    PageSpec("pages/notebook.py", "Notebook", ":material/edit_note:", "notebook", default=True),
    PageSpec("pages/retrieval_lab.py", "Retrieval lab", ":material/science:", "retrieval_lab"),
    PageSpec("pages/library.py", "Library", ":material/library_books:", "library"),
    PageSpec("pages/evaluate.py", "Evaluate", ":material/analytics:", "evaluate"),
    PageSpec("pages/settings.py", "Settings", ":material/tune:", "settings"),
)

# set while app.py's frame runs the current page, per script thread (one per browser session)
_frame = threading.local()


def in_frame() -> bool:
    return bool(getattr(_frame, "active", False))


# Layout rules that Streamlit's own CSS lacks, for windows down to 1024 px (about 700 px beside the
# sidebar): button labels and segmented options wrap instead of being cut, the passages panel goes
# below the answer when the main area is narrow, the selected cell is outlined (its key ends in _sel, which is
# not the last of its classes), the notebook's
# chat box stays in view at the bottom of the page. Only the app's own class names and Streamlit's
# data-testids are styled; no document text is involved.
APP_CSS = """<style>
button [data-testid="stMarkdownContainer"] p{white-space:normal;overflow-wrap:anywhere;text-align:center}
[data-testid="stBaseButton-segmented_control"],[data-testid="stBaseButton-segmented_controlActive"]{height:auto;min-height:2.5rem}
[data-testid="stButtonGroup"]>div{flex-wrap:wrap}
[data-testid="stPageLink"] p{white-space:normal}
[data-testid="stMetricLabel"] *,[data-testid="stMetricValue"] *{white-space:normal !important;overflow:visible !important;
  text-overflow:clip !important}
[data-testid="stMetricValue"]{font-size:clamp(1.2rem,2.2vw,2.25rem)}
@media (max-width: 1279px){
  [class*="st-key-ans_"] [data-testid="stHorizontalBlock"]{flex-wrap:wrap}
  [class*="st-key-ans_"] [data-testid="stColumn"]{flex:1 1 100% !important;width:100% !important;min-width:100%}
}
[class*="st-key-cell_"][class*="_sel "],[class*="st-key-cell_"][class$="_sel"]{outline:2px solid #0969da;outline-offset:2px}
.st-key-nb_chatbox{position:sticky;bottom:0;z-index:5;background:#fff;padding:.4rem 0 .6rem}
</style>"""


def navigation_links(pages: list) -> None:
    with st.sidebar:
        for p in pages:
            st.page_link(p)
        st.divider()


# ragcore (LlamaIndex, Qdrant, onnxruntime) takes seconds to import in a fresh process, 20 s and
# more on a loaded machine: it is imported (and the Engine opened) in a thread, and the notebook
# draws its question box at once meanwhile (a question typed then is answered when it is ready)
_core_ready = threading.Event()
_core_lock = threading.Lock()
_core_thread: list[threading.Thread] = []


def _load_core() -> None:
    try:
        from ragcore.settings.config import RagcoreSettings
        from ui import state

        env = RagcoreSettings.from_env()
        state.get_runtime(str(env.data_dir), env.qdrant_url)
    except Exception:  # noqa: BLE001 - the script run opens it again and shows the error
        pass
    finally:
        _core_ready.set()


def _imported() -> bool:
    """Whether ragcore is loaded: by the loading thread, or already imported by this process when
    no thread was started (a test process): then opening the Engine is quick and no one waits."""
    if not _core_thread and "ui.state" in sys.modules and "ragcore.engine.engine" in sys.modules:
        _core_ready.set()
    return _core_ready.is_set()


def core_ready() -> bool:
    """Whether ragcore is imported and the Engine open; starts loading them on the first call."""
    if _imported():
        return True
    with _core_lock:
        if not _core_thread:
            t = threading.Thread(target=_load_core, name="ragcore-import", daemon=True)
            _core_thread.append(t)
            t.start()
    return _core_ready.is_set()


def _starting_submit() -> None:
    q = (st.session_state.get("nb_question") or "").strip()
    if q:
        st.session_state["nb_pending"] = {"kind": "new", "question": q}


def starting_notebook() -> None:
    """The notebook while ragcore loads: its question box is usable at once."""
    st.markdown("## Notebook")

    @st.fragment(run_every=0.5)
    def wait() -> None:
        if _core_ready.is_set():
            st.rerun(scope="app")
        # the import starts at the fragment's first tick, once this page was sent: importing holds the
        # interpreter's lock most of the time, and the question box must reach the browser first
        ticks = st.session_state["rc_start_ticks"] = st.session_state.get("rc_start_ticks", 0) + 1
        if ticks > 1:
            core_ready()
        pending = st.session_state.get("nb_pending")
        st.info("Starting ragcore (the search engine and the embedding model)…"
                + (" Your question is answered as soon as it is ready." if pending else " You can type your question now."),
                icon=":material/hourglass_top:")

    wait()
    with st.container(key="nb_chatbox"):
        st.chat_input("Ask a question…", key="nb_question", on_submit=_starting_submit, max_chars=2000)
    st.stop()


def run_app() -> None:
    """app.py: page config, navigation, then the runtime, the demo collection, the sidebar, the page."""
    st.set_page_config(page_title=PAGE_TITLE, page_icon=PAGE_ICON, layout="wide")
    # absolute paths: the script Streamlit started may be a page itself (a cold deep link, AppTest)
    pages = [st.Page(str(ROOT / s.path), title=s.title, icon=s.icon, url_path=s.url_path, default=s.default) for s in PAGES]
    page = st.navigation(pages, position="hidden")
    st.html(APP_CSS)
    navigation_links(pages)

    if not _imported():
        if page.title == "Notebook":
            starting_notebook()
        core_ready()
        with st.spinner("Starting ragcore…"):
            _core_ready.wait()
    from ui import state

    rt = state.runtime()
    state.ensure_demo(rt)
    state.init_session(rt)
    state.sidebar(rt)
    _frame.active = True
    try:
        page.run()
    finally:
        _frame.active = False
        for key in ("rc_url_cell", "rc_url_question"):  # a link's cell and question are for the page it opened (ui/share.py)
            st.session_state.pop(key, None)


def ensure_frame() -> None:
    """Called first by every page: when Streamlit ran the page without app.py, run the app.

    Only Streamlit's pages/-folder fallback does that (the first request of a fresh process,
    and every AppTest run). Running the app here draws the frame and runs this same page inside
    it, in this same script run, so nothing the visitor sent (a click, a chat message) is lost;
    then the outer, frameless run stops.
    """
    if in_frame():
        return
    run_app()
    st.stop()


def page_init() -> "Runtime":
    """What every page calls first: the app's frame around it, then the shared runtime."""
    ensure_frame()
    from ui import state

    rt = state.runtime()
    try:
        rt.collections()
    except Exception as exc:  # noqa: BLE001 - e.g. a Qdrant server that went away
        state.show_error(exc, "Reading the collections")
        st.stop()
    return rt
