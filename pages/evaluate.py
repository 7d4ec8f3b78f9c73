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
from ragcore.eval.dataset import DatasetError, EvalDataset, load_dataset, load_dataset_bytes
from ragcore.eval.metrics import ndcg_at_k, recall_at_k
from ragcore.eval.paired import paired_deltas
from ragcore.eval.report import TABLE_COLUMNS, load_saved_runs, save_run, trend_rows
from ragcore.eval.runner import EvalRun, QuestionRecord, failure_reasons, locate_doc, mapper_from_records
from ragcore.eval.charts import METRIC_LABELS
from ragcore.eval.sweep import EvalReport, SweepError, evaluate
from ui import state
from ui.render import fmt_ms, md_escape, md_inline, viewer_params

ROOT = Path(__file__).resolve().parent.parent
BUNDLED_DATASET = ROOT / "bench" / "data" / "guide-qa"  # questions about the user guide (the demo collection)
DJANGO_DATASET = ROOT.parent / "shared" / "data" / "django-docs-qa"


def suggested_dataset(collection: str) -> Path | None:
    """The bundled set for the demo collection, the Django set (when present) for a Django
    collection, else none: another collection's data set would calibrate a wrong bar."""
    if collection == "guide" and BUNDLED_DATASET.is_dir():
        return BUNDLED_DATASET
    if "django" in collection.lower() and DJANGO_DATASET.is_dir():
        return DJANGO_DATASET
    return None


def folder_for(collection: str) -> str:
    """The data set folder last used with ``collection`` on this page, else the suggested one.
    Kept per collection outside the widget (whose state Streamlit drops when the page is left),
    so coming back, or moving the sidebar's collection, never puts the guide's set next to
    another collection."""
    used = st.session_state.setdefault("ev_folders", {})
    if collection in used:
        return used[collection]
    suggested = suggested_dataset(collection)
    return str(suggested) if suggested is not None else ""
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


@st.cache_data(show_spinner=False, max_entries=8)
def _load_folder(path: str, mtime: float) -> EvalDataset:
    return load_dataset(path)


@st.cache_data(show_spinner=False, max_entries=8)
def _load_upload(data: bytes, name: str) -> EvalDataset:
    return load_dataset_bytes(data, name)


# ---------------------------------------------------------------- calibration (eval/calibration.py)


def calibrate_or_ask(dataset: EvalDataset, collection: str, settings, *, replace: bool):
    """Calibrate; when a bar is stored already and ``replace`` is False, return what to ask
    (collection, data set, the stored bar) instead. A data set that does not belong to the
    collection is refused with the reason (ev_cal_error)."""
    from ragcore.eval.calibration import BarExists, CalibrationError, calibrate

    try:
        with st.spinner("Calibrating…", show_time=True):
            cal = calibrate(rt.engine, dataset, collection, settings, replace=replace)
    except BarExists as exc:
        return (collection, dataset.name, exc.current)
    except CalibrationError as exc:
        ss["ev_cal_error"] = str(exc)
        return None
    ss["ev_calibrated"] = (f"Abstain bar for `{md_inline(collection)}`: **{cal.bar:.3f}**, from {md_inline(cal.dataset)} "
                           f"(answers {cal.answer_rate:.0%} of {cal.answerable} answerable questions, abstains on "
                           f"{cal.abstain_rate:.0%} of {cal.unanswerable} unanswerable). Stored with the collection"
                           + ("; the bar it replaced is kept under “Stored abstain bars”." if replace else "."))
    return None


def confirm_replacement(dataset: EvalDataset, collection: str, settings, current: dict) -> None:
    from ragcore.eval.calibration import describe_bar

    st.warning(f"`{md_inline(collection)}` already has a calibrated abstain bar: {md_inline(describe_bar(current))}. "
               f"Replace it with a bar calibrated on {md_inline(dataset.name)}? The current bar is kept and can be "
               "restored.", icon=":material/warning:")
    yes, no = st.columns([0.25, 0.75])
    if yes.button("Replace the bar", key="ev_cal_replace", icon=":material/swap_horiz:"):
        ss["ev_cal_pending"] = calibrate_or_ask(dataset, collection, settings, replace=True)
        st.rerun()
    if no.button("Keep the stored bar", key="ev_cal_keep"):
        ss.pop("ev_cal_pending", None)
        st.rerun()


def stored_bars_panel(collection: str) -> None:
    """The bar in force and the earlier ones, with a restore button."""
    from ragcore.eval.calibration import describe_bar, restore_bar, stored_bars

    current, history = stored_bars(rt.engine, collection)
    if not current and not history:
        return
    with st.expander(f"Stored abstain bars of {md_inline(collection)} ({1 + len(history) if current else len(history)})"):
        st.markdown(f"In force: {md_inline(describe_bar(current)) if current else 'none (label-free or settings bar)'}")
        if not history:
            st.caption("No earlier bars: a bar replaced by a calibration is kept here.")
            return
        pick = st.selectbox("Earlier bars (newest first)", range(len(history)), key="ev_bar_pick",
                            format_func=lambda i: describe_bar(history[i]))
        if st.button("Restore this bar", key="ev_bar_restore", icon=":material/history:"):
            chosen = restore_bar(rt.engine, collection, pick)
            ss["ev_calibrated"] = (f"Restored the abstain bar of `{md_inline(collection)}`: "
                                   f"{md_inline(describe_bar(chosen))}; the bar it replaced is kept too.")
            st.rerun()


# ---------------------------------------------------------------- inputs
c1, c2 = st.columns([3, 2])
with c1:
    source = st.segmented_control("Data set", ["Folder", "Upload"], default="Folder", key="ev_source")
    dataset: EvalDataset | None = None
    try:
        if source == "Upload":
            up = st.file_uploader("A .jsonl file in the data set format", type=["jsonl"], key="ev_upload")
            if up is not None:
                dataset = _load_upload(up.getvalue(), up.name)
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
                dataset = _load_folder(str(p), p.stat().st_mtime if p.exists() else 0.0)
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
    ss["ev_cal_pending"] = calibrate_or_ask(dataset, collection, settings, replace=False)
    st.rerun()
pending = ss.get("ev_cal_pending")
if pending and pending[0] == collection and dataset is not None and pending[1] == dataset.name:
    confirm_replacement(dataset, collection, settings, pending[2])
elif pending:
    ss.pop("ev_cal_pending", None)  # asked about another collection or data set: not this one's question
if ss.get("ev_calibrated"):
    st.success(ss["ev_calibrated"], icon=":material/check:")
if ss.get("ev_cal_error"):
    st.error(md_escape(ss.pop("ev_cal_error")), icon=":material/error:")
stored_bars_panel(collection)

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


def _metrics_frame(runs: list[EvalRun]) -> pd.DataFrame:
    rows = []
    for r in runs:
        m = r.metrics()
        row = {"configuration": r.label}
        row.update({h: m.get(k) for k, h in TABLE_COLUMNS})
        row["p50 ms"] = m["latency_p50_ms"].get("total")
        row["p95 ms"] = m["latency_p95_ms"].get("total")
        rows.append(row)
    return pd.DataFrame(rows)


def _paired_frame(runs: list[EvalRun]) -> pd.DataFrame:
    return pd.DataFrame([{
        "configuration": d.label, "better": d.better, "worse": d.worse, "same": d.same, "sign test p": d.sign_p,
        "nDCG@10 base": d.ndcg_base, "nDCG@10 run": d.ndcg_run, "best of both": d.ndcg_best_of_both,
        "answers +": d.answers_gained, "answers −": d.answers_lost,
        "abstains (unanswerable) +": d.abstains_gained, "abstains (unanswerable) −": d.abstains_lost,
    } for d in paired_deltas(runs)])


def _question_frame(run: EvalRun) -> pd.DataFrame:
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


def _doc_links(rec: QuestionRecord, run: EvalRun) -> None:
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
            loc = locate_doc(rt.engine, run.collection, stored, anchor or None) if run.collection else None
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
    st.dataframe(_metrics_frame(report.runs), hide_index=True, width="stretch",
                 # every metric a small column, so that the whole row (p95 included) fits 1024 px and up
                 column_config={h: st.column_config.NumberColumn(format="%.3f", width="small") for _, h in TABLE_COLUMNS}
                 | {"p50 ms": st.column_config.NumberColumn(format="%.0f", width="small"),
                    "p95 ms": st.column_config.NumberColumn(format="%.0f", width="small"),
                    "configuration": st.column_config.TextColumn(width="medium")})
    if len(report.runs) > 1:
        with st.expander("Against the base, question by question", icon=":material/compare_arrows:"):
            st.dataframe(_paired_frame(report.runs), hide_index=True, width="stretch",
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
    df = _question_frame(run)
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
            _doc_links(rec, run)
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
