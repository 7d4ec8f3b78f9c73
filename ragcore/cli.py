"""`ragcore ingest | ask | collections | eval | bench`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Sequence

from .config import RagcoreSettings


def _settings(args: argparse.Namespace) -> Settings:
    over: dict[str, Any] = {}
    for key in ("top_k", "threshold", "retrieval_mode", "collection", "chunk_size", "chunk_overlap", "fusion", "rrf_k", "data_dir"):
        val = getattr(args, key, None)
        if val is not None:
            over[key] = Path(val) if key == "data_dir" else val
    if getattr(args, "path_filter", None):
        over["path_filter"] = args.path_filter
    from .synthesis.llm_config import resolve_llm_settings

    return RagcoreSettings.from_env(llm=resolve_llm_settings(), **over)


def _engine(settings: RagcoreSettings):
    from .pipeline import Engine

    return Engine(settings)


# ------------------------------------------------------------------ ingest


def cmd_ingest(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    s = _settings(args)
    engine = _engine(s)
    bar = tqdm(total=0, unit="file", disable=args.quiet or not sys.stderr.isatty() and not args.progress, file=sys.stderr)

    def progress(done: int, total: int, path: str) -> None:
        bar.total = total
        bar.n = done
        bar.set_postfix_str(path[-40:], refresh=False)
        bar.refresh()

    try:
        report = engine.ingest(args.paths, s.collection, prune=not args.no_prune, progress=progress)
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        bar.close()
    if args.json:
        from .types import to_jsonable

        print(json.dumps(to_jsonable(report), indent=2))
        return 0
    counts = report.summary()
    chunks = sum(o.chunks for o in report.outcomes if o.status in ("added", "updated", "unchanged"))
    print(
        f"collection {report.collection}: {counts['added']} added, {counts['updated']} updated, "
        f"{counts['unchanged']} unchanged, {counts['removed']} removed, {counts['failed']} failed "
        f"— {report.chunks_written} chunks written, {chunks} chunks in the collection's current files, "
        f"{report.seconds:.1f} s"
    )
    print(f"corpus version {report.corpus_version}, built {report.built_at}")
    for o in report.failed:
        print(f"  skipped {o.path}: {o.reason}")
    return 0


# ------------------------------------------------------------------ ask


def _read_selection(args: argparse.Namespace):
    from .pipeline import SelectionInput

    if args.selection:
        return SelectionInput(args.selection, "(selection)")
    if args.selection_file:
        spec = args.selection_file
        path, _, rng = spec.partition(":")
        lines = Path(path).read_text(encoding="utf-8").splitlines()
        start, end = 1, len(lines)
        if rng:
            a, _, b = rng.partition("-")
            start, end = int(a), int(b or a)
        return SelectionInput("\n".join(lines[start - 1 : end]), path, start)
    return None


def cmd_ask(args: argparse.Namespace) -> int:
    s = _settings(args)
    engine = _engine(s)
    selection = _read_selection(args)
    context = args.context or ("both" if selection is not None else "corpus")
    stream = engine.stream(args.question, context=context, selection=selection)
    answer = None
    streamed = False
    try:
        for ev in stream:
            if ev.type == "token" and args.stream and not args.json:
                print(ev.data["text"], end="", flush=True)
                streamed = True
            elif ev.type == "done":
                answer = ev.data["answer"]
    except KeyboardInterrupt:
        stream.close()  # closes the LLM stream at once
        print("\n(cancelled)", file=sys.stderr)
        return 130
    assert answer is not None
    if args.json:
        print(answer.to_json())
        return 0 if answer.status != "error" else 1
    if streamed:
        print("\n")
    print(render_answer(answer, include_text=not streamed))
    return 0 if answer.status != "error" else 1


def render_answer(answer, *, include_text: bool = True) -> str:
    from .answerability import describe

    out: list[str] = []
    if answer.status == "error":
        return f"error: {answer.error_message}"
    if include_text:
        out += [answer.answer, ""]
    if answer.error_message:
        out.append(f"note: {answer.error_message}")
    if answer.citations:
        out.append("Sources:")
        for c in answer.citations:
            where = f"{c.path}:{c.start_line}-{c.end_line}"
            if c.page is not None:
                where += f" (page {c.page})"
            sec = f" § {' › '.join(c.section)}" if c.section else ""
            score = f"{c.score_kind} {c.retrieval_score:.3f}, " if c.retrieval_score is not None else ""
            out.append(f"  [{c.n}] {where}{sec}  ({score}support {c.support:.2f})")
    v = answer.validation
    for label, items in (("unsupported", v.unsupported), ("uncited", v.uncited), ("hedged", v.hedged), ("stripped", v.stripped)):
        if items:
            out.append(f"{label}: {len(items)} — " + "; ".join(i[:80] for i in items))
    for action in v.guardrail_actions:
        out.append(f"guardrail: {action}")
    m = answer.metadata
    bar = m.get("abstain_bar") or {}
    if answer.status != "abstained" and m.get("support") and bar:
        out.append(f"answered: {describe(m['support'], float(bar['value']))}; bar {bar['source']}")
    lat = m.get("latency_ms", {})
    out.append(
        f"status {answer.status} · {m.get('generator')} · {m.get('context')} · collection {m.get('collection')} "
        f"v{m.get('corpus_version')} · {m.get('chunks_used')} of {m.get('chunks_retrieved')} chunks used · "
        f"{lat.get('total', 0):.0f} ms"
    )
    return "\n".join(out)


# ------------------------------------------------------------------ collections


def cmd_collections(args: argparse.Namespace) -> int:
    s = _settings(args)
    engine = _engine(s)
    infos = engine.collections()
    if args.json:
        from .types import to_jsonable

        print(json.dumps(to_jsonable(infos), indent=2))
        return 0
    if not infos:
        print(f"no collections under {s.qdrant_url or s.qdrant_path}; create one with: ragcore ingest PATH --collection NAME")
        return 0
    print(f"{'collection':<20} {'documents':>9} {'chunks':>7}  {'corpus version':<16}  built at")
    for i in infos:
        print(f"{i.name:<20} {i.documents:>9} {i.chunks:>7}  {i.corpus_version or '-':<16}  {i.built_at or '-'}")
    return 0


# ------------------------------------------------------------------ main


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ragcore", description="Grounded question answering over a document corpus.")
    p.add_argument("--data-dir", dest="data_dir", help="where embedded Qdrant lives (default: RAGCORE_DATA_DIR or ~/.local/share/ragcore)")
    sub = p.add_subparsers(dest="command", required=True)

    ing = sub.add_parser("ingest", help="ingest files or folders into a collection (incremental)")
    ing.add_argument("paths", nargs="+")
    ing.add_argument("--collection", "-c")
    ing.add_argument("--chunk-size", type=int, dest="chunk_size")
    ing.add_argument("--chunk-overlap", type=int, dest="chunk_overlap")
    ing.add_argument("--no-prune", action="store_true", help="keep documents that are not in PATHS any more")
    ing.add_argument("--json", action="store_true", help="print the ingest report as JSON")
    ing.add_argument("--quiet", "-q", action="store_true")
    ing.add_argument("--progress", action="store_true", help="show the progress bar even when not on a terminal")
    ing.set_defaults(func=cmd_ingest)

    ask = sub.add_parser("ask", help="ask a question")
    ask.add_argument("question")
    ask.add_argument("--collection", "-c")
    ask.add_argument("--top-k", type=int, dest="top_k")
    ask.add_argument("--threshold", type=float, help="minimum cosine similarity (0-1) a chunk needs, in every mode")
    ask.add_argument("--mode", dest="retrieval_mode", choices=["dense", "sparse", "hybrid"], help="retrieval mode (default hybrid)")
    ask.add_argument("--fusion", choices=["rrf", "weighted"])
    ask.add_argument("--rrf-k", type=int, dest="rrf_k")
    ask.add_argument("--path-filter", dest="path_filter", help="only documents whose path matches this glob")
    ask.add_argument("--selection", help="answer only from this passage")
    ask.add_argument("--selection-file", dest="selection_file", help="FILE[:START-END] lines to answer from")
    ask.add_argument("--context", "--ask-mode", dest="context", choices=["corpus", "selection", "both"], help="answer from the whole corpus, only the selection, or both (default: corpus, or both with --selection-file)")
    ask.add_argument("--json", action="store_true", help="print the Answer contract as JSON")
    ask.add_argument("--stream", action="store_true", help="print tokens as they come")
    ask.set_defaults(func=cmd_ask)

    col = sub.add_parser("collections", help="list collections with their stats")
    col.add_argument("--json", action="store_true")
    col.set_defaults(func=cmd_collections)

    from .bench import add_bench_parser
    from .eval.cli import add_eval_parser

    add_eval_parser(sub)
    add_bench_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("\n(interrupted)", file=sys.stderr)
        return 130
    except Exception as exc:  # no tracebacks for users; RAGCORE_DEBUG=1 shows them
        import os

        if os.environ.get("RAGCORE_DEBUG"):
            raise
        from .store import StoreError

        msg = str(exc) if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"
        print(f"error: {msg}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
