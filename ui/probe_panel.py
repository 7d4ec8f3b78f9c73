"""The Retrieval lab's "Why not retrieved?" tab: name the file (and line) or paste the passage expected,
and the probe (ui/probe.py) says where its chunk stands and which setting cut it."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ragcore.settings.config import RagcoreSettings

from .probe import SIGNAL_HELP, probe, signal_cells
from .process import show_error
from .render import fmt_score, md_escape, md_inline, viewer_params
from .runtime import Runtime


def probe_tab(rt: Runtime, question: str, ls: RagcoreSettings, collection: str) -> None:
    ss = st.session_state
    st.caption("Name the file (and line) you expected, or paste a sentence from the passage; the probe finds its chunk and "
               "tells you its scores and which setting cut it.")
    kind = st.segmented_control("Expected passage", ["A file", "A pasted passage"], default="A file", key="probe_kind", required=True)
    path = line = passage = None
    if kind == "A file":
        try:
            docs = [p for p, _ in rt.engine.documents(collection)]
        except Exception as exc:  # noqa: BLE001
            show_error(exc, "Listing the documents")
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
                show_error(exc, "The probe")
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
