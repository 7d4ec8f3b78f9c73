"""Settings: the LLM endpoint (key masked, never echoed), chunking, retrieval defaults, storage."""

from __future__ import annotations

from ui import shell

# before the slow imports below: Streamlit may run this page without app.py (ui/shell.py says
# when); the app's frame is drawn at once and runs this page inside it
# ruff: noqa: E402
shell.ensure_frame()

from dataclasses import replace

import pandas as pd
import streamlit as st

from ragcore.settings import catalog
from ragcore.settings.app_file import PERSISTED, settings_path, value_of, with_values
from ragcore.settings.config import ConfigError
from ragcore.settings.redact import redact_url
from ui import settings_form, state
from ui.render import md_code, md_escape, md_inline

rt = shell.page_init()

# the forms' settings, from the catalog: the saved ones of each group (the endpoint's URL and model are
# text fields the page draws itself: the URL is shown without its credentials)
ENDPOINT_TEXT = ("llm.base_url", "llm.model")
ENDPOINT = tuple(n for n in catalog.app_group("llm") if n not in ENDPOINT_TEXT)
CHUNKING = catalog.app_group("ingestion")
DEFAULTS = catalog.app_group("retrieval", "answering")

ss = st.session_state
base = state.base_settings()
llm = base.llm

st.markdown("## Settings")
settings_file = settings_path(rt.settings.data_dir)
st.caption(f"Saved values are kept across reloads and restarts in {md_code(settings_file)}. A RAGCORE\\_\\* or OPENAI\\_\\* "
           "variable set when the app starts, or an entry of `.streamlit/secrets.toml`, wins over the file. API keys are never written by the app: they come from "
           "the environment or `.streamlit/secrets.toml`.")
for problem in ss.get("rc_settings_problems") or ():
    st.warning(f"Ignored in the settings file: {md_inline(problem)}", icon=":material/warning:")

if msg := ss.pop("set_saved", None):
    st.success(msg, icon=":material/check_circle:")

left, right = st.columns([0.55, 0.45], gap="large")

# ---------------------------------------------------------------- LLM endpoint
with left:
    st.markdown("#### Language model endpoint")
    gen = state.generator_name(state.settings())
    st.markdown("Active generator: " + (f":green-badge[{md_inline(gen)}]" if llm.configured else ":gray-badge[extractive]")
                + (" · :blue-badge[a key is set]" if llm.api_key else ""))
    with st.form("llm_form", clear_on_submit=True, border=True):
        shown_url = redact_url(llm.base_url) or ""  # credentials in the URL are never shown
        url_rule, model_rule, key_rule = (catalog.entry(n).rule for n in (*ENDPOINT_TEXT, "llm.api_key"))
        base_url = st.text_input(url_rule.label, value=shown_url, placeholder="https://api.openai.com/v1  or  http://127.0.0.1:8000/v1",
                                 help=url_rule.help)
        model = st.text_input(model_rule.label, value=llm.model or "", placeholder="e.g. gpt-4o-mini, llama3.1 — empty: extractive composer",
                              help=model_rule.help)
        key = st.text_input(key_rule.label, value="", type="password", autocomplete="off",
                            placeholder="a key is set — leave empty to keep it" if llm.api_key else "sk-…  (local servers accept any non-empty key)",
                            help="Masked, never shown again and never written into notebooks or exports.")
        forget = st.checkbox("Remove the saved key", value=False, disabled=not llm.api_key)
        endpoint = settings_form.widgets(st.columns(2), st, ENDPOINT, base)
        saved = st.form_submit_button("Save endpoint", type="primary", icon=":material/save:")
    if saved:
        new_key = key.strip() or (None if forget else llm.api_key)
        # the field shows the URL without user:password@; unchanged, it keeps the credentials it had
        new_url = llm.base_url if base_url.strip() == shown_url and shown_url else (base_url.strip() or None)
        new = with_values(base.with_(llm=replace(llm, base_url=new_url, model=model.strip() or None, api_key=new_key)),
                          endpoint).llm
        msg = md_inline(state.save_settings(base.with_(llm=new), "Endpoint"))
        parts = [f"Generator **{md_inline(state.generator_name(base.with_(llm=new)))}**"]
        parts.append("a key is set" if new.api_key else "no key is set")
        if key.strip():
            parts.append("the key you typed is kept for this browser session only (put OPENAI\\_API\\_KEY in the "
                         "environment or .streamlit/secrets.toml to keep it)")
            ss.setdefault("rc_sources", {})["llm.api_key"] = "this session"
        ss["set_saved"] = msg + "  \n" + " · ".join(parts) + "."
        ss.pop("set_check", None)
        st.rerun()

    bc = st.container(horizontal=True, vertical_alignment="center", gap="medium")  # buttons as wide as their labels
    test = bc.button("Test connection", icon=":material/network_check:", key="set_test")
    if llm.configured and bc.button("Switch back to extractive", key="set_extractive", type="tertiary"):
        ss["set_saved"] = md_inline(state.save_settings(base.with_(llm=replace(llm, model=None)), "Switched to the extractive composer"))
        st.rerun()
    if test:
        with st.spinner("Contacting the endpoint…"):
            try:
                from ragcore.synthesis.llm.generator import OpenAIGenerator

                ok, message = OpenAIGenerator(llm).check_connection()
            except Exception as exc:  # noqa: BLE001
                ok, message = False, state.friendly(exc, "The connection test")
        ss["set_check"] = (ok, message)
    if check := ss.get("set_check"):
        ok, message = check
        (st.success if ok else st.error)(md_escape(message), icon=":material/check_circle:" if ok else ":material/error:")

# ---------------------------------------------------------------- chunking, retrieval, storage
with right:
    st.markdown("#### Chunking")
    with st.form("chunk_form", border=True):
        chunking = settings_form.widgets(st.columns(2), st, CHUNKING, base)
        st.caption("Applies to the next ingest started from the Library page (*Ingest folder* or an upload): files chunked "
                   "with other settings are chunked again. *Re-ingest* under *Manage collection* keeps the chunking the "
                   "collection was built with.")
        if st.form_submit_button("Save chunking", icon=":material/save:"):
            try:
                new_base = with_values(state.base_settings(), chunking)
            except ConfigError as exc:  # e.g. an overlap not below the size: the settings' own rule and words
                st.error(md_escape(str(exc)))
            else:
                ss["set_saved"] = md_inline(state.save_settings(
                    new_base, f"Chunking {new_base.chunk_size} words, {new_base.chunk_overlap} overlap"))
                st.rerun()

    st.markdown("#### Answering and retrieval defaults")
    with st.form("retr_form", border=True):
        defaults = settings_form.widgets(st.columns(2), st, DEFAULTS, base)
        cur_bar, cur_src = rt.engine.abstain_bar(base, state.settings().collection)
        st.caption(f"Bar in force for the current collection: {cur_bar:.3f} ({md_inline(cur_src)}).")
        st.caption("Mode, top-K and threshold are where a new session starts; the notebook's controls change them for "
                   "the session, and the lab has its own.")
        if st.form_submit_button("Save defaults", icon=":material/save:"):
            new_base = with_values(state.base_settings(), defaults)
            ss["set_saved"] = md_inline(state.save_settings(new_base, "Answering and retrieval defaults"))
            # where a new session starts (the notebook's controls), and the lab's controls follow the new defaults
            ss["cfg_mode"], ss["cfg_top_k"], ss["cfg_threshold"] = new_base.retrieval_mode, new_base.top_k, new_base.threshold
            for name in DEFAULTS:
                ss.pop(f"lab_{name}", None)
            for k in ("lab_cfg_mode", "lab_cfg_top_k", "lab_cfg_threshold"):
                ss.pop(k, None)
            st.rerun()

    st.markdown("#### Storage")
    engine = "Qdrant Edge, Qdrant's engine in process" if rt.settings.embedded_engine == "edge" else "Qdrant local mode"
    st.caption(f"Data directory (the embedded store, {engine}, in `{rt.settings.store_path.name}/`; query snapshots "
               "in `snapshots/`; notebooks in `notebooks/`)")
    st.code(str(rt.settings.data_dir), language=None)
    if rt.settings.qdrant_url:
        st.caption(f"Collections live on the Qdrant server {md_inline(rt.settings.qdrant_url)}.")
    st.caption("Changing the data directory needs a restart: stop the app, set `RAGCORE_DATA_DIR=/new/folder` "
               "(or `RAGCORE_QDRANT_URL` for a server) and start it again.")

# ---------------------------------------------------------------- where each value comes from
st.markdown("#### Where each value comes from")
sources = ss.get("rc_sources") or {}
cur = state.base_settings()
rows = []
for name in (*PERSISTED, *catalog.secret_names()):  # a key: only whether it is set
    v = value_of(cur, name)
    shown = ("set" if v else "not set") if name in catalog.secret_names() else ("–" if v is None else str(v))
    rows.append({"setting": name, "value": shown, "from": sources.get(name, "default")})
st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height=38 + 35 * 8, key="set_sources",
             column_config={"from": st.column_config.TextColumn(help="default · file (the settings file above) · "
                                                               "environment (VARIABLE) · secrets (.streamlit/secrets.toml) · this session")})
