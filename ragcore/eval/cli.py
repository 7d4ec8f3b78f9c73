"""`ragcore eval DATASET --collection NAME [--sweep KEY=V1,V2 …] [--baselines …]`.

Prints the comparison table (and per-stage latencies), writes the JSON file (``--out``; every
run is also saved under ``settings.data_dir/eval_runs`` for the app's trend), a Markdown
summary next to it and, when there is more than one configuration, charts.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_eval_parser", "cmd_eval"]


def add_eval_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    e = sub.add_parser(
        "eval", help="evaluate retrieval and answers on a data set (questions.jsonl + unanswerable.jsonl)",
        description="Ask every question of an evaluation data set and report recall@k, MRR, nDCG, answer/abstain "
        "rates, citation precision, supported sentences, token F1 and latency, per configuration.",
    )
    e.add_argument("dataset", type=Path, help="a data set folder (questions.jsonl [+ unanswerable.jsonl] [+ corpus/]) or one .jsonl file")
    e.add_argument("--collection", "-c", required=True, help="the collection the data set's corpus was ingested into")
    e.add_argument("--mode", "--retrieval-mode", dest="retrieval_mode", choices=["dense", "sparse", "hybrid"], help="base retrieval mode (default: RAGCORE_RETRIEVAL_MODE or hybrid)")
    e.add_argument("--top-k", type=int, dest="top_k")
    e.add_argument("--threshold", type=float)
    e.add_argument("--fusion", choices=["rrf", "weighted"])
    e.add_argument("--rrf-k", type=int, dest="rrf_k")
    e.add_argument("--candidates", type=int, help="candidates per branch before cuts (the pool the retrieval metrics rank)")
    e.add_argument("--abstain-bar", type=float, dest="abstain_bar")
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
    e.add_argument("--no-charts", action="store_true", help="do not write charts")
    e.add_argument("--no-save", action="store_true", help="do not save the run under DATA_DIR/eval_runs")
    e.add_argument("--json", action="store_true", help="print the JSON results instead of the tables")
    e.add_argument("--quiet", "-q", action="store_true", help="no progress bar")
    e.add_argument("--progress", action="store_true", help="show the progress bar even when not on a terminal")
    e.set_defaults(func=cmd_eval)
    return e


def _base_settings(args: argparse.Namespace):
    from ..cli import _settings

    s = _settings(args)
    over: dict[str, Any] = {}
    for key in ("candidates", "abstain_bar"):
        if getattr(args, key, None) is not None:
            over[key] = getattr(args, key)
    if "abstain_bar" in over:  # an explicit bar wins over the collection's calibrated one
        over["calibrated_bar"] = False
    return s.with_(**over) if over else s


def cmd_eval(args: argparse.Namespace) -> int:
    import json

    from tqdm import tqdm

    from ..pipeline import Engine
    from .dataset import DatasetError, load_dataset
    from .report import format_table, latency_table, markdown, report_dict, save_run, write_json
    from .sweep import SweepError, evaluate, parse_sweep, write_charts

    try:
        dataset = load_dataset(args.dataset)
        sweeps = [parse_sweep(s) for s in args.sweep]
    except (DatasetError, SweepError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    names = [b.strip() for b in args.baselines.split(",") if b.strip() and b.strip() != "none"]
    baselines = [b for b in names if b != "llamaindex" or dataset.corpus_dir is not None]
    settings = _base_settings(args)
    engine = Engine(settings)
    show = not args.quiet and (sys.stderr.isatty() or args.progress)
    bar = tqdm(total=0, unit="q", disable=not show, file=sys.stderr, dynamic_ncols=True)

    def progress(done: int, total: int, label: str) -> None:
        bar.total = total
        bar.n = done
        bar.set_postfix_str(label[-50:], refresh=False)
        bar.refresh()

    def say(msg: str) -> None:
        if not args.quiet and not args.json:
            (bar.write if show else lambda m: print(m, file=sys.stderr))(msg)

    if args.calibrate:
        from .calibration import CalibrationError, calibrate

        try:
            cal = calibrate(engine, dataset, args.collection or settings.collection, settings,
                            progress=lambda d, t: progress(d, t, "calibrating the abstain bar"))
        except CalibrationError as exc:
            bar.close()
            engine.close()
            print(f"error: {exc}", file=sys.stderr)
            return 2
        say(f"calibrated abstain bar for {args.collection or settings.collection}: {cal.bar:.3f} "
            f"(answers {cal.answer_rate:.0%} of {cal.answerable} answerable, abstains on {cal.abstain_rate:.0%} "
            f"of {cal.unanswerable} unanswerable); stored with the collection")
        if getattr(args, "abstain_bar", None) is None:
            settings = settings.with_(calibrated_bar=True)
    if "llamaindex" in names and "llamaindex" not in baselines:
        say(f"note: no LlamaIndex baseline: {args.dataset} has no corpus/ folder")
    try:
        report = evaluate(engine, dataset, collection=args.collection, settings=settings, sweeps=sweeps,
                          baselines=baselines, progress=progress, say=say, limit=args.limit,
                          cold_cache=not args.warm, keep_temp=not args.drop_temp)
    except SweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        bar.close()
        engine.close()

    saved = None if args.no_save else save_run(report, settings.data_dir)
    json_path = write_json(report, args.out) if args.out else saved
    charts: dict[str, Path] = {}
    if not args.no_charts and json_path is not None and (len(report.runs) > 1 or report.sweeps):
        charts = write_charts(report, json_path.with_suffix(""))
    md_path = args.md or (args.out.with_suffix(".md") if args.out else None)
    md = markdown(report, charts=charts, json_path=json_path)
    if md_path is not None:
        md_path.parent.mkdir(parents=True, exist_ok=True)
        md_path.write_text(md + "\n", encoding="utf-8")

    if args.json:
        print(json.dumps(report_dict(report), indent=1, ensure_ascii=False, default=str))
        return 0
    r0 = report.runs[0]
    print(f"{report.dataset}: {r0.summary.n_answerable} answerable + {r0.summary.n_unanswerable} unanswerable questions "
          f"on collection {report.collection} (corpus version {report.corpus_version}), {report.seconds:.0f} s\n")
    print(format_table(report.runs))
    print("\nlatency per stage, ms (p50/p95):")
    print(latency_table(report.runs))
    for g in report.sweeps:
        print(f"\nsweep {g.key}: " + ", ".join(f"{v} -> {lab!r}" for v, lab in zip(g.values, g.labels)))
    for n in report.notes + [f"{r.label}: {n}" for r in report.runs for n in r.notes]:
        print(f"note: {n}")
    for what, p in (("results", json_path), ("summary", md_path), ("saved run", saved if saved != json_path else None),
                    *((f"chart {k}", v) for k, v in charts.items())):
        if p is not None:
            print(f"{what}: {p}")
    return 0
