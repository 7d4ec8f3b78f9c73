"""This session's settings: the Settings page's values (``rc_base``) plus the notebook's controls, and
saving them to the settings file."""

from __future__ import annotations

import streamlit as st

from ragcore.settings.config import RagcoreSettings

from .controls import TOP_K_MAX
from .process import load_settings
from .runtime import Runtime


def init_session(rt: Runtime) -> None:
    ss = st.session_state
    if "rc_base" not in ss:  # every new session (a reload) reads the settings file again
        loaded = load_settings(rt.settings.data_dir)
        ss["rc_base"] = loaded.settings.with_(qdrant_url=rt.settings.qdrant_url)
        ss["rc_sources"] = dict(loaded.sources)
        ss["rc_settings_problems"] = loaded.problems
    from .share import adopt_url

    first_run = adopt_url(ss)  # a link's lab setup and selected cell
    base: RagcoreSettings = ss["rc_base"]
    ss.setdefault("cfg_collection", base.collection)
    ss.setdefault("cfg_context", "corpus")
    ss.setdefault("cfg_mode", base.retrieval_mode)
    ss.setdefault("cfg_top_k", int(min(max(base.top_k, 1), TOP_K_MAX)))
    ss.setdefault("cfg_threshold", float(min(max(base.threshold, 0.0), 1.0)))
    # the URL's collection: a reload or a link (the session's first run), or a citation link to the
    # viewer (it has a path) not seen before. Not otherwise: the URL may still echo a collection this
    # session showed before the analyst switched (ui/share.py, adopt_url), with or without a path
    qp = st.query_params
    qp_col = qp.get("collection")
    seen: set = ss.setdefault("rc_qp_links", set())
    link = (qp.get("path"), qp.get("lines"), qp.get("page"), qp_col)
    new_link = bool(link[0]) and link not in seen
    if link[0]:
        seen.add(link)
    if (first_run or new_link) and qp_col and qp_col != ss["cfg_collection"]:
        if any(c.name == qp_col for c in rt.collections()):
            ss["cfg_collection"] = qp_col


def base_settings() -> RagcoreSettings:
    return st.session_state["rc_base"]


def set_base_settings(s: RagcoreSettings) -> None:
    st.session_state["rc_base"] = s


def settings() -> RagcoreSettings:
    """This session's settings: the Settings page's values plus the notebook's controls."""
    ss = st.session_state
    return base_settings().with_(
        collection=ss["cfg_collection"], retrieval_mode=ss["cfg_mode"], top_k=int(ss["cfg_top_k"]),
        threshold=round(float(ss["cfg_threshold"]), 4),
    )


def save_settings(new: RagcoreSettings, note: str) -> str:
    """Apply ``new`` to this session and write what changed to the settings file (never a key).

    Returns the message to show: what was saved, where, and which values the environment
    overrides at the next start."""
    from ragcore.settings.app_file import changed_values, save_app_settings

    ss = st.session_state
    old = base_settings()
    changes = changed_values(old, new)
    set_base_settings(new)
    if not changes:
        return f"{note}: nothing changed."
    path = save_app_settings(new.data_dir, changes)
    sources: dict[str, str] = ss.setdefault("rc_sources", {})
    overridden = [f"{k} ({sources[k].split('(')[-1].rstrip(')')})" for k in changes if sources.get(k, "").startswith("environment")]
    for k in changes:
        if not sources.get(k, "").startswith("environment"):
            sources[k] = "file"
    msg = f"{note}: saved in {path}, kept across reloads and restarts."
    if overridden:
        msg += " The environment sets " + ", ".join(overridden) + ": it wins again at the next start."
    return msg


def generator_name(s: RagcoreSettings) -> str:
    if not s.llm.configured:
        return "extractive"
    try:
        from ragcore.synthesis.llm.generator import OpenAIGenerator

        return OpenAIGenerator(s.llm).name
    except Exception:  # noqa: BLE001
        return f"openai-{s.llm.api}:{s.llm.model}"
