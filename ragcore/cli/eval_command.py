"""`ragcore eval DATASET --collection NAME [--sweep KEY=V1,V2 …] [--baselines …]`.

Prints the comparison table (and per-stage latencies), writes the JSON file (``--out``; every
run is also saved under ``settings.data_dir/eval_runs`` for the app's trend), a Markdown
summary next to it and, when there is more than one configuration, charts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragcore.cli.common import add_options, term_safe

__all__ = ["add_eval_parser", "cmd_eval"]


def add_eval_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    e = sub.add_parser(
        "eval", help="evaluate retrieval and answers on a data set (questions.jsonl + unanswerable.jsonl)",
        description="Ask every question of an evaluation data set and report recall@k, MRR, nDCG, answer/abstain "
        "rates, citation precision, supported sentences, token F1 and latency, per configuration.",
    )
    e.add_argument("dataset", type=Path, help="a data set folder (questions.jsonl [+ unanswerable.jsonl] [+ corpus/]) or one .jsonl file")
    e.add_argument("--collection", "-c", required=True, help="the collection the data set's corpus was ingested into")
    # --mode, --top-k, --threshold, --fusion, --rrf-k, --candidates, --abstain-bar: from the settings catalog
    add_options(e, "eval", aliases={"retrieval_mode": ("--retrieval-mode",)})
    e.add_argument(
        "--sweep", action="append", default=[], metavar="KEY=V1,V2",
        help="vary one setting from the base configuration (repeatable; one sweep per option, not a grid): "
        "retrieval_mode, top_k, threshold, fusion, rrf_k, candidates, dense_weight, abstain_bar, chunk_size, chunk_overlap, … "
        "chunk_size re-ingests the data set's corpus/ into COLLECTION__csSIZE",
    )
    e.add_argument("--baselines", default="llamaindex,bm25",
                   help="comma list of llamaindex, bm25, or none (default: both; llamaindex needs the data set's corpus/)")
    e.add_argument("--limit", type=int, help="only the first N answerable and first N unanswerable questions")
    e.add_argument("--out", type=Path, help="write the JSON results here (a Markdown summary and charts go next to it)")
    e.add_argument("--md", type=Path, help="where to write the Markdown summary (default: --out with .md)")
    e.add_argument("--warm", action="store_true",
                   help="keep the encoder's vector cache between configurations (faster; latencies then depend on run order)")
    e.add_argument("--drop-temp", action="store_true", help="drop the chunk-size sweep's collections at the end")
    e.add_argument("--calibrate", action="store_true",
                   help="first choose the collection's abstain bar from this data set and store it with the "
                        "collection (the app and `ragcore ask` then use it); the run then uses that bar")
    e.add_argument("--replace", action="store_true",
                   help="with --calibrate: replace the collection's stored bar without asking (it is kept in the "
                        "history: `ragcore bars -c NAME` lists and restores bars)")
    e.add_argument("--no-charts", action="store_true", help="do not write charts")
    e.add_argument("--no-save", action="store_true", help="do not save the run under DATA_DIR/eval_runs")
    e.add_argument("--json", action="store_true", help="print the JSON results instead of the tables")
    e.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    e.add_argument("--progress", action="store_true", help="show the progress bar even when not on a terminal")
    e.set_defaults(func=cmd_eval)
    return e


def _base_settings(args: argparse.Namespace):
    """The environment and the options (``--candidates`` and ``--abstain-bar`` included), validated."""
    from ragcore.cli.common import settings_from_args

    s = settings_from_args(args)
    if getattr(args, "abstain_bar", None) is not None:  # an explicit bar wins over the collection's calibrated one
        s = s.with_(calibrated_bar=False)
    return s


class _Progress:
    """The progress bar (on a terminal or with --progress) and the running commentary."""

    def __init__(self, args: argparse.Namespace) -> None:
        from tqdm import tqdm

        self.quiet = args.quiet or args.json
        self.show = not args.quiet and (sys.stderr.isatty() or args.progress)
        self.bar = tqdm(total=0, unit="q", disable=not self.show, file=sys.stderr, dynamic_ncols=True)

    def __call__(self, done: int, total: int, label: str) -> None:
        self.bar.total = total
        self.bar.n = done
        self.bar.set_postfix_str(term_safe(label[-50:]), refresh=False)
        self.bar.refresh()

    def say(self, msg: str) -> None:
        if not self.quiet:
            (self.bar.write if self.show else lambda m: print(m, file=sys.stderr))(term_safe(msg))


def cmd_eval(args: argparse.Namespace) -> int:
    from ragcore.settings.config import ConfigError
    from ragcore.engine.engine import Engine
    from ragcore.eval.calibration import CalibrationError
    from ragcore.eval.dataset import DatasetError, load_dataset
    from ragcore.eval.sweep import SweepError, evaluate, parse_sweep

    try:
        settings = _base_settings(args)
        dataset = load_dataset(args.dataset)
        sweeps = [parse_sweep(s) for s in args.sweep]
    except (ConfigError, DatasetError, SweepError) as exc:
        print(f"error: {term_safe(exc)}", file=sys.stderr)
        return 2
    names = [b.strip() for b in args.baselines.split(",") if b.strip() and b.strip() != "none"]
    baselines = [b for b in names if b != "llamaindex" or dataset.corpus_dir is not None]
    engine = Engine(settings)
    progress = _Progress(args)
    try:
        if args.calibrate:
            settings = _calibrate(args, engine, dataset, settings, progress)
        if "llamaindex" in names and "llamaindex" not in baselines:
            progress.say(f"note: no LlamaIndex baseline: {args.dataset} has no corpus/ folder")
        report = evaluate(engine, dataset, collection=args.collection, settings=settings, sweeps=sweeps,
                          baselines=baselines, progress=progress, say=progress.say, limit=args.limit,
                          cold_cache=not args.warm, keep_temp=not args.drop_temp)
    except (CalibrationError, SweepError) as exc:
        hint = " Add --replace to replace it." if type(exc).__name__ == "BarExists" else ""
        print(f"error: {term_safe(exc)}{hint}", file=sys.stderr)
        return 2
    finally:
        progress.bar.close()
        engine.close()
    _write_and_print(args, report, settings)
    return 0


def _calibrate(args: argparse.Namespace, engine, dataset, settings, progress: _Progress):
    """Choose and store the collection's abstain bar; the run then uses it (unless --abstain-bar)."""
    from ragcore.eval.calibration import calibrate

    from ragcore.eval.calibration import BarExists

    name = args.collection or settings.collection
    step = lambda d, t: progress(d, t, "calibrating the abstain bar")  # noqa: E731
    try:
        cal = calibrate(engine, dataset, name, settings, replace=args.replace, progress=step)
    except BarExists as exc:
        if not _confirm(f"{exc} Replace it with a bar from {dataset.name}? [y/N] "):
            raise BarExists(exc.collection, exc.current) from None  # (exit 2, the message says what to do)
        cal = calibrate(engine, dataset, name, settings, replace=True, progress=step)
    progress.say(f"calibrated abstain bar for {name}: {cal.bar:.3f} "
                 f"(answers {cal.answer_rate:.0%} of {cal.answerable} answerable, abstains on {cal.abstain_rate:.0%} "
                 f"of {cal.unanswerable} unanswerable); stored with the collection")
    return settings if getattr(args, "abstain_bar", None) is not None else settings.with_(calibrated_bar=True)


def _confirm(question: str) -> bool:
    """Ask on the terminal; without one (a script, CI) the answer is no: --replace says yes."""
    if not sys.stdin.isatty():
        return False
    try:
        return input(term_safe(question)).strip().lower() in ("y", "yes")
    except EOFError:
        return False


def _write_and_print(args: argparse.Namespace, report, settings) -> None:
    """The JSON file, the saved run, charts and the Markdown summary; then the tables (or --json)."""
    import json

    from ragcore.eval.report import markdown, report_dict, save_run, write_json
    from ragcore.eval.charts import CHARTS_NEED, charts_available, write_charts

    saved = None if args.no_save else save_run(report, settings.data_dir)
    json_path = write_json(report, args.out) if args.out else saved
    charts: dict[str, Path] = {}
    if not args.no_charts and json_path is not None and (len(report.runs) > 1 or report.sweeps):
        if charts_available():
            charts = write_charts(report, json_path.with_suffix(""))
        elif not args.json:
            print(CHARTS_NEED, file=sys.stderr)
    md_path = args.md or (args.out.with_suffix(".md") if args.out else None)
    md = markdown(report, charts=charts, json_path=json_path)
    if md_path is not None:
        md_path.parent.mkdir(parents=True, exist_ok=True)
        md_path.write_text(md + "\n", encoding="utf-8")
    if args.json:
        print(json.dumps(report_dict(report), indent=1, ensure_ascii=False, default=str))
        return
    paths = (("results", json_path), ("summary", md_path), ("saved run", saved if saved != json_path else None),
             *((f"chart {k}", v) for k, v in charts.items()))
    print(term_safe(_summary(report) + "".join(f"\n{what}: {p}" for what, p in paths if p is not None), keep="\n"))


def _summary(report) -> str:
    from ragcore.eval.report import format_table, latency_table, paired_lines

    r0 = report.runs[0]
    out = [f"{report.dataset}: {r0.summary.n_answerable} answerable + {r0.summary.n_unanswerable} unanswerable questions "
           f"on collection {report.collection} (corpus version {report.corpus_version}), {report.seconds:.0f} s\n",
           format_table(report.runs), "\nlatency per stage, ms (p50/p95):", latency_table(report.runs)]
    for g in report.sweeps:
        out.append(f"\nsweep {g.key}: " + ", ".join(f"{v} -> {lab!r}" for v, lab in zip(g.values, g.labels)))
    if len(report.runs) > 1:
        out += [f"\nagainst the base ({report.runs[0].label}), question by question:", *paired_lines(report.runs)]
    out += [f"note: {n}" for n in report.notes + [f"{r.label}: {n}" for r in report.runs for n in r.notes]]
    return "\n".join(out)
