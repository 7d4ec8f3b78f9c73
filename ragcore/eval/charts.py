"""Charts of an evaluation report (Altair; PNG through vl-convert where it is installed) and the
rows they are drawn from: one chart per swept setting, the configurations side by side, and the
abstain decision's scores."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from ragcore.eval.sweep import EvalReport, SweepGroup

RETRIEVAL_CHART = ("recall_at_1", "recall_at_5", "recall_at_10", "recall_at_20", "mrr_at_10", "ndcg_at_10")
ANSWER_CHART = ("answer_rate", "abstain_rate", "citation_precision", "supported_share", "token_f1", "evidence_recall")
METRIC_LABELS = {
    "recall_at_1": "recall@1", "recall_at_5": "recall@5", "recall_at_10": "recall@10", "recall_at_20": "recall@20",
    "mrr_at_10": "MRR@10", "ndcg_at_10": "nDCG@10", "answer_rate": "answer rate", "abstain_rate": "abstain rate (unans.)",
    "citation_precision": "citation precision", "supported_share": "supported sentences", "token_f1": "token F1",
    "evidence_recall": "evidence recall",
}


def _png_available() -> bool:
    try:
        import vl_convert  # noqa: F401
    except ImportError:
        return False
    return True


def _save(chart: Any, stem: Path) -> Path:
    path = stem.with_suffix(".png" if _png_available() else ".html")
    path.parent.mkdir(parents=True, exist_ok=True)
    chart.save(str(path), **({"scale_factor": 1.0} if path.suffix == ".png" else {}))
    return path


def _sweep_chart(report: EvalReport, group: SweepGroup) -> Any:
    """Small multiples: one panel per metric (0..1) against the swept value, plus latency."""
    import altair as alt
    import pandas as pd

    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in group.values)
    rows, lat_rows = [], []
    for v, label in zip(group.values, group.labels):
        m = report.run(label).metrics()
        x = v if numeric else str(v)
        for k in (*RETRIEVAL_CHART, *ANSWER_CHART):
            if m.get(k) is not None:
                rows.append({group.key: x, "metric": METRIC_LABELS[k], "value": m[k]})
        for q, lat in (("p50", m["latency_p50_ms"]), ("p95", m["latency_p95_ms"])):
            if lat.get("total") is not None:
                lat_rows.append({group.key: x, "latency": f"{q} total", "ms": lat["total"]})
    order = [METRIC_LABELS[k] for k in (*RETRIEVAL_CHART, *ANSWER_CHART)]
    if numeric:
        x_enc = alt.X(f"{group.key}:Q", title=group.key, scale=alt.Scale(zero=False), axis=alt.Axis(values=list(group.values)))
    else:
        x_enc = alt.X(f"{group.key}:N", title=group.key, sort=[str(v) for v in group.values], axis=alt.Axis(labelAngle=0))
    metrics = alt.Chart(pd.DataFrame(rows)).mark_line(point=True).encode(
        x=x_enc, y=alt.Y("value:Q", title=None, scale=alt.Scale(domain=[0, 1])),
        tooltip=["metric", group.key, alt.Tooltip("value:Q", format=".3f")],
    ).properties(width=150, height=110).facet(
        facet=alt.Facet("metric:N", sort=order, title=None), columns=6,
    )
    latency = alt.Chart(pd.DataFrame(lat_rows)).mark_line(point=True).encode(
        x=x_enc, y=alt.Y("ms:Q", title="ms per question"), color=alt.Color("latency:N", title=None),
    ).properties(width=300, height=130, title="latency")
    return alt.vconcat(metrics, latency).properties(
        title=f"{report.dataset} on {report.collection}: metrics vs {group.key}"
    )


def _comparison_chart(report: EvalReport) -> Any:
    import altair as alt
    import pandas as pd

    keys = ("recall_at_5", "recall_at_20", "mrr_at_10", "ndcg_at_10", "answer_rate", "abstain_rate", "citation_precision", "token_f1")
    rows = [{"configuration": r.label, "metric": METRIC_LABELS[k], "value": r.metrics()[k]}
            for r in report.runs for k in keys if r.metrics().get(k) is not None]
    df = pd.DataFrame(rows)
    order = [r.label for r in report.runs]
    return alt.Chart(df).mark_bar().encode(
        x=alt.X("configuration:N", sort=order, title=None, axis=alt.Axis(labelAngle=-40, labelLimit=180)),
        y=alt.Y("value:Q", scale=alt.Scale(domain=[0, 1]), title=None),
        color=alt.Color("configuration:N", sort=order, legend=None),
        column=alt.Column("metric:N", sort=[METRIC_LABELS[k] for k in keys], title=None),
        tooltip=["configuration", "metric", alt.Tooltip("value:Q", format=".3f")],
    ).properties(width=110, height=180, title=f"{report.dataset} on {report.collection}")


def _abstain_chart(report: EvalReport) -> Any | None:
    """The base run's best support scores, answerable vs unanswerable, with the abstain bar."""
    import altair as alt
    import pandas as pd

    run = report.run(report.base_label)
    rows = [{"group": "answerable" if r.result.answerable else "unanswerable", "best support": r.best_support, "id": r.id}
            for r in run.records if r.best_support is not None]
    if run.retrieval_only or not rows:
        return None
    bar = float(run.config.get("abstain_bar", 0.0))
    points = alt.Chart(pd.DataFrame(rows)).mark_tick(thickness=2, size=22).encode(
        x=alt.X("best support:Q", scale=alt.Scale(domain=[0, 1])), y=alt.Y("group:N", title=None),
        color=alt.Color("group:N", legend=None), tooltip=["id", "best support"],
    )
    rule = alt.Chart(pd.DataFrame([{"bar": bar}])).mark_rule(color="black", strokeDash=[4, 3]).encode(x=alt.X("bar:Q", title="best support"))
    return (points + rule).properties(width=520, height=110, title=f"{run.label}: best support per question (dashed: abstain bar {bar:.2f})")


def chart_paths(stem: Path, report: EvalReport) -> dict[str, Path]:
    """Where :func:`write_charts` puts each chart (suffix .png, or .html without vl-convert)."""
    suffix = ".png" if _png_available() else ".html"
    out = {"comparison": stem.with_name(stem.name + "-comparison").with_suffix(suffix),
           "abstain": stem.with_name(stem.name + "-abstain").with_suffix(suffix)}
    for g in report.sweeps:
        out[f"sweep:{g.key}"] = stem.with_name(f"{stem.name}-sweep-{g.key}").with_suffix(suffix)
    return out


def charts_available() -> bool:
    """Altair and pandas draw the charts; they come with the app (pip install "ragcore[app]")."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None for m in ("altair", "pandas"))


CHARTS_NEED = 'no charts: they need Altair and pandas (pip install "ragcore[app]")'


def write_charts(report: EvalReport, stem: Path | str) -> dict[str, Path]:
    """A comparison chart of every configuration, one chart per sweep (each metric against
    the swept value) and the base run's best-support scores against the abstain bar. PNG when ``vl-convert-python`` is installed, else a self-contained HTML
    file. ``stem`` like ``bench/results/eval-django`` gives ``eval-django-comparison.png`` and
    ``eval-django-sweep-top_k.png``."""
    stem = Path(stem)
    paths = chart_paths(stem, report)
    out: dict[str, Path] = {}
    if len(report.runs) > 1:
        out["comparison"] = _save(_comparison_chart(report), paths["comparison"].with_suffix(""))
    for g in report.sweeps:
        out[f"sweep:{g.key}"] = _save(_sweep_chart(report, g), paths[f"sweep:{g.key}"].with_suffix(""))
    abstain = _abstain_chart(report) if report.runs else None
    if abstain is not None:
        out["abstain"] = _save(abstain, paths["abstain"].with_suffix(""))
    return out


def sweep_rows(report: EvalReport, group: SweepGroup) -> list[Mapping[str, Any]]:
    """One row per swept value: the value and the run's metrics."""
    return [{group.key: v, "label": lab, **report.run(lab).metrics()} for v, lab in zip(group.values, group.labels)]
