"""Retrieval lab: every candidate with its scores, live top-K / threshold, A/B, and the probe."""

from __future__ import annotations

from ui import shell

# before the slow imports below: Streamlit may run this page without app.py (ui/shell.py says
# when); the app's frame is drawn at once and runs this page inside it
# ruff: noqa: E402
shell.ensure_frame()

import streamlit as st

from ragcore.engine.engine import Engine
from ragcore.settings import catalog
from ragcore.settings.config import RagcoreSettings
from ragcore.types import RetrievalResult
from ui import lab_sides, session, share, state
from ui.lab_ab import ab_table_html, compare
from ui.lab_evidence import evidence_tab
from ui.probe_panel import probe_tab
from ui.render import md_inline

rt = shell.page_init()
ss = st.session_state
collection: str = ss["cfg_collection"]
info = rt.info(collection)

st.markdown("## Retrieval lab")
if info is None:
    st.info(f"The collection '{md_inline(collection)}' does not exist yet. Ingest documents first.", icon=":material/info:")
    st.page_link("pages/library.py", label="Open the Library", icon=":material/library_books:")
    st.stop()

session.init_lab(state.base_settings())
SIGNALS = session.SIGNALS


def _use_in_notebook() -> None:
    state.set_base_settings(session.lab_into_notebook(state.base_settings()))
    nb, lab = session.notebook_controls(), session.lab_setup()
    ss["lab_applied"] = (f"The notebook now uses {nb.mode} retrieval, top-K {nb.top_k}, threshold "
                         f"{nb.threshold:.2f}, {lab.fusion} fusion, signals: {lab.signals_summary()} (this session).")


# ---------------------------------------------------------------- query row
row = st.columns([0.6, 0.4], vertical_alignment="bottom")
with row[0]:
    question = state.bound(st.text_input, "Question", "lab_question", key="lab_q",
                           placeholder="e.g. What does the threshold apply to?")
with row[1]:
    state.retrieval_mode_control("lab_mode", label="Retrieval mode", canon="lab_cfg_mode")

def _range(name: str) -> dict:
    lo, hi, step = catalog.widget_range(name)
    return {"min_value": lo, "max_value": hi, "step": step}


def fusion_controls() -> None:
    state.bound(st.segmented_control, "Fusion", "lab_fusion", key="lab_fusion_w", options=list(catalog.entry("fusion").rule.choices), required=True,
                help="rrf: Σ 1/(k + rank) over the branches; weighted: w·cosine + (1−w)·BM25/max.")
    state.bound(st.number_input, "RRF k", "lab_rrf_k", key="lab_rrf_k_w", **_range("rrf_k"))
    state.bound(st.slider, "Dense weight (weighted fusion)", "lab_dense_weight", key="lab_dw_w", **_range("dense_weight"))
    state.bound(st.number_input, "Candidates per branch", "lab_candidates", key="lab_cand_w", **_range("candidates"),
                help="The pool the sliders re-filter; changing it queries again.")
    state.bound(st.toggle, "Dedupe (best chunk per section)", "lab_dedupe", key="lab_dedupe_w")


def signal_controls() -> None:
    """The retrieval signals, the lab's own like every other control here: label, range and help from the
    settings catalog. Number inputs, weights too: an exact value can be typed (a slider over 0-10 in steps of
    0.1 takes a hundred key presses to reach one)."""
    st.caption("Each signal's scores show in the table while it is on.")
    for name in SIGNALS:
        e = catalog.entry(name)
        lo, hi, step = catalog.widget_range(name)
        state.bound(st.number_input, e.rule.label, f"lab_{name}", key=f"lab_{name}_w", min_value=lo, max_value=hi, step=step,
                    help=e.rule.help)


def cut_controls() -> None:
    """Three rows that fit 1280 px beside the sidebar: the cuts and the two popovers, then the summary and the action."""
    cuts = st.columns([0.3, 0.3, 0.4], vertical_alignment="bottom")
    with cuts[0]:
        state.top_k_control("lab_top_k", canon="lab_cfg_top_k")
    with cuts[1]:
        state.threshold_control("lab_threshold", canon="lab_cfg_threshold")
    with cuts[2], st.container(horizontal=True, gap="small"):
        with st.popover("Fusion, dedupe, pool", icon=":material/tune:"):
            fusion_controls()
        with st.popover("Signals", icon=":material/insights:", help="Fielded BM25, documents then passages, query expansion"):
            signal_controls()
    applied = st.columns([0.6, 0.4], vertical_alignment="center")
    applied[0].caption(f"Signals: {md_inline(session.lab_setup().signals_summary())}")
    applied[1].button("Use these settings in the notebook", key="lab_apply", icon=":material/input:", on_click=_use_in_notebook,
                      disabled=not session.lab_differs_from_notebook(state.base_settings()), width="stretch",
                      help="Copy the lab's retrieval mode, top-K, threshold, fusion, pool, dedupe and signals into the notebook "
                           "(this session). Until then the lab never changes the notebook's answers.")
    if msg := ss.pop("lab_applied", None):
        st.toast(msg, icon=":material/input:")


def query_key(s: RagcoreSettings, q: str) -> tuple:
    return (collection, info.corpus_version, q.strip(), s.retrieval_mode, s.fusion, s.rrf_k, s.dense_weight, s.candidates,
            s.path_filter, *(getattr(s, f) for f in SIGNALS))


def retrieve(s: RagcoreSettings, q: str) -> RetrievalResult | None:
    try:
        res = rt.engine.retrieve(q, settings=s, collection=collection)
    except Exception as exc:  # noqa: BLE001
        state.show_error(exc, "Retrieval")
        return None
    ss["lab_queries"] += 1
    return res


def lab_result(ls: RagcoreSettings, q: str) -> RetrievalResult | None:
    """The lab's candidates for ``q``: queried when the question or a pool setting changed; moving top-K,
    the threshold or dedupe re-applies the cuts (with the rest of the settings' cuts) to the stored pool."""
    key = query_key(ls, q)
    stored = ss.get("lab_result")
    if stored is None or stored[0] != key:
        fresh = retrieve(ls, q)
        if fresh is not None:
            ss["lab_result"] = (key, fresh)
            stored = ss["lab_result"]
    if stored is None or stored[0] != key:
        return None
    result = Engine.recut_as(stored[1], ls)
    ss["lab_view"] = result
    return result


# ---------------------------------------------------------------- A/B


def config_a(lab: session.LabSetup) -> None:
    # A is the lab's own setup, shown, not a second set of widgets on the same values (two widgets on one
    # value disagree when a fast run is cut short); the lab's controls above change it
    st.markdown("**Configuration A** — the lab's settings above")
    fusion = f"{lab.fusion} " + (f"(k={lab.rrf_k})" if lab.fusion == "rrf" else f"(dense weight {lab.dense_weight:.2f})")
    st.caption(f"Mode **{lab.mode}** · top-K **{lab.top_k}** · threshold "
               f"**{lab.threshold:.2f}** · fusion {fusion} · dedupe {'on' if lab.dedupe else 'off'}")


def config_b(ls: RagcoreSettings, side: str = "B") -> None:
    st.markdown(f"**Configuration {side}**")
    lab_sides.side_controls(side, ls)


def side_result(side: str, ls: RagcoreSettings, question: str) -> RetrievalResult | None:
    s = lab_sides.side_settings(side, ls, ss)
    key = query_key(s, question)
    stored = ss.get(f"ab_result_{side}")
    if stored is None or stored[0] != key:
        res = retrieve(s, question)
        if res is None:
            return None
        ss[f"ab_result_{side}"] = (key, res)
        stored = ss[f"ab_result_{side}"]
    return Engine.recut_as(stored[1], s)


def ab_tab(lab: session.LabSetup, ls: RagcoreSettings, question: str) -> None:
    cfg = st.columns(2, gap="large")
    with cfg[0], st.container(border=True):
        config_a(lab)
    with cfg[1], st.container(border=True):
        config_b(ls)
    if not question.strip():
        st.caption("Type a question above to compare the two configurations.")
        return
    ra, rb = side_result("A", ls, question), side_result("B", ls, question)
    if ra is None or rb is None:
        return
    cmp = compare(ra, rb)
    m = st.columns(5)
    m[0].metric("Evidence A", cmp.evidence_a)
    m[1].metric("Evidence B", cmp.evidence_b)
    m[2].metric("Overlap", f"{cmp.overlap}", help=f"Jaccard {cmp.jaccard:.2f}" if cmp.jaccard is not None else None)
    m[3].metric("Added in B", cmp.added)
    m[4].metric("Dropped in B", cmp.dropped)
    st.caption(f"A ranks by **{cmp.kind_a}**, B by **{cmp.kind_b}**; {cmp.moved} shared chunk(s) moved.")
    if cmp.rows:
        st.html(ab_table_html(cmp))


# ---------------------------------------------------------------- everything the cuts change, one fragment
@st.fragment
def lab_body(question: str) -> None:
    """The cuts, the URL, the evidence, A/B and the probe, drawn from one reading of the lab's values.

    A fragment, so that moving a control here reruns only this, in the session's one script thread: Streamlit's
    fast reruns (``runner.fastReruns``) stop a running full-page run and start the next in a new thread at once,
    and the stopped thread applies its (older) widget values to the shared session before it notices the stop.
    Under a burst of key presses on the threshold slider the older values then overwrote the newest, and the
    slider stayed where the keys left it while the URL and the histogram line showed an earlier value (issue 42).
    A fragment's rerun is queued to the running thread instead, in order (streamlit/runtime/app_session.py)."""
    cut_controls()
    lab = session.lab_setup()  # one reading of the lab's values for this whole run: the URL, the table and the histogram
    ls = lab.settings(state.settings())
    share.write(share.lab_params(ss, state.base_settings()))  # the URL reproduces this setup (ui/share.py)
    result = None
    if question.strip():
        result = lab_result(ls, question)
    else:
        st.info("Type a question: the lab runs retrieval only (no answer) and shows every candidate with its scores.",
                icon=":material/lightbulb:")
    tab_ev, tab_ab, tab_probe = st.tabs(["Evidence", "A/B comparison", "Why not retrieved?"])
    with tab_ev:
        if result is not None:
            evidence_tab(result, ls, question, rt.engine, collection)
    with tab_ab:
        ab_tab(lab, ls, question)
    with tab_probe:
        probe_tab(rt, question, ls, collection)


lab_body(question)
