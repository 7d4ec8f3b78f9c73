"""Evaluate: run an evaluation data set against a collection, see the metrics, the questions
that failed and the trend across saved runs. Thin: read widgets → ragcore.eval → render."""

from __future__ import annotations

from ui import shell

# before the slow imports below: Streamlit may run this page without app.py (ui/shell.py says
# when); the app's frame is drawn at once and runs this page inside it
# ruff: noqa: E402
shell.ensure_frame()

from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from ragcore.eval.baselines import BM25_LABEL, LLAMAINDEX_LABEL
from ragcore.eval.dataset import DatasetError, EvalDataset
from ragcore.eval.report import TABLE_COLUMNS, load_saved_runs, save_run, trend_rows
from ragcore.eval.runner import failure_reasons
from ragcore.eval.charts import METRIC_LABELS
from ragcore.eval.sweep import EvalReport, SweepError, evaluate
from ui import state
from ui.eval_calibration import calibrate_or_ask, confirm_replacement, stored_bars_panel
from ui.eval_data import BUNDLED_DATASET, folder_for, load_folder, load_upload
from ui.eval_view import doc_links, metrics_frame, paired_frame, question_frame
from ui.render import fmt_ms, md_escape, md_inline

BASELINE_CHOICES = {"bm25": BM25_LABEL + " (ragcore sparse)", "llamaindex": LLAMAINDEX_LABEL + " (retrieval only; needs corpus/)"}

rt = shell.page_init()
ss = st.session_state
st.markdown("## Evaluate")
st.caption("Ask every question of an evaluation data set (questions.jsonl + unanswerable.jsonl with relevance "
           "judgements) and measure retrieval and answers. Every run is saved, so you can watch the trend.")
with st.expander("The data set format (JSONL)", icon=":material/help:"):
    st.markdown(
        "A data set is a folder holding `questions.jsonl`, optionally `unanswerable.jsonl` and `corpus/` "
        "(the documents, ingested into the collection you pick), or a single `.jsonl` file. One JSON object per line; "
        "only `question` is required:"
    )
    st.code('{"id": "q1", "question": "What does the threshold apply to?", "answer": "The cosine similarity.",\n'
            ' "relevant": ["05-scores-top-k-and-threshold.md#the-threshold"], "answerable": true}\n'
            '{"question": "What is the capital of Mongolia?", "answerable": false}', language="json", wrap_lines=True)
    st.markdown(
        "- `relevant`: the pages that answer it, as paths relative to `corpus/` (the chunks' paths), optionally with "
        "`#anchor`; `relevant_docs` defaults to them without anchors.\n"
        "- `answerable` defaults to whether `relevant` names a page; unanswerable questions measure abstaining.\n"
        "- `answer` (a reference answer) gives token F1; `id` defaults to the file name and line number.\n"
        "- Blank lines are skipped; anything else that is wrong is reported with its file and line number."
    )


# ---------------------------------------------------------------- inputs
c1, c2 = st.columns([3, 2])
with c1:
    source = st.segmented_control("Data set", ["Folder", "Upload"], default="Folder", key="ev_source")
    dataset: EvalDataset | None = None
    try:
        if source == "Upload":
            up = st.file_uploader("A .jsonl file in the data set format", type=["jsonl"], key="ev_upload")
            if up is not None:
                dataset = load_upload(up.getvalue(), up.name)
        else:
            for_collection = ss.get("cfg_collection") or ""
            if "ev_folder" not in ss or ss.get("ev_folder_of") != for_collection:
                ss["ev_folder"] = folder_for(for_collection)
            ss["ev_folder_of"] = for_collection
            folder = st.text_input("Folder (or a .jsonl file) on the machine that runs the app", key="ev_folder",
                                   placeholder="the data set of this collection's corpus",
                                   help=f"The bundled set: {BUNDLED_DATASET}" if BUNDLED_DATASET.is_dir() else None)
            ss["ev_folders"][for_collection] = folder
            if folder.strip():
                p = Path(folder.strip()).expanduser()
                dataset = load_folder(str(p), p.stat().st_mtime if p.exists() else 0.0)
    except DatasetError as exc:
        st.error(md_escape(str(exc)), icon=":material/error:")
    if dataset is not None:
        st.caption(f"**{md_inline(dataset.name)}**: {len(dataset.answerable)} answerable, {len(dataset.unanswerable)} "
                   f"unanswerable questions" + (" · corpus/ present" if dataset.corpus_dir else " · no corpus/ folder"))
with c2:
    names = [c.name for c in rt.collections()]
    if not names:
        st.info("No collection yet: ingest the data set's corpus/ folder on the Library page first.", icon=":material/info:")
        st.stop()
    if ss["cfg_collection"] not in names:
        ss["cfg_collection"] = names[0]
    # bound to the sidebar's collection: moving one moves the other
    collection = state.bound(st.selectbox, "Collection", "cfg_collection", key="ev_collection", options=names,
                             help="The collection the data set's corpus/ was ingested into.")
    limit = st.number_input("Questions per group (0 = all)", min_value=0, value=0, step=5, key="ev_limit",
                            help="Only the first N answerable and first N unanswerable questions: a quick look.")

# the full width, not the narrow column: there the LlamaIndex option was cut at its right edge at 1400 px
baselines = st.pills("Also run", list(BASELINE_CHOICES), selection_mode="multi", format_func=BASELINE_CHOICES.get,
                     key="ev_baselines", default=[])
settings = state.settings()
bar_value, bar_source = rt.engine.abstain_bar(settings, collection)
st.caption(f"Configuration (the notebook's controls and the Settings page): mode **{settings.retrieval_mode}** · top-K **{settings.top_k}** · "
           f"threshold **{settings.threshold:.2f}** · fusion {settings.fusion} (k={settings.rrf_k}) · "
           f"abstain bar {bar_value:.3f} ({md_inline(bar_source)}) · generator {md_inline(state.generator_name(settings))}")

run_col, cal_col = st.columns([0.3, 0.7])
if cal_col.button("Calibrate the abstain bar", disabled=dataset is None or not dataset.unanswerable,
                  icon=":material/tune:", key="ev_calibrate",
                  help="Score every question of the data set (no answers are composed), choose the bar that best "
                       "separates answerable from unanswerable questions, and store it with the collection. A stored "
                       "bar is replaced only after you confirm, and can be restored."):
    ss.pop("ev_calibrated", None)
    ss["ev_cal_pending"] = calibrate_or_ask(rt.engine, dataset, collection, settings, replace=False)
    st.rerun()
pending = ss.get("ev_cal_pending")
if pending and pending[0] == collection and dataset is not None and pending[1] == dataset.name:
    confirm_replacement(rt.engine, dataset, collection, settings, pending[2])
elif pending:
    ss.pop("ev_cal_pending", None)  # asked about another collection or data set: not this one's question
if ss.get("ev_calibrated"):
    st.success(ss["ev_calibrated"], icon=":material/check:")
if ss.get("ev_cal_error"):
    st.error(md_escape(ss.pop("ev_cal_error")), icon=":material/error:")
stored_bars_panel(rt.engine, collection)

if run_col.button("Run the evaluation", type="primary", disabled=dataset is None, icon=":material/play_arrow:"):
    bar = st.progress(0.0, text="starting…")

    def progress(done: int, total: int, label: str) -> None:
        bar.progress(min(done / total, 1.0) if total else 0.0, text=f"{done}/{total} · {label}")

    try:
        with st.spinner("Evaluating…", show_time=True):
            report = evaluate(rt.engine, dataset, collection=collection, settings=settings, baselines=list(baselines or []),
                              progress=progress, limit=int(limit) or None)
        saved = save_run(report, rt.settings.data_dir)
        ss["ev_report"] = report
        ss["ev_saved"] = str(saved)
        bar.empty()
    except SweepError as exc:
        bar.empty()
        st.error(md_escape(str(exc)), icon=":material/error:")
    except Exception as exc:  # noqa: BLE001
        bar.empty()
        state.show_error(exc, "The evaluation")

# ---------------------------------------------------------------- results
report: EvalReport | None = ss.get("ev_report")


if report is not None:
    st.divider()
    st.markdown(f"### Results: {md_inline(report.dataset)} on `{md_inline(report.collection)}`")
    st.caption(f"{md_inline(report.when)} · {report.seconds:.0f} s · saved to {md_inline(ss.get('ev_saved', ''))}")
    base = report.runs[0]
    m = base.metrics()
    cols = st.columns(6)
    for col, (k, label) in zip(cols, (("ndcg_at_10", "nDCG@10"), ("recall_at_10", "recall@10"), ("mrr_at_10", "MRR@10"),
                                      ("answer_rate", "answered"), ("abstain_rate", "abstained (unanswerable)"),
                                      ("token_f1", "token F1"))):
        col.metric(label, "–" if m.get(k) is None else f"{m[k]:.3f}")
    st.dataframe(metrics_frame(report.runs), hide_index=True, width="stretch",
                 # every metric a small column, so that the whole row (p95 included) fits 1024 px and up
                 column_config={h: st.column_config.NumberColumn(format="%.3f", width="small") for _, h in TABLE_COLUMNS}
                 | {"p50 ms": st.column_config.NumberColumn(format="%.0f", width="small"),
                    "p95 ms": st.column_config.NumberColumn(format="%.0f", width="small"),
                    "configuration": st.column_config.TextColumn(width="medium")})
    if len(report.runs) > 1:
        with st.expander("Against the base, question by question", icon=":material/compare_arrows:"):
            st.dataframe(paired_frame(report.runs), hide_index=True, width="stretch",
                         column_config={h: st.column_config.NumberColumn(format="%.3f")
                                        for h in ("nDCG@10 base", "nDCG@10 run", "best of both")}
                         | {"sign test p": st.column_config.NumberColumn(format="%.2f")})
            st.caption("On the same questions: how many rank better, worse or the same (nDCG@10) than the base; "
                       "a sign-test p above 0.05 means that split could be chance. Best of both = mean nDCG@10 if "
                       "each question took the better ranking. Answered / abstained: questions whose outcome flipped.")
    lat = base.summary.latency_p50_ms
    if lat:
        st.caption("p50 per stage: " + " · ".join(f"{md_inline(s)} {fmt_ms(v)}" for s, v in lat.items()))
    for note in report.notes + [f"{r.label}: {n}" for r in report.runs for n in r.notes]:
        if note.startswith("WARNING"):
            st.warning(md_escape(note), icon=":material/warning:")
        else:
            st.caption(md_inline(note))

    st.markdown("#### Per question")
    labels = [r.label for r in report.runs]
    pick = st.selectbox("Configuration", labels, key="ev_run") if len(labels) > 1 else labels[0]
    run = report.run(pick)
    only_failed = st.toggle("Only questions that failed", value=False, key="ev_only_failed")
    df = question_frame(run)
    if only_failed:
        df = df[df["failed"]].reset_index(drop=True)
    event = st.dataframe(
        df, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row", key="ev_table",
        column_config={
            "question": st.column_config.TextColumn(width="large"),
            "why": st.column_config.TextColumn("why it failed", width="medium"),
            "nDCG@10": st.column_config.NumberColumn(format="%.2f"),
            "recall@10": st.column_config.NumberColumn(format="%.2f"),
            "best support": st.column_config.NumberColumn(format="%.3f", help="The question's support score (closest passages, "
                                                          "closest section, question words); below the abstain bar it abstains."),
            "closest section": st.column_config.TextColumn(
                width="medium", help="The corpus's section heading closest to the question (cosine), and its page."),
            "total ms": st.column_config.NumberColumn(format="%.0f"),
        },
    )
    rows = list(getattr(getattr(event, "selection", None), "rows", []) or [])
    if rows and rows[0] < len(df):
        qid = df.iloc[rows[0]]["id"]
        rec = next(r for r in run.records if r.id == qid)
        with st.container(border=True):
            st.markdown(f"**{md_inline(rec.id)}** · {md_inline(rec.result.question)}")
            reasons = failure_reasons(rec)
            if reasons:
                st.warning(md_escape("; ".join(reasons)), icon=":material/report:")
            if not run.retrieval_only:
                st.markdown("**Answer**")
                st.text(rec.result.answer or "(no answer)")
            if rec.result.reference:
                with st.expander("Reference answer (the data set's)"):
                    st.text(rec.result.reference)
            doc_links(rt.engine, rec, run)
    else:
        st.caption("Select a row to see the retrieved and the relevant documents, with links to the source viewer.")

# ---------------------------------------------------------------- trend across saved runs
st.divider()
st.markdown("### Trend across saved runs")
saved_runs = load_saved_runs(rt.settings.data_dir)
trend_dataset = report.dataset if report is not None else (dataset.name if dataset is not None else None)
trend = pd.DataFrame(trend_rows(saved_runs, dataset=trend_dataset, collection=collection))
if trend.empty:
    st.caption("No saved runs for this data set and collection yet.")
else:
    metric_keys = [k for k in METRIC_LABELS if k in trend.columns and trend[k].notna().any()]
    metric = st.selectbox("Metric", metric_keys, format_func=METRIC_LABELS.get, key="ev_trend_metric",
                          index=metric_keys.index("ndcg_at_10") if "ndcg_at_10" in metric_keys else 0)
    trend["when"] = pd.to_datetime(trend["when"], errors="coerce")
    chart = alt.Chart(trend.dropna(subset=[metric])).mark_line(point=True).encode(
        # a date-and-time axis: with runs minutes apart Vega's default labels read ":12"
        x=alt.X("when:T", title="run", axis=alt.Axis(format="%b %d, %H:%M", labelAngle=-30, labelOverlap=True)),
        y=alt.Y(f"{metric}:Q", title=METRIC_LABELS[metric], scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("label:N", title="configuration"),
        tooltip=[alt.Tooltip("when:T", format="%Y-%m-%d %H:%M:%S"), "label:N", alt.Tooltip(f"{metric}:Q", format=".3f"), "file:N"],
    ).properties(height=280)
    st.altair_chart(chart, width="stretch")
    st.caption(f"{len(saved_runs)} saved evaluation files under {md_inline(str(Path(rt.settings.data_dir) / 'eval_runs'))}.")
