"""The Retrieval lab's evidence tab, drawn from one retrieval result: the cosine histogram with the
threshold line, and a picked chunk's signal scores."""

from __future__ import annotations

import altair as alt
import pandas as pd

from ragcore.types import Candidate, RetrievalResult

from .render import fields_text, fmt_score


def signals_line(c: Candidate, *, fields_on: bool, docs_on: bool) -> str:
    """The selected chunk's signals that are on: field part of BM25 and matched fields, its document."""
    parts = []
    if fields_on:
        parts.append(f"field part of BM25 {fmt_score(c.field_score, 2)}; matched fields: {fields_text(c.matched_fields)}")
    if docs_on:
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
