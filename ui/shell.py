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
"""

from __future__ import annotations

from pathlib import Path

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


def navigation_links(pages: list) -> None:
    with st.sidebar:
        for p in pages:
            st.page_link(p)
        st.divider()


def run_app() -> None:
    """app.py: page config, navigation, then the runtime, the demo collection, the sidebar, the page."""
    st.set_page_config(page_title=PAGE_TITLE, page_icon=PAGE_ICON, layout="wide")
    # absolute paths: the script Streamlit started may be a page itself (a cold deep link, AppTest)
    pages = [st.Page(str(ROOT / s.path), title=s.title, icon=s.icon, url_path=s.url_path, default=s.default) for s in PAGES]
    page = st.navigation(pages, position="hidden")
    navigation_links(pages)

    # imported only now: ragcore (LlamaIndex, Qdrant, onnxruntime) takes seconds to import
    # on a cold process, and the navigation above should not wait for it (the spinner shows
    # only when this takes over half a second, i.e. on a cold start)
    with st.spinner("Starting ragcore…"):
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
