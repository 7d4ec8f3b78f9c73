"""The notebooks this session has read, re-read from disk only when their file changed."""

from __future__ import annotations

from typing import Any

import streamlit as st

from .notebook import Notebook, NotebookError
from .render import md_escape
from .runtime import Runtime

SAVE_WAIT_S = 60.0  # how long a run waits for the previous run's save (see load_notebook)


def load_notebook(rt: Runtime, collection: str) -> Notebook:
    """The collection's notebook, re-read from disk only when the file changed."""
    ss = st.session_state
    inflight = ss.get("rc_inflight")
    if inflight is not None and not inflight.is_set():
        # The previous run's answer is still being saved (the whole notebook file is parsed and written: a
        # second or more for a long notebook on a loaded machine). Read before the save ends and this run
        # misses that cell, and numbers the next one a place too low until a later run (the "17, then 18"
        # seen at load). 5 s was too short at load 15; the bound only keeps a save that never ends from
        # hanging the page.
        if not inflight.wait(timeout=SAVE_WAIT_S):
            st.caption("The previous answer is still being saved; it appears on the next run.")
    store = rt.notebooks
    cache: dict[str, tuple[Any, Notebook]] = ss.setdefault("rc_nb_cache", {})
    sig = store.signature(collection)
    hit = cache.get(collection)
    if hit is not None and hit[0] == sig and sig is not None:
        return hit[1]
    try:
        nb = store.load(collection)
    except NotebookError as exc:
        st.warning(md_escape(str(exc)))
        nb = Notebook(collection)
    cache[collection] = (store.signature(collection), nb)
    return nb


def remember_notebook(rt: Runtime, nb: Notebook) -> None:
    ss = st.session_state
    ss.setdefault("rc_nb_cache", {})[nb.collection] = (rt.notebooks.signature(nb.collection), nb)
