"""The Retrieval lab's evidence tab, drawn from one re-cut retrieval result: the counts, the cosine
histogram with the threshold line, the chunk table and a picked chunk in full."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ragcore.settings.config import RagcoreSettings
from ragcore.types import Candidate, RetrievalResult

from .abstain_panel import abstain_panel
from .lab_view import histogram, signals_line
from .labtable import ORDERS, lab_table_html
from .render import expansion_line, fmt_score, md_inline, viewer_params


def signals_on(ls: RagcoreSettings) -> tuple[bool, bool]:
    """Whether the fielded-BM25 and the document signals are on: their columns show only then."""
    docs = ls.doc_decay > 0 or ls.per_doc > 0 or ls.named_weight > 0 or ls.doc_title_weight > 0 or ls.doc_centroid_weight > 0
    return ls.field_weight > 0, docs


def _metrics(result: RetrievalResult) -> None:
    cut = {r: sum(1 for c in result.candidates if c.dropped_reason == r) for r in ("threshold", "dedupe", "top_k")}
    lat = sum(v for k, v in result.latency_ms.items())
    m = st.columns(6)
    m[0].metric("Candidates", len(result.candidates))
    m[1].metric("Kept", len(result.kept))
    m[2].metric("Cut: threshold", cut["threshold"])
    m[3].metric("Cut: dedupe", cut["dedupe"])
    m[4].metric("Cut: top-K", cut["top_k"])
    m[5].metric("Retrieval", f"{lat:.0f} ms", help=", ".join(f"{k} {v:.1f} ms" for k, v in result.latency_ms.items()))


def _picked(c: Candidate, collection: str, fields_on: bool, docs_on: bool) -> None:
    with st.container(border=True):
        st.markdown(f"**Rank {c.rank}** · {md_inline(c.chunk.locator)}" + (f" · {md_inline(c.chunk.section_label)}" if c.chunk.section else ""))
        st.caption(f"cosine {fmt_score(c.dense_score)} (dense rank {c.dense_rank or '–'}) · "
                   f"BM25 {fmt_score(c.sparse_score, 2)} (sparse rank {c.sparse_rank or '–'}) · "
                   f"fused {fmt_score(c.fused_score, 4)} (fused rank {c.fused_rank or '–'})"
                   + (f" · cut by {c.dropped_reason}" if c.dropped_reason else ""))
        if fields_on or docs_on:
            st.caption(md_inline(signals_line(c, fields_on=fields_on, docs_on=docs_on)))
        st.code(c.chunk.text, language=None, wrap_lines=True)
        st.page_link("pages/library.py", label="Open these lines in the source viewer", icon=":material/open_in_new:",
                     query_params=viewer_params(c.chunk.path, c.chunk.start_line, c.chunk.end_line, c.chunk.page, collection))


def _chunks(result: RetrievalResult, ls: RagcoreSettings, collection: str) -> None:
    """The histogram, the table in the chosen order and the chunk picked to read in full."""
    fields_on, docs_on = signals_on(ls)
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
    st.html(lab_table_html(result, fusion=ls.fusion, order=order, fields_on=fields_on, docs_on=docs_on))
    if pick in by_rank:
        _picked(by_rank[pick], collection, fields_on, docs_on)


def evidence_tab(result: RetrievalResult, ls: RagcoreSettings, question: str, engine: Any, collection: str) -> None:
    _metrics(result)
    st.caption(
        f"Ranked by **{result.rank_score_kind}** ({result.retrieval_mode} mode). The threshold applies to the cosine score in every mode. "
        f"Moving top-K, the threshold or dedupe re-filters these {len(result.candidates)} candidates without querying again."
    )
    if result.expansion_terms:
        st.caption(expansion_line(result.expansion_terms), help="Pseudo-relevance feedback: words of the first pass's "
                   f"{ls.prf_docs} best chunks, added to the BM25 query with these weights")
    elif ls.prf_terms > 0:
        st.caption("Expansion is on, but added no terms" + (" (dense mode has no BM25 query)." if ls.retrieval_mode == "dense" else "."))
    abstain_panel(engine, question, ls, collection)
    if result.candidates:
        _chunks(result, ls, collection)
    else:
        st.warning("No candidates: nothing in the collection matches this question in this mode.")
