"""Retrieval lab: every candidate with its scores, live top-K / threshold, A/B, and the probe."""

from __future__ import annotations

from ui import shell

# before the slow imports below: Streamlit may run this page without app.py (ui/shell.py says
# when); the app's frame is drawn at once and runs this page inside it
# ruff: noqa: E402
shell.ensure_frame()

import altair as alt
import pandas as pd
import streamlit as st

from ragcore.engine.engine import Engine
from ragcore.settings import catalog
from ragcore.types import Candidate, RetrievalResult
from ui import share, state
from ui.abstain_panel import abstain_panel
from ui.probe import SIGNAL_HELP, probe, signal_cells
from ui.labtable import ORDERS, lab_table_html
from ui.lab_ab import ab_table_html, compare
from ui.render import expansion_line, fields_text, fmt_score, md_escape, md_inline, viewer_params

rt = shell.page_init()
ss = st.session_state
collection: str = ss["cfg_collection"]
info = rt.info(collection)

st.markdown("## Retrieval lab")
if info is None:
    st.info(f"The collection '{md_inline(collection)}' does not exist yet. Ingest documents first.", icon=":material/info:")
    st.page_link("pages/library.py", label="Open the Library", icon=":material/library_books:")
    st.stop()

base = state.base_settings()
ss.setdefault("lab_question", "")
ss.setdefault("lab_fusion", base.fusion)
ss.setdefault("lab_rrf_k", int(base.rrf_k))
ss.setdefault("lab_dense_weight", float(base.dense_weight))
ss.setdefault("lab_candidates", int(base.candidates))
ss.setdefault("lab_dedupe", bool(base.dedupe))
ss.setdefault("lab_queries", 0)
# the retrieval signals (the settings catalog's ``lab`` settings): fielded BM25, documents then passages, expansion
SIGNALS = catalog.lab_signals()
for _f in SIGNALS:
    ss.setdefault(f"lab_{_f}", getattr(base, _f))
# the lab's own retrieval controls: they start from the notebook's and never change them, except
# through "Use these settings in the notebook" below
ss.setdefault("lab_cfg_mode", ss["cfg_mode"])
ss.setdefault("lab_cfg_top_k", int(ss["cfg_top_k"]))
ss.setdefault("lab_cfg_threshold", float(ss["cfg_threshold"]))
LAB_TO_NOTEBOOK = {"lab_cfg_mode": "cfg_mode", "lab_cfg_top_k": "cfg_top_k", "lab_cfg_threshold": "cfg_threshold"}
LAB_TO_BASE = {"lab_fusion": "fusion", "lab_rrf_k": "rrf_k", "lab_dense_weight": "dense_weight",
               "lab_candidates": "candidates", "lab_dedupe": "dedupe", **{f"lab_{f}": f for f in SIGNALS}}


def _use_in_notebook() -> None:
    for lab_key, nb_key in LAB_TO_NOTEBOOK.items():
        ss[nb_key] = ss[lab_key]
    state.set_base_settings(state.base_settings().with_(**{f: ss[k] for k, f in LAB_TO_BASE.items()}))
    ss["lab_applied"] = (f"The notebook now uses {ss['cfg_mode']} retrieval, top-K {ss['cfg_top_k']}, threshold "
                         f"{float(ss['cfg_threshold']):.2f}, {ss['lab_fusion']} fusion, signals: {signals_summary()} (this session).")


def signals_summary() -> str:
    on = [f"field weight {float(ss['lab_field_weight']):g}" if ss["lab_field_weight"] > 0 else "",
          f"document decay {float(ss['lab_doc_decay']):g}" if ss["lab_doc_decay"] > 0 else "",
          f"{int(ss['lab_per_doc'])} per document" if ss["lab_per_doc"] > 0 else "",
          f"named pages {float(ss['lab_named_weight']):g}" if ss["lab_named_weight"] > 0 else "",
          f"title {float(ss['lab_doc_title_weight']):g}" if ss["lab_doc_title_weight"] > 0 else "",
          f"{int(ss['lab_prf_terms'])} expansion terms" if ss["lab_prf_terms"] > 0 else ""]
    return ", ".join(x for x in on if x) or "off"


def _differs_from_notebook() -> bool:
    b = state.base_settings()
    return any(ss[k] != ss[v] for k, v in LAB_TO_NOTEBOOK.items()) or any(ss[k] != getattr(b, f) for k, f in LAB_TO_BASE.items())

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


# three rows that fit 1280 px beside the sidebar: the cuts and the two popovers, then the summary and the action
cuts = st.columns([0.3, 0.3, 0.4], vertical_alignment="bottom")
with cuts[0]:
    top_k = state.top_k_control("lab_top_k", canon="lab_cfg_top_k")
with cuts[1]:
    threshold = state.threshold_control("lab_threshold", canon="lab_cfg_threshold")
with cuts[2], st.container(horizontal=True, gap="small"):
    with st.popover("Fusion, dedupe, pool", icon=":material/tune:"):
        fusion_controls()
    with st.popover("Signals", icon=":material/insights:", help="Fielded BM25, documents then passages, query expansion"):
        signal_controls()
applied = st.columns([0.6, 0.4], vertical_alignment="center")
applied[0].caption(f"Signals: {md_inline(signals_summary())}")
applied[1].button("Use these settings in the notebook", key="lab_apply", icon=":material/input:", on_click=_use_in_notebook,
                  disabled=not _differs_from_notebook(), width="stretch",
                  help="Copy the lab's retrieval mode, top-K, threshold, fusion, pool, dedupe and signals into the notebook "
                       "(this session). Until then the lab never changes the notebook's answers.")

if msg := ss.pop("lab_applied", None):
    st.toast(msg, icon=":material/input:")
ls = state.settings().with_(
    retrieval_mode=ss["lab_cfg_mode"], top_k=int(ss["lab_cfg_top_k"]), threshold=round(float(ss["lab_cfg_threshold"]), 4),
    fusion=ss["lab_fusion"], rrf_k=int(ss["lab_rrf_k"]), dense_weight=float(ss["lab_dense_weight"]),
    candidates=int(ss["lab_candidates"]), dedupe=bool(ss["lab_dedupe"]),
    field_weight=float(ss["lab_field_weight"]), doc_decay=float(ss["lab_doc_decay"]), per_doc=int(ss["lab_per_doc"]),
    named_weight=float(ss["lab_named_weight"]), doc_title_weight=float(ss["lab_doc_title_weight"]),
    prf_terms=int(ss["lab_prf_terms"]), prf_docs=int(ss["lab_prf_docs"]), prf_weight=float(ss["lab_prf_weight"]),
)
share.write(share.lab_params(ss, state.base_settings()))  # the URL reproduces this setup (ui/share.py)
FIELDS_ON = ls.field_weight > 0
DOCS_ON = ls.doc_decay > 0 or ls.per_doc > 0 or ls.named_weight > 0 or ls.doc_title_weight > 0 or ls.doc_centroid_weight > 0


def query_key(s, q: str) -> tuple:
    return (collection, info.corpus_version, q.strip(), s.retrieval_mode, s.fusion, s.rrf_k, s.dense_weight, s.candidates,
            s.path_filter, *(getattr(s, f) for f in SIGNALS))


def retrieve(s, q: str) -> RetrievalResult | None:
    try:
        res = rt.engine.retrieve(q, settings=s, collection=collection)
    except Exception as exc:  # noqa: BLE001
        state.show_error(exc, "Retrieval")
        return None
    ss["lab_queries"] += 1
    return res


result: RetrievalResult | None = None
if question.strip():
    key = query_key(ls, question)
    stored = ss.get("lab_result")
    if stored is None or stored[0] != key:
        fresh = retrieve(ls, question)
        if fresh is not None:
            ss["lab_result"] = (key, fresh)
            stored = ss["lab_result"]
    if stored is not None and stored[0] == key:
        # moving top-K / threshold / dedupe re-applies the cuts (with the rest of the settings' cuts) to the stored pool: no new query
        result = Engine.recut_as(stored[1], ls)
        ss["lab_view"] = result
else:
    st.info("Type a question: the lab runs retrieval only (no answer) and shows every candidate with its scores.",
            icon=":material/lightbulb:")


def signals_line(c: Candidate) -> str:
    """The selected chunk's signals that are on: field part of BM25 and matched fields, its document."""
    parts = []
    if FIELDS_ON:
        parts.append(f"field part of BM25 {fmt_score(c.field_score, 2)}; matched fields: {fields_text(c.matched_fields)}")
    if DOCS_ON:
        parts.append(f"document rank {c.doc_rank or '–'} (score {fmt_score(c.doc_score, 4)})")
        if c.named_by:
            parts.append(f"its document is named by {', '.join(c.named_by)}")
        if c.doc_title_cosine is not None:
            parts.append(f"title cosine {fmt_score(c.doc_title_cosine)}")
    return " · ".join(parts)


def histogram(res: RetrievalResult, thr: float) -> alt.Chart:
    df = pd.DataFrame([
        {"cosine": c.dense_score, "status": "kept" if c.kept else ("cut: threshold" if c.dropped_reason == "threshold" else "cut: dedupe / top-K")}
        for c in res.candidates if c.dense_score is not None
    ])
    colors = alt.Scale(domain=["kept", "cut: threshold", "cut: dedupe / top-K"], range=["#2da44e", "#d1242f", "#afb8c1"])
    bars = alt.Chart(df).mark_bar(opacity=0.85).encode(
        x=alt.X("cosine:Q", bin=alt.Bin(step=0.025), title="cosine similarity (question vs chunk)", scale=alt.Scale(domain=[min(-0.1, df["cosine"].min() if len(df) else 0), 1.0])),
        y=alt.Y("count():Q", title="chunks", stack=True),
        color=alt.Color("status:N", scale=colors, legend=alt.Legend(orient="top", title=None)),
        tooltip=["status:N", "count():Q"],
    )
    rule = alt.Chart(pd.DataFrame({"threshold": [thr]})).mark_rule(color="#d1242f", strokeDash=[5, 3], size=2).encode(
        x="threshold:Q", tooltip=[alt.Tooltip("threshold:Q", format=".2f")])
    label = alt.Chart(pd.DataFrame({"threshold": [thr], "y": [0], "text": [f"threshold {thr:.2f}"]})).mark_text(
        align="left", dx=4, dy=-6, color="#d1242f", fontSize=11).encode(x="threshold:Q", y=alt.value(10), text="text:N")
    return (bars + rule + label).properties(height=190)


tab_ev, tab_ab, tab_probe = st.tabs(["Evidence", "A/B comparison", "Why not retrieved?"])

# ---------------------------------------------------------------- evidence table + histogram
with tab_ev:
    if result is not None:
        cut = {r: sum(1 for c in result.candidates if c.dropped_reason == r) for r in ("threshold", "dedupe", "top_k")}
        lat = sum(v for k, v in result.latency_ms.items())
        m = st.columns(6)
        m[0].metric("Candidates", len(result.candidates))
        m[1].metric("Kept", len(result.kept))
        m[2].metric("Cut: threshold", cut["threshold"])
        m[3].metric("Cut: dedupe", cut["dedupe"])
        m[4].metric("Cut: top-K", cut["top_k"])
        m[5].metric("Retrieval", f"{lat:.0f} ms", help=", ".join(f"{k} {v:.1f} ms" for k, v in result.latency_ms.items()))
        st.caption(
            f"Ranked by **{result.rank_score_kind}** ({result.retrieval_mode} mode). The threshold applies to the cosine score in every mode. "
            f"Moving top-K, the threshold or dedupe re-filters these {len(result.candidates)} candidates without querying again."
        )
        if result.expansion_terms:
            st.caption(expansion_line(result.expansion_terms), help="Pseudo-relevance feedback: words of the first pass's "
                       f"{ls.prf_docs} best chunks, added to the BM25 query with these weights")
        elif ls.prf_terms > 0:
            st.caption("Expansion is on, but added no terms" + (" (dense mode has no BM25 query)." if ls.retrieval_mode == "dense" else "."))
        abstain_panel(rt.engine, question, ls, collection)
        if result.candidates:
            st.altair_chart(histogram(result, ls.threshold), width="stretch")
            by_rank = {c.rank: c for c in result.candidates}
            left, right = st.columns([2, 3], vertical_alignment="bottom")
            order = left.segmented_control(
                "Order", list(ORDERS), default="rank", key="lab_order",
                help="Sort the rows by rank (the retrieval mode's order) or by one score, highest first",
            ) or "rank"
            pick = right.selectbox(
                "Read a chunk in full", list(by_rank), index=None, key="lab_pick",
                placeholder="Pick a rank: its full text, every score and a link to its lines",
                format_func=lambda r: f"#{r} · {'kept' if by_rank[r].kept else 'cut'} · {by_rank[r].chunk.locator.split('#')[0]}",
            )
            st.html(lab_table_html(result, fusion=ls.fusion, order=order, fields_on=FIELDS_ON, docs_on=DOCS_ON))
            if pick in by_rank:
                c: Candidate = by_rank[pick]
                with st.container(border=True):
                    st.markdown(f"**Rank {c.rank}** · {md_inline(c.chunk.locator)}" + (f" · {md_inline(c.chunk.section_label)}" if c.chunk.section else ""))
                    st.caption(f"cosine {fmt_score(c.dense_score)} (dense rank {c.dense_rank or '–'}) · "
                               f"BM25 {fmt_score(c.sparse_score, 2)} (sparse rank {c.sparse_rank or '–'}) · "
                               f"fused {fmt_score(c.fused_score, 4)} (fused rank {c.fused_rank or '–'})"
                               + (f" · cut by {c.dropped_reason}" if c.dropped_reason else ""))
                    if FIELDS_ON or DOCS_ON:
                        st.caption(md_inline(signals_line(c)))
                    st.code(c.chunk.text, language=None, wrap_lines=True)
                    st.page_link("pages/library.py", label="Open these lines in the source viewer", icon=":material/open_in_new:",
                                 query_params=viewer_params(c.chunk.path, c.chunk.start_line, c.chunk.end_line, c.chunk.page, collection))
        else:
            st.warning("No candidates: nothing in the collection matches this question in this mode.")

# ---------------------------------------------------------------- A/B
SIDE_PARAMS = ("retrieval_mode", "fusion", "top_k", "threshold", "dedupe", "rrf_k", "dense_weight")


# configuration A is the lab's own setup (its sliders and popovers); B starts from it and has its own controls
A_CANON = {"retrieval_mode": "lab_cfg_mode", "top_k": "lab_cfg_top_k", "threshold": "lab_cfg_threshold", "fusion": "lab_fusion",
           "dedupe": "lab_dedupe", "rrf_k": "lab_rrf_k", "dense_weight": "lab_dense_weight"}


def canon(side: str, k: str) -> str:
    return A_CANON[k] if side == "A" else f"ab_{side}_{k}"


def side_defaults(side: str) -> dict:
    s = ls
    mode = s.retrieval_mode if side == "A" else ("dense" if s.retrieval_mode != "dense" else "hybrid")
    return {"retrieval_mode": mode, "fusion": s.fusion, "top_k": s.top_k, "threshold": float(s.threshold), "dedupe": s.dedupe,
            "rrf_k": s.rrf_k, "dense_weight": float(s.dense_weight)}


def side_config(side: str) -> None:
    if side == "A":
        # A is the lab's own setup, shown, not a second set of widgets on the same values (two widgets on one
        # value disagree when a fast run is cut short); the lab's controls above change it
        st.markdown("**Configuration A** — the lab's settings above")
        fusion = f"{ss['lab_fusion']} " + (f"(k={int(ss['lab_rrf_k'])})" if ss["lab_fusion"] == "rrf" else f"(dense weight {float(ss['lab_dense_weight']):.2f})")
        st.caption(f"Mode **{ss['lab_cfg_mode']}** · top-K **{int(ss['lab_cfg_top_k'])}** · threshold "
                   f"**{float(ss['lab_cfg_threshold']):.2f}** · fusion {fusion} · dedupe {'on' if ss['lab_dedupe'] else 'off'}")
        return
    for k, v in side_defaults(side).items():
        ss.setdefault(f"ab_{side}_{k}", v)
    st.markdown(f"**Configuration {side}**")
    c = st.columns(2)
    with c[0]:
        state.bound(st.selectbox, "Mode", canon(side, "retrieval_mode"), key=f"ab_{side}_mode_w", options=list(state.RETRIEVAL_MODES))
        state.bound(st.number_input, "Top-K", canon(side, "top_k"), key=f"ab_{side}_top_k_w", **_range("top_k"))
        state.bound(st.toggle, "Dedupe", canon(side, "dedupe"), key=f"ab_{side}_dedupe_w")
    with c[1]:
        state.bound(st.selectbox, "Fusion", canon(side, "fusion"), key=f"ab_{side}_fusion_w", options=list(catalog.entry("fusion").rule.choices))
        state.bound(st.number_input, "Threshold (cosine)", canon(side, "threshold"), key=f"ab_{side}_thr_w", **_range("threshold"),
                    format="%.2f")
        if ss[canon(side, "fusion")] == "weighted":
            state.bound(st.number_input, "Dense weight", canon(side, "dense_weight"), key=f"ab_{side}_dw_w",
                        **_range("dense_weight"))
        else:
            state.bound(st.number_input, "RRF k", canon(side, "rrf_k"), key=f"ab_{side}_rrf_w", **_range("rrf_k"))


def side_result(side: str) -> RetrievalResult | None:
    p = {k: ss[canon(side, k)] for k in SIDE_PARAMS}
    s = ls.with_(retrieval_mode=p["retrieval_mode"], fusion=p["fusion"], rrf_k=int(p["rrf_k"]), dense_weight=float(p["dense_weight"]),
                 top_k=int(p["top_k"]), threshold=float(p["threshold"]), dedupe=bool(p["dedupe"]))
    key = query_key(s, question)
    stored = ss.get(f"ab_result_{side}")
    if stored is None or stored[0] != key:
        res = retrieve(s, question)
        if res is None:
            return None
        ss[f"ab_result_{side}"] = (key, res)
        stored = ss[f"ab_result_{side}"]
    return Engine.recut_as(stored[1], s)


with tab_ab:
    cfg = st.columns(2, gap="large")
    with cfg[0], st.container(border=True):
        side_config("A")
    with cfg[1], st.container(border=True):
        side_config("B")
    if not question.strip():
        st.caption("Type a question above to compare the two configurations.")
    else:
        ra, rb = side_result("A"), side_result("B")
        if ra is not None and rb is not None:
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

# ---------------------------------------------------------------- why not retrieved?
with tab_probe:
    st.caption("Name the file (and line) you expected, or paste a sentence from the passage; the probe finds its chunk and "
               "tells you its scores and which setting cut it.")
    kind = st.segmented_control("Expected passage", ["A file", "A pasted passage"], default="A file", key="probe_kind", required=True)
    path = line = passage = None
    if kind == "A file":
        try:
            docs = [p for p, _ in rt.engine.documents(collection)]
        except Exception as exc:  # noqa: BLE001
            state.show_error(exc, "Listing the documents")
            docs = []
        pc = st.columns([0.75, 0.25], vertical_alignment="bottom")
        path = pc[0].selectbox("File", docs, key="probe_path", index=None, placeholder="Choose a file of the collection")
        line = pc[1].number_input("Line (0 = any)", min_value=0, step=1, key="probe_line") or None
    else:
        passage = st.text_area("Passage", key="probe_passage", height=90, placeholder="Paste a sentence from the passage you expected")
    go = st.button("Why not retrieved?", type="primary", key="probe_go", disabled=not question.strip(),
                   help=None if question.strip() else "Type a question first")
    if go:
        if not (path or (passage and passage.strip())):
            st.warning("Choose a file or paste a passage first.")
        else:
            try:
                ss["lab_probe"] = probe(rt.engine, question, ls, collection=collection, path=path, line=line, passage=passage)
            except Exception as exc:  # noqa: BLE001
                state.show_error(exc, "The probe")
    pr = ss.get("lab_probe")
    if pr is not None:
        show = {"kept": st.success, "no_match": st.warning, "not_in_collection": st.warning}.get(pr.verdict, st.warning)
        label = {"kept": "retrieved", "top_k": "cut by top-K", "threshold": "cut by the threshold", "dedupe": "cut by dedupe",
                 "per_doc": "cut by the per-document cap",
                 "filter": "filtered out", "not_candidate": "not a candidate", "not_in_pool": "not a candidate",
                 "not_in_collection": "not in the collection", "no_match": "no matching chunk"}[pr.verdict]
        show(f"**Verdict: {label}.** {md_escape(pr.message)}")
        st.info(md_escape(pr.fix), icon=":material/build:")
        if pr.chunk is not None and pr.verdict != "no_match":
            details = {
                "cosine": fmt_score(pr.cosine), "dense rank (all chunks)": pr.dense_rank or "–",
                "BM25": fmt_score(pr.bm25, 2) if pr.bm25 else "0 (no shared terms)" if pr.big is not None else "–",
                "sparse rank": pr.sparse_rank or "–",
                "rank in your pool": pr.candidate.rank if pr.candidate else "not in the pool",
                "fused rank": pr.candidate.fused_rank if pr.candidate and pr.candidate.fused_rank else "–",
            }
            if pr.match_score is not None:
                details["passage match"] = (pr.match_kind if pr.match_kind in ("verbatim", "near-verbatim")
                                            else f"similar (cosine {pr.match_score:.2f})")
            st.dataframe(pd.DataFrame([{k: str(v) for k, v in details.items()}]), hide_index=True, width="stretch")
            if sig := signal_cells(pr):
                st.dataframe(pd.DataFrame([sig]), hide_index=True, width="stretch",
                             column_config={k: st.column_config.TextColumn(k, help=SIGNAL_HELP.get(k)) for k in sig})
            ch = pr.chunk
            st.page_link("pages/library.py", label=f"Open {md_inline(ch.locator.split('#')[0])} in the source viewer",
                         icon=":material/open_in_new:", query_params=viewer_params(ch.path, ch.start_line, ch.end_line, ch.page, collection))
