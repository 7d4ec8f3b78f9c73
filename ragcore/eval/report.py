"""Evaluation output: the terminal table, the JSON file, the Markdown summary, saved runs.

JSON layout (``format: "ragcore-eval/1"``)::

    {"format", "dataset", "dataset_path", "collection", "corpus_version", "when", "seconds",
     "machine", "base_label", "base_config", "notes": [...],
     "sweeps": [{"key", "values", "labels"}],
     "runs": [{"label", "kind", "collection", "config", "retrieval_only", "seconds", "notes",
               "metrics": {recall_at_1 … token_f1, evidence_recall, latency_p50_ms, latency_p95_ms},
               "abstain": {"answerable": {...quantiles}, "unanswerable": {...}, "recommended": {...}},
               "questions": [QuestionRecord.as_dict(), …]}]}

Every run is also saved under ``settings.data_dir / "eval_runs"`` (one file per evaluation)
so the app can show the trend across runs.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ragcore.eval.metrics import Summary, ndcg_at_k
from ragcore.eval.paired import paired_deltas
from ragcore.eval.runner import EvalRun, QuestionRecord, recommend_bar
from ragcore.eval.charts import METRIC_LABELS, sweep_rows
from ragcore.eval.sweep import EvalReport, SweepGroup

__all__ = [
    "FORMAT",
    "RUNS_DIR",
    "TABLE_COLUMNS",
    "abstain_stats",
    "format_table",
    "latency_table",
    "load_saved_runs",
    "markdown",
    "report_dict",
    "report_from_dict",
    "save_run",
    "trend_rows",
    "write_json",
]

FORMAT = "ragcore-eval/1"
RUNS_DIR = "eval_runs"

# (metric key, short header)
TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("recall_at_1", "R@1"), ("recall_at_5", "R@5"), ("recall_at_10", "R@10"), ("recall_at_20", "R@20"),
    ("mrr_at_10", "MRR@10"), ("ndcg_at_10", "nDCG@10"), ("answer_rate", "answered"), ("abstain_rate", "abstain(U)"),
    ("citation_precision", "cite prec"), ("supported_share", "supported"), ("token_f1", "F1"),
    # where the answering passage went (eval/answering.py): in the evidence, the first 5, the answer, the packed context
    ("passage_in_evidence", "ans∈ev"), ("passage_in_top5", "ans∈top5"), ("passage_in_answer", "ans∈answer"),
    ("passage_in_packed", "ans∈packed"),
)


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _ms(v: Any) -> str:
    return "–" if v is None else f"{v:.0f}"


# --------------------------------------------------------------------------- terminal


def format_table(runs: Sequence[EvalRun], *, best: bool = True) -> str:
    """Plain-text table, one row per configuration (``*`` marks the best value of a column)."""
    head = ["configuration", *(h for _, h in TABLE_COLUMNS), "p50 ms", "p95 ms"]
    rows: list[list[str]] = []
    metrics = [r.metrics() for r in runs]
    tops = {k: _best(metrics, k) for k, _ in TABLE_COLUMNS} if best and len(runs) > 1 else {}
    for r, m in zip(runs, metrics):
        row = [r.label]
        for k, _ in TABLE_COLUMNS:
            cell = _fmt(m.get(k))
            if m.get(k) is not None and tops.get(k) is not None and abs(m[k] - tops[k]) < 1e-12:
                cell += "*"
            row.append(cell)
        row += [_ms(m["latency_p50_ms"].get("total")), _ms(m["latency_p95_ms"].get("total"))]
        rows.append(row)
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    return "\n".join([line(head), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def _best(metrics: Sequence[Mapping[str, Any]], key: str) -> float | None:
    vals = [m.get(key) for m in metrics if m.get(key) is not None]
    return max(vals) if vals else None


def latency_table(runs: Sequence[EvalRun]) -> str:
    """p50/p95 per stage, one row per configuration (ms)."""
    stages: list[str] = []
    for r in runs:
        for s in r.summary.latency_p50_ms:
            if s not in stages:
                stages.append(s)
    head = ["configuration", *(f"{s} p50/p95" for s in stages)]
    rows = []
    for r in runs:
        p50, p95 = r.summary.latency_p50_ms, r.summary.latency_p95_ms
        rows.append([r.label, *(f"{_ms(p50.get(s))}/{_ms(p95.get(s))}" if s in p50 else "–" for s in stages)])
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    line = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))  # noqa: E731
    return "\n".join([line(head), line(["-" * w for w in widths]), *(line(r) for r in rows)])


# --------------------------------------------------------------------------- abstain analysis


def _quantiles(vals: Sequence[float]) -> dict[str, Any]:
    if not vals:
        return {"n": 0}
    a = np.asarray(vals, dtype=float)
    q = {f"p{p}": round(float(np.percentile(a, p)), 4) for p in (10, 25, 50, 75, 90)}
    return {"n": int(a.size), "min": round(float(a.min()), 4), **q, "max": round(float(a.max()), 4),
            "mean": round(float(a.mean()), 4)}


def abstain_stats(run: EvalRun) -> dict[str, Any] | None:
    """Distribution of the composer's best support score on answerable vs unanswerable
    questions, and the bar that separates them best (see :func:`~ragcore.eval.runner.recommend_bar`)."""
    if run.retrieval_only:
        return None
    ans = [r.best_support for r in run.records if r.result.answerable and r.best_support is not None]
    una = [r.best_support for r in run.records if not r.result.answerable and r.best_support is not None]
    if not ans and not una:
        return None
    choice = recommend_bar(run.records)
    return {
        "abstain_bar": run.config.get("abstain_bar"),
        "answerable": _quantiles(ans),
        "unanswerable": _quantiles(una),
        "recommended": asdict(choice) if choice else None,
    }


# --------------------------------------------------------------------------- JSON


def run_dict(run: EvalRun) -> dict[str, Any]:
    return {
        "label": run.label, "kind": run.kind, "collection": run.collection, "config": dict(run.config),
        "retrieval_only": run.retrieval_only, "seconds": round(run.seconds, 2), "notes": list(run.notes),
        "metrics": _round(run.metrics()), "abstain": abstain_stats(run),
        "questions": [r.as_dict() for r in run.records],
    }


def _round(obj: Any) -> Any:
    if isinstance(obj, float):
        return round(obj, 6)
    if isinstance(obj, Mapping):
        return {k: _round(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_round(v) for v in obj]
    return obj


def report_dict(report: EvalReport) -> dict[str, Any]:
    return {
        "format": FORMAT, "dataset": report.dataset, "dataset_path": report.dataset_path,
        "collection": report.collection, "corpus_version": report.corpus_version, "when": report.when,
        "seconds": round(report.seconds, 2), "machine": report.machine, "base_label": report.base_label,
        "base_config": report.base_config, "notes": list(report.notes),
        "sweeps": [{"key": g.key, "values": list(g.values), "labels": list(g.labels)} for g in report.sweeps],
        "runs": _runs_dicts(report.runs),
    }


def _runs_dicts(runs: Sequence[EvalRun]) -> list[dict[str, Any]]:
    """Every run; one that repeats an earlier run's configuration (same kind, collection and
    settings, so the same results) names it in ``same_as`` instead of repeating its questions."""
    out: list[dict[str, Any]] = []
    first: dict[tuple, str] = {}
    for r in runs:
        key = (r.kind, r.collection, tuple(sorted((k, str(v)) for k, v in r.config.items())))
        d = run_dict(r)
        if key in first:
            d.pop("questions")
            d["same_as"] = first[key]
        else:
            first[key] = r.label
        out.append(d)
    return out


def write_json(report: EvalReport, path: Path | str) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    # one run per line: readable in a diff, a fraction of the size of an indented file
    d = report_dict(report)
    runs = d.pop("runs")
    head = json.dumps(d, ensure_ascii=False, default=str)[:-1]
    body = ",\n".join(json.dumps(r, ensure_ascii=False, default=str, separators=(",", ":")) for r in runs)
    p.write_text(f'{head}, "runs": [\n{body}\n]}}\n', encoding="utf-8")
    return p


def report_from_dict(d: Mapping[str, Any]) -> EvalReport:
    """An :class:`EvalReport` back from :func:`report_dict`'s output (metrics as saved)."""
    if d.get("format") != FORMAT:
        raise ValueError(f"not a ragcore evaluation file (format {d.get('format')!r})")
    names = {f.name for f in fields(Summary)}
    runs: list[EvalRun] = []
    questions: dict[str, list[Any]] = {r["label"]: r.get("questions", []) for r in d.get("runs", []) if "same_as" not in r}
    for r in d.get("runs", []):
        m = r.get("metrics", {})
        summary = Summary(**{k: m.get(k) for k in names})
        qs = questions.get(r.get("same_as") or r["label"], [])
        runs.append(EvalRun(
            label=r["label"], kind=r.get("kind", "ragcore"), collection=r.get("collection", ""), config=r.get("config", {}),
            records=tuple(QuestionRecord.from_dict(q) for q in qs), summary=summary,
            retrieval_only=bool(r.get("retrieval_only")), seconds=float(r.get("seconds", 0.0)), notes=tuple(r.get("notes", ())),
        ))
    return EvalReport(
        dataset=d.get("dataset", ""), dataset_path=d.get("dataset_path"), collection=d.get("collection", ""),
        base_label=d.get("base_label", runs[0].label if runs else ""), runs=runs,
        sweeps=[SweepGroup(g["key"], tuple(g["values"]), tuple(g["labels"])) for g in d.get("sweeps", [])],
        notes=list(d.get("notes", [])), when=d.get("when", ""), seconds=float(d.get("seconds", 0.0)),
        machine=dict(d.get("machine", {})), base_config=dict(d.get("base_config", {})), corpus_version=d.get("corpus_version"),
    )


# --------------------------------------------------------------------------- saved runs


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", s).strip("-")[:60] or "x"


def save_run(report: EvalReport, data_dir: Path | str) -> Path:
    """Save under ``data_dir/eval_runs/<when>-<dataset>-<collection>.json``."""
    folder = Path(data_dir) / RUNS_DIR
    stamp = re.sub(r"[^0-9T]", "", report.when.split("+")[0])
    path = folder / f"{stamp}-{_slug(report.dataset)}-{_slug(report.collection)}.json"
    n = 1
    while path.exists():
        n += 1
        path = folder / f"{stamp}-{_slug(report.dataset)}-{_slug(report.collection)}-{n}.json"
    return write_json(report, path)


def load_saved_runs(data_dir: Path | str) -> list[tuple[Path, dict[str, Any]]]:
    """Every readable evaluation file under ``data_dir/eval_runs``, oldest first (by ``when``);
    unreadable files are skipped."""
    folder = Path(data_dir) / RUNS_DIR
    out = []
    for p in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            d = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(d, dict) and d.get("format") == FORMAT:
            out.append((p, d))
    return sorted(out, key=lambda t: str(t[1].get("when", "")))


def trend_rows(saved: Iterable[tuple[Path, Mapping[str, Any]]], *, dataset: str | None = None,
               collection: str | None = None) -> list[dict[str, Any]]:
    """One row per (saved evaluation, configuration): when, label, and its metrics (flat)."""
    rows = []
    for path, d in saved:
        if dataset is not None and d.get("dataset") != dataset:
            continue
        if collection is not None and d.get("collection") != collection:
            continue
        for r in d.get("runs", []):
            m = r.get("metrics", {})
            row = {"when": d.get("when"), "file": path.name, "label": r.get("label"), "kind": r.get("kind"),
                   "collection": d.get("collection"), "dataset": d.get("dataset")}
            for k in (*METRIC_LABELS, ):
                row[k] = m.get(k)
            row["latency_p50_total_ms"] = (m.get("latency_p50_ms") or {}).get("total")
            rows.append(row)
    return rows


# --------------------------------------------------------------------------- Markdown


def _md_cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md_table(head: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    out = ["| " + " | ".join(map(_md_cell, head)) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def comparison_markdown(runs: Sequence[EvalRun]) -> str:
    metrics = [r.metrics() for r in runs]
    tops = {k: _best(metrics, k) for k, _ in TABLE_COLUMNS} if len(runs) > 1 else {}
    rows = []
    for r, m in zip(runs, metrics):
        row = [r.label]
        for k, _ in TABLE_COLUMNS:
            v = m.get(k)
            cell = _fmt(v)
            if v is not None and tops.get(k) is not None and abs(v - tops[k]) < 1e-12:
                cell = f"**{cell}**"
            row.append(cell)
        row += [_ms(m["latency_p50_ms"].get("total")), _ms(m["latency_p95_ms"].get("total"))]
        rows.append(row)
    return _md_table(["configuration", *(h for _, h in TABLE_COLUMNS), "p50 ms", "p95 ms"], rows)


def _per_question_markdown(runs: Sequence[EvalRun]) -> str:
    """nDCG@10 and the rank of the first relevant document per answerable question, per run."""
    head = ["question", "relevant"] + [r.label for r in runs]
    by_id = [{rec.id: rec for rec in r.records} for r in runs]
    rows = []
    for rec in runs[0].records:
        res = rec.result
        if not res.answerable or not res.relevant_docs:
            continue
        row = [f"{res.id}: {res.question[:60]}", ", ".join(res.relevant_docs)]
        for m in by_id:
            other = m.get(res.id)
            if other is None:
                row.append("–")
                continue
            o = other.result
            ranking = list(dict.fromkeys(o.retrieved_docs))
            first = next((i for i, d in enumerate(ranking, 1) if d in set(o.relevant_docs)), None)
            row.append(f"{ndcg_at_k(o.retrieved_docs, o.relevant_docs, 10):.2f} (#{first or '–'})")
        rows.append(row)
    return _md_table(head, rows)


def paired_markdown(runs: Sequence[EvalRun]) -> str:
    """Each run against the first, question by question (paired.py)."""
    rows = []
    for d in paired_deltas(runs):
        p = "–" if d.sign_p is None else f"{d.sign_p:.2f}"
        rows.append([
            d.label, f"{d.better} / {d.worse} / {d.same}", p,
            f"{_fmt(d.ndcg_base)} → {_fmt(d.ndcg_run)}", _fmt(d.ndcg_best_of_both),
            f"+{d.answers_gained} −{d.answers_lost}", f"+{d.abstains_gained} −{d.abstains_lost}",
        ])
    return _md_table(["configuration", "nDCG@10 better / worse / same", "sign test p", "nDCG@10 base → run",
                      "best of both", "answerable: answered", "unanswerable: abstained"], rows)


def evidence_lines(runs: Sequence[EvalRun]) -> list[str]:
    """Evidence recall, and how many answers had a relevant page in their evidence at all."""
    out = []
    ev = [(r.label, r.evidence_recall) for r in runs if r.evidence_recall is not None]
    if ev:
        out += ["Evidence recall (share of relevant documents among the evidence the composer saw: the top-K and its seats): "
                + "; ".join(f"{lab} {v:.3f}" for lab, v in ev) + ".", ""]
    cit = [(r.label, *r.citable) for r in runs if r.citable is not None and r.citable[2]]
    if cit:
        out += ["Answers citing a relevant page / answers whose evidence holds one / answers (judged answerable "
                "questions; the second bounds the first whatever page is cited): "
                + "; ".join(f"{lab} {c} / {h} / {n}" for lab, c, h, n in cit) + ".", ""]
    return out


def _stage_latency_markdown(runs: Sequence[EvalRun]) -> str:
    stages: list[str] = []
    for r in runs:
        stages += [s for s in r.summary.latency_p50_ms if s not in stages]
    return _md_table(["configuration", *stages], [
        [r.label, *(f"{_ms(r.summary.latency_p50_ms.get(s))}/{_ms(r.summary.latency_p95_ms.get(s))}"
                    if s in r.summary.latency_p50_ms else "–" for s in stages)] for r in runs])


def paired_lines(runs: Sequence[EvalRun]) -> list[str]:
    """The terminal form of :func:`paired_markdown`: one line per run after the first."""
    out = []
    for d in paired_deltas(runs):
        p = "-" if d.sign_p is None else f"{d.sign_p:.2f}"
        out.append(f"  {d.label}: {d.better} better / {d.worse} worse / {d.same} same (sign test p {p}); nDCG@10 "
                   f"{_fmt(d.ndcg_base)} -> {_fmt(d.ndcg_run)}, best of both {_fmt(d.ndcg_best_of_both)}; answered "
                   f"+{d.answers_gained} -{d.answers_lost}, abstained (unanswerable) +{d.abstains_gained} -{d.abstains_lost}")
    return out


def _paired_section(runs: Sequence[EvalRun]) -> list[str]:
    if len(runs) < 2:
        return []
    return [f"## Against the base ({runs[0].label}), question by question", "", paired_markdown(runs), "",
            "Same questions in both runs. A sign-test p above 0.05 means better vs worse could be chance; "
            "best of both = mean nDCG@10 if each question took the better of the two rankings (the most "
            "that routing questions between the two could gain); answered / abstained count the questions "
            "whose outcome flipped (+ newly, − no longer).", ""]


def _abstain_markdown(report: EvalReport, charts: Mapping[str, Path] | None = None) -> list[str]:
    """The composer's best support score on answerable vs unanswerable questions, per distinct
    configuration, with the rates at the configured bar and the bar that separates best."""
    rows, seen = [], set()
    for r in report.runs:
        st = abstain_stats(r)
        key = (r.collection, tuple(sorted(r.config.items())))
        if not st or key in seen:
            continue
        seen.add(key)
        a, u, rec = st["answerable"], st["unanswerable"], st.get("recommended")
        m = r.metrics()
        rows.append([
            r.label, st["abstain_bar"], f"{_fmt(m.get('answer_rate'), 2)} / {_fmt(m.get('abstain_rate'), 2)}",
            " / ".join(_fmt(a.get(k)) for k in ("p10", "p50", "p90")), " / ".join(_fmt(u.get(k)) for k in ("p10", "p50", "p90")),
            f"{rec['bar']:.3f}: {rec['answer_rate']:.2f} / {rec['abstain_rate']:.2f}" if rec else "–",
        ])
    if not rows:
        return []
    chart = [f"![best support per question]({charts['abstain'].name})", ""] if charts and "abstain" in charts else []
    return [
        "## Abstaining", "", *chart,
        "Support score per question (answerability.py: closest passages, closest section heading, question words); "
        "the engine abstains when it is below the abstain bar. Rates are answered (answerable) / abstained (unanswerable).", "",
        _md_table(["configuration", "bar", "rates at bar", "answerable p10/p50/p90", "unanswerable p10/p50/p90",
                   "best bar: rates"], rows), "",
        "Best bar = the bar maximising min(answer rate, abstain rate), then their sum, on this data set.", "",
    ]


def markdown(report: EvalReport, *, charts: Mapping[str, Path] | None = None, json_path: Path | None = None,
             per_question: bool = True) -> str:
    r0 = report.runs[0] if report.runs else None
    n_a = r0.summary.n_answerable if r0 else 0
    n_u = r0.summary.n_unanswerable if r0 else 0
    out = [
        f"# Evaluation: {report.dataset} on collection `{report.collection}` ({report.when})",
        "",
        f"{n_a} answerable and {n_u} unanswerable questions; corpus version `{report.corpus_version}`; "
        f"{report.seconds:.0f} s on {report.machine.get('cpus')} CPUs (load {report.machine.get('load_avg')}).",
        "",
        "Base configuration: " + ", ".join(f"{k}={v}" for k, v in report.base_config.items()) + ".",
        "",
        "## Comparison",
        "",
        comparison_markdown(report.runs),
        "",
        "Retrieval metrics are document-level over the ranked candidate pool (distinct documents, "
        "first occurrence; chunks cut by the threshold excluded); answer metrics come from the "
        "extractive composer with the configuration's evidence (top-K plus evidence_seats); the answer rate is on "
        "answerable questions, the abstain rate on unanswerable ones; bold = best in its column; "
        "latency is per question, end to end.",
        "",
        "### Latency per stage (ms, p50/p95)",
        "",
    ]
    out += [_stage_latency_markdown(report.runs), ""]
    out += evidence_lines(report.runs)

    for g in report.sweeps:
        out += [f"## Sweep: {g.key}", ""]
        rows = sweep_rows(report, g)
        out.append(_md_table([g.key, *(h for _, h in TABLE_COLUMNS), "evidence recall", "p50 ms"], [
            [row[g.key], *(_fmt(row.get(k)) for k, _ in TABLE_COLUMNS), _fmt(row.get("evidence_recall")),
             _ms(row["latency_p50_ms"].get("total"))] for row in rows]))
        if charts and f"sweep:{g.key}" in charts:
            out += ["", f"![metrics vs {g.key}]({charts[f'sweep:{g.key}'].name})"]
        out.append("")
    if charts and "comparison" in charts:
        out += [f"![comparison]({charts['comparison'].name})", ""]
    out += _paired_section(report.runs)

    out += _abstain_markdown(report, charts)

    if per_question and report.runs:
        out += ["## Per question: nDCG@10 (rank of the first relevant document)", "", _per_question_markdown(report.runs), ""]
    notes = list(report.notes) + [f"{r.label}: {n}" for r in report.runs for n in r.notes]
    if notes:
        out += ["## Notes", "", *(f"- {n}" for n in notes), ""]
    if json_path is not None:
        out += [f"Full results (every question, every run): `{json_path.name}`.", ""]
    return "\n".join(out)




__all__ += ["evidence_lines", "paired_lines", "paired_markdown", "comparison_markdown", "run_dict", "METRIC_LABELS"]
