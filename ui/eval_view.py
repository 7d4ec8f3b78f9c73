"""Evaluate's results as tables (metrics per configuration, paired deltas, one row per question) and a
question's documents with links to their lines in the source viewer."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ragcore.engine.engine import Engine
from ragcore.eval.metrics import ndcg_at_k, recall_at_k
from ragcore.eval.paired import paired_deltas
from ragcore.eval.report import TABLE_COLUMNS
from ragcore.eval.runner import EvalRun, QuestionRecord, failure_reasons, locate_doc, mapper_from_records

from .render import md_inline, viewer_params


def metrics_frame(runs: list[EvalRun]) -> pd.DataFrame:
    rows = []
    for r in runs:
        m = r.metrics()
        row = {"configuration": r.label}
        row.update({h: m.get(k) for k, h in TABLE_COLUMNS})
        row["p50 ms"] = m["latency_p50_ms"].get("total")
        row["p95 ms"] = m["latency_p95_ms"].get("total")
        rows.append(row)
    return pd.DataFrame(rows)


def paired_frame(runs: list[EvalRun]) -> pd.DataFrame:
    return pd.DataFrame([{
        "configuration": d.label, "better": d.better, "worse": d.worse, "same": d.same, "sign test p": d.sign_p,
        "nDCG@10 base": d.ndcg_base, "nDCG@10 run": d.ndcg_run, "best of both": d.ndcg_best_of_both,
        "answers +": d.answers_gained, "answers −": d.answers_lost,
        "abstains (unanswerable) +": d.abstains_gained, "abstains (unanswerable) −": d.abstains_lost,
    } for d in paired_deltas(runs)])


def question_frame(run: EvalRun) -> pd.DataFrame:
    rows = []
    for rec in run.records:
        r = rec.result
        ranking = list(dict.fromkeys(r.retrieved_docs))
        first = next((i for i, d in enumerate(ranking, 1) if d in set(r.relevant_docs)), None)
        reasons = failure_reasons(rec)
        rows.append({
            "id": r.id, "question": r.question, "answerable": r.answerable, "status": r.status,
            "failed": bool(reasons), "why": "; ".join(reasons),
            "first relevant rank": first if r.relevant_docs else None,
            "nDCG@10": ndcg_at_k(r.retrieved_docs, r.relevant_docs, 10) if r.relevant_docs else None,
            "recall@10": recall_at_k(r.retrieved_docs, r.relevant_docs, 10) if r.relevant_docs else None,
            "best support": rec.best_support,
            "closest section": rec.closest_section,
            "supported": f"{r.supported_sentences}/{r.total_sentences}" if r.total_sentences else "",
            "total ms": r.latency_ms.get("total"),
        })
    df = pd.DataFrame(rows)
    if not df.empty:
        df["first relevant rank"] = df["first relevant rank"].astype("Int64")
    return df


def doc_links(engine: Engine, rec: QuestionRecord, run: EvalRun) -> None:
    r = rec.result
    relevant = set(r.relevant_docs)
    col_a, col_b = st.columns(2)
    with col_a:
        st.markdown("**Relevant documents** (the data set's judgements)")
        if not rec.relevant:
            st.caption("None: an unanswerable question.")
        m = mapper_from_records(run.records)
        for entry in rec.relevant:
            doc, _, anchor = entry.partition("#")
            found = next((h for h in rec.hits if h.path == doc), None)
            mark = f"retrieved at #{found.rank}" if found else "not in the top 20"
            stored = found.stored_path if found else m.stored(doc)
            loc = locate_doc(engine, run.collection, stored, anchor or None) if run.collection else None
            if loc:
                st.page_link("pages/library.py", label=f"{md_inline(entry)} · {mark}", icon=":material/open_in_new:",
                             query_params=viewer_params(stored, loc[0], loc[1], loc[2], run.collection))
            else:
                st.markdown(f"- {md_inline(entry)} · {mark} (not in this collection)")
    with col_b:
        st.markdown("**Retrieved documents** (best chunk of each, in rank order)")
        for h in rec.hits[:10]:
            st.page_link("pages/library.py", label=f"#{h.rank} {md_inline(h.path)}:{h.start_line}-{h.end_line}"
                         + (" · **relevant**" if h.path in relevant else "") + ("" if h.kept else " (not in the evidence)"),
                         icon=":material/check_circle:" if h.path in relevant else ":material/open_in_new:",
                         query_params=viewer_params(h.stored_path, h.start_line, h.end_line, h.page, run.collection))
        if not rec.hits:
            st.caption("Nothing retrieved.")
