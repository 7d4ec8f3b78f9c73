"""Widgets bound to a session value that outlives the page (``bound``), and the retrieval controls the
notebook and the lab share."""

from __future__ import annotations

from typing import Any, Callable

import streamlit as st

from ragcore.settings import catalog

from .settings_form import choices

CONTEXT_MODES = ("corpus", "selection", "both")
CONTEXT_LABELS = {"corpus": "Full corpus", "selection": "Selected text", "both": "Both"}
# the rule's modes, its default first (the app's controls show hybrid first)
RETRIEVAL_MODES = choices("retrieval_mode")
TOP_K_MAX = int(catalog.widget_range("top_k")[1])  # the app's top-K controls (the settings catalog's widget range)


def bound(widget: Callable[..., Any], label: str, canon: str, *, key: str, **kwargs: Any) -> Any:
    """A widget whose value lives in ``st.session_state[canon]`` and survives page switches.

    Several widgets (the sidebar's and a page's) may be bound to the same value; moving one
    moves the others on the next rerun.
    """
    ss = st.session_state
    pushed = f"_bound_{key}"  # the canonical value last written into this widget
    if ss.get(key) is not None and ss.get(pushed, object()) == ss[canon] and ss[key] != ss[canon]:
        # The widget holds a value of its own that no callback carried over (fast moves on a busy
        # machine: a run interrupted by the next key press), and nothing else moved the canonical
        # value since it was written here. The browser shows the widget's value: adopt it, or the
        # page would show one threshold and use another.
        ss[canon] = ss[key]
    # Written on every run, not only on the first: a widget the browser has not mounted yet (inside
    # a closed popover) takes its value from the run that mounts it; without this it would start
    # from the widget's default and send that back as the user's choice.
    ss[key] = ss[canon]
    ss[pushed] = ss[canon]

    def sync() -> None:
        value = ss[key]
        if value is not None:
            ss[canon] = value
            ss[pushed] = value

    return widget(label, key=key, on_change=sync, **kwargs)


def context_mode_control(
    key: str, *, label: str = "Context", options: tuple[str, ...] = CONTEXT_MODES, help: str | None = None,
    canon: str = "cfg_context",
) -> str:
    ss = st.session_state
    if ss.get(canon) not in options:
        ss[canon] = options[0]
    return bound(
        st.segmented_control, label, canon, key=key, options=list(options), required=True,
        format_func=lambda m: CONTEXT_LABELS[m], help=help or "Full corpus retrieves from the collection; "
        "Selected text answers only from the passage you selected; Both uses the passage first, then the corpus.",
    )


def retrieval_mode_control(key: str, *, label: str = "Retrieval", canon: str = "cfg_mode") -> str:
    return bound(
        st.segmented_control, label, canon, key=key, options=list(RETRIEVAL_MODES), required=True,
        help="hybrid fuses dense (cosine) and sparse (BM25) rankings; dense ranks by cosine; sparse by BM25.",
    )


def top_k_control(key: str, canon: str = "cfg_top_k") -> int:
    return bound(st.slider, "Top-K", canon, key=key, min_value=1, max_value=TOP_K_MAX, step=1,
                 help="How many chunks are kept as numbered evidence [1..K].")


def threshold_control(key: str, canon: str = "cfg_threshold") -> float:
    lo, hi, step = catalog.widget_range("threshold")
    return bound(st.slider, "Threshold (cosine)", canon, key=key, min_value=lo, max_value=hi, step=step,
                 format="%.2f", help="Chunks whose cosine similarity to the question is below this are cut, in every mode.")
