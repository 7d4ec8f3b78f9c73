"""`ragcore ingest | ask | collections | eval | bench`."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Sequence

from ragcore.cli.plugins import BENCH_HELP
from ragcore.cli.common import UsageError, add_options, attach_negative_values, dump_json, settings_from_args, term_safe
from ragcore.settings.config import ConfigError, RagcoreSettings
from ragcore.settings.redact import redact_url

if TYPE_CHECKING:
    from ragcore.cli.selection_file import Passage


def _engine(settings: RagcoreSettings, *, preload: bool = False):
    from ragcore.encoders.minilm import OnnxMiniLM

    encoder = OnnxMiniLM(batch_size=settings.embed_batch_size)
    if preload:  # a question needs the model: load it while the rest of ragcore imports
        encoder.load_in_background()
    from ragcore.engine.engine import Engine

    return Engine(settings, encoder=encoder)


def _copy_old_store(engine, *, quiet: bool = False) -> None:
    """An older version's local-mode folder is copied into Qdrant Edge on the first open
    (edge_migrate.py): say so on stderr, one line per collection, instead of a silent pause."""
    if not engine.store.migration_pending():
        return
    if not quiet:
        print("copying this data folder's collections into Qdrant Edge, once (the old folder is left as it was)",
              file=sys.stderr)

    def done(name: str, n: int, total: int) -> None:
        if n >= total and not quiet:
            print(f"  {term_safe(name)}: {n} points", file=sys.stderr)

    engine.store.migrate_pending_copy(done)


# ------------------------------------------------------------------ ingest

INGEST_FAILED = 1  # the exit status of an ingest in which some files could not be read


def cmd_ingest(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from ragcore.encoders.base import EmbedError

    s = settings_from_args(args)
    engine = _engine(s)
    _copy_old_store(engine, quiet=args.quiet)
    bar = tqdm(total=0, unit="file", disable=args.quiet or not sys.stderr.isatty() and not args.progress, file=sys.stderr)

    def progress(done: int, total: int, path: str) -> None:
        bar.total = total
        bar.n = done
        bar.set_postfix_str(term_safe(path[-40:]), refresh=False)
        bar.refresh()

    from ragcore.cli import gitcli
    from ragcore.ingest.gitrepo import GitError

    try:
        if args.ref:  # a git ref, read from git objects (cli/gitcli.py)
            report = gitcli.ingest_ref(engine, args, s, progress)
        else:
            report = engine.ingest(args.paths, s.collection, prune=not args.no_prune, progress=progress,
                                   calibrate=not args.no_calibrate, rebuild=args.rebuild)
    except (FileNotFoundError, EmbedError, GitError) as exc:
        print(f"error: {term_safe(exc)}", file=sys.stderr)
        return 2
    finally:
        bar.close()
    if args.json:
        from ragcore.types import to_jsonable

        print(dump_json(to_jsonable(report)))
        return INGEST_FAILED if report.failed else 0
    counts = report.summary()
    chunks = sum(o.chunks for o in report.outcomes if o.status in ("added", "updated", "unchanged"))
    print(
        f"collection {term_safe(report.collection)}: {counts['added']} added, {counts['updated']} updated, "
        f"{counts['unchanged']} unchanged, {counts['removed']} removed, {counts['failed']} failed "
        f"— {report.chunks_written} chunks written, {chunks} chunks in the collection's current files, "
        f"{report.seconds:.1f} s"
    )
    print(f"corpus version {report.corpus_version}, built {report.built_at}, embedding model "
          f"{term_safe(engine.embedder(report.collection).record().label)}")
    print(f"abstain bar {term_safe(engine.abstain_bar_info(report.collection, s).summary())}")
    gitcli.print_source(report)
    if report.endpoint:  # what the embedding endpoint sustained (encoders/adaptive.py)
        from ragcore.encoders.adaptive import Sustained

        print(f"embedding endpoint sustained {Sustained(**report.endpoint).describe()}")
    if report.ocr_pages:
        print(f"{report.ocr_pages} scanned PDF page(s) read by OCR")
    for o in report.failed:
        print(f"  skipped {term_safe(o.path)}: {term_safe(o.reason)}")
    return INGEST_FAILED if report.failed else 0  # so scripts notice (docs/02-ingesting-documents.md)


# ------------------------------------------------------------------ ask


def _read_selection(args: argparse.Namespace) -> "Passage | None":
    """The selected passage, read before the model loads, so a bad file or range fails at once."""
    from ragcore.cli.selection_file import Passage, read_selection_file  # loaders: only for a selection

    if args.selection:
        return Passage(args.selection, "(selection)", 1)
    if args.selection_file:
        return read_selection_file(args.selection_file, args.selection_page)
    if args.selection_page is not None:
        raise UsageError("--selection-page goes with --selection-file")
    return None


def _snapshot_note(engine, collection: str) -> None:
    """Say on stderr when the collection's query snapshot is out of date (a question never rewrites it)."""
    try:
        current = engine.store.snapshot_current(collection)
    except Exception:  # noqa: BLE001 - only a note: the question meets the same problem and reports it
        return
    if not current:
        print("note: this collection's query snapshot is missing, out of date or damaged, so questions read the "
              "store itself (slower); `ragcore collections --repair` rewrites it", file=sys.stderr)


def cmd_ask(args: argparse.Namespace) -> int:
    s = settings_from_args(args)
    passage = _read_selection(args)  # a bad file or range fails before any model loads
    engine = _engine(s, preload=True)
    try:
        return _ask(args, s, engine, passage)
    finally:
        engine.encoder.settle()  # never end the process while the model is still loading


def _ask(args: argparse.Namespace, s: RagcoreSettings, engine, passage: "Passage | None") -> int:
    from ragcore.engine.stages import SelectionInput

    selection = SelectionInput(**vars(passage)) if passage is not None else None
    context = args.context or ("both" if selection is not None else "corpus")
    if context != "selection":
        engine.warm(s.collection)  # open the collection's indexes while the model loads
        _snapshot_note(engine, s.collection)
    stream = engine.stream(args.question, context=context, selection=selection)
    answer = None
    streamed = False
    try:
        for ev in stream:
            if ev.type == "token" and args.stream and not args.json:
                print(term_safe(ev.data["text"], keep="\n\t"), end="", flush=True)
                streamed = True
            elif ev.type == "done":
                answer = ev.data["answer"]
    except KeyboardInterrupt:
        stream.close()  # closes the LLM stream at once
        print("\n(cancelled)", file=sys.stderr)
        return 130
    assert answer is not None
    args.quick_exit = not engine.store.opened  # read only: nothing of the store's to close
    if args.json:
        print(dump_json(answer.to_dict()))
        return 0 if answer.status != "error" else 1
    if streamed:
        print("\n")
    # the streamed tokens were the model's; when the checker replaced its answer, show what replaced it
    replaced = any(a.startswith("replaced the LLM answer") for a in answer.validation.guardrail_actions)
    print(render_answer(answer, include_text=not streamed or replaced))
    return 0 if answer.status != "error" else 1


def render_answer(answer, *, include_text: bool = True) -> str:
    """The answer as the terminal shows it; corpus-derived text cannot carry control characters."""
    from ragcore.abstain.answerability import describe

    out: list[str] = []
    if answer.status == "error":
        return f"error: {term_safe(answer.error_message)}"
    if include_text:
        out += [answer.answer, ""]
    if answer.error_message:
        out.append(f"note: {answer.error_message}")
    if answer.citations:
        out.append("Sources:")
        out += [_source_line(c) for c in answer.citations]
    v = answer.validation
    for label, items in (("unsupported", v.unsupported), ("uncited", v.uncited), ("hedged", v.hedged), ("stripped", v.stripped)):
        if items:
            out.append(f"{label}: {len(items)} — " + "; ".join(term_safe(i[:80]) for i in items))
    for action in v.guardrail_actions:
        out.append(f"guardrail: {action}")
    for note in v.notes:
        if not note.startswith("llm_error"):  # the error message above says it already
            out.append(f"note: {note}")
    m = answer.metadata
    bar = m.get("abstain_bar") or {}
    if answer.status != "abstained" and m.get("support") and bar:
        out.append(f"answered: {describe(m['support'], float(bar['value']))}; bar {bar['source']}")
    lat = m.get("latency_ms", {})
    conf = answer.confidence  # shown once it is calibrated (decides); until then only --json carries it
    out.append(
        f"status {answer.status} · {m.get('generator')} · {m.get('context')} · collection {term_safe(m.get('collection'))} "
        f"v{m.get('corpus_version')} · {m.get('chunks_used')} of {m.get('chunks_retrieved')} chunks used · "
        f"{lat.get('total', 0):.0f} ms" + (f" · confidence {conf.level} ({conf.value:.2f})" if conf and conf.decides else "")
    )
    return term_safe("\n".join(out), keep="\n\t")


def _source_line(c) -> str:
    where = f"{term_safe(c.path)}:{c.start_line}-{c.end_line}"
    if c.page is not None:
        where += f" (page {c.page})"
    sec = f" § {' › '.join(term_safe(s) for s in c.section)}" if c.section else ""
    score = f"{c.score_kind} {c.retrieval_score:.3f}, " if c.retrieval_score is not None else ""
    return f"  [{c.n}] {where}{sec}  ({score}support {c.support:.2f})"


# ------------------------------------------------------------------ collections


def cmd_collections(args: argparse.Namespace) -> int:
    s = settings_from_args(args)
    engine = _engine(s)
    _copy_old_store(engine)
    if args.repair:  # the explicit repair step: reads never rewrite a snapshot themselves
        failed: dict[str, str] = {}
        for name in engine.repair_snapshots(failed=failed):
            print(f"rewrote the query snapshot of {term_safe(name)} from the store", file=sys.stderr)
        for name, why in failed.items():  # damage is never copied into a snapshot: the listing says what to run
            print(f"could not repair {term_safe(name)}: {term_safe(why)}", file=sys.stderr)
    # a damaged collection is listed with its problem, the others as usual; a command waits out a writer
    infos = engine.collections(wait_s=None)
    bars = {i.name: engine.abstain_bar_info(i.name, s) for i in infos}
    from ragcore.cli.gitcli import print_source_lines, source_rows

    sources = source_rows(engine)  # the git source and staleness of each collection
    if args.json:
        from ragcore.types import to_jsonable

        print(dump_json([{**to_jsonable(i), "state": i.state, "abstain_bar": to_jsonable(bars[i.name]),
                          **{k: (sources.get(i.name) or {}).get(k) for k in ("source", "staleness")}} for i in infos]))
        return 0
    if not infos:
        where = redact_url(s.qdrant_url) or s.store_path
        print(f"no collections under {term_safe(where)}; create one with: ragcore ingest PATH --collection NAME")
        return 0
    print(f"{'collection':<20} {'documents':>9} {'chunks':>7}  {'corpus version':<16}  built at")
    for i in infos:
        print(f"{term_safe(i.name):<20} {i.documents:>9} {i.chunks:>7}  {term_safe(i.corpus_version or '-'):<16}  "
              f"{term_safe(i.built_at or '-')}")
        print(f"{'':<20} embedding model {term_safe(_model_label(engine, i.name))}")
        print(f"{'':<20} abstain bar {term_safe(bars[i.name].summary())}")
        print_source_lines(sources.get(i.name), f"{'':<20}")
        if i.snapshot not in (None, "ok"):
            print(f"{'':<20} query snapshot {SNAPSHOT_NOTES.get(i.snapshot, i.snapshot)}")
        state = i.state
        if state != "ready":
            print(f"{'':<20} {term_safe(i.problem) if i.problem else STATE_NOTES[state]}")
    return 0  # the listing worked, damaged collections included (each says what recovers it)


def _model_label(engine, name: str) -> str:
    """The collection's embedding model as recorded (no request to an endpoint: ``ragcore collections`` stays offline)."""
    from ragcore.encoders.registry import MINILM_RECORD, record_of

    return (record_of(engine.store.read_meta(name)) or MINILM_RECORD).label


SNAPSHOT_NOTES = {
    "missing": "missing: questions read the store itself (slower); `ragcore collections --repair` writes it",
    "stale": "stale: the store changed since (a writer at work, or one that died); `ragcore collections --repair` "
             "rewrites it",
    "damaged": "damaged: its files fail their checks, so questions read the store itself; `ragcore collections "
               "--repair` rewrites it",
}

STATE_NOTES = {
    "empty": "empty: the last ingest found no supported files (nothing to answer from)",
    "incomplete": "incomplete: an ingest did not finish; run it again (other collections are unaffected)",
}


# ------------------------------------------------------------------ serve


def cmd_serve(args: argparse.Namespace) -> int:
    import importlib.util

    missing = [m for m in ("fastapi", "uvicorn") if importlib.util.find_spec(m) is None]
    if missing:
        raise UsageError(f"ragcore serve needs {' and '.join(missing)}, which come with the serve extra: "
                         'pip install "ragcore[serve]"')
    from ragcore.service.server import one_blas_thread, serve  # FastAPI and uvicorn load here only, never for `ragcore ask`

    one_blas_thread()  # before the settings are resolved: BLAS reads its variables once, when numpy loads
    return serve(args, settings_from_args(args))


def add_serve_parser(sub: argparse._SubParsersAction) -> None:
    srv = sub.add_parser("serve", help="serve the engine over HTTP: REST, SSE, WebSocket, OpenAI-compatible chat (docs/18)")
    srv.add_argument("--host", help="address to listen on (default 127.0.0.1; any other needs RAGCORE_API_KEYS)")
    srv.add_argument("--port", help="port (default 8000)")
    srv.add_argument("--workers", help="uvicorn worker processes, each with its own engine (default 1)")
    srv.add_argument("--collection", "-c", help="the collection a request names none of (default RAGCORE_COLLECTION)")
    srv.set_defaults(func=cmd_serve)


# ------------------------------------------------------------------ main


# Commands whose parsers live in heavier modules (bench imports Qdrant's client and the engines):
# `ragcore ask` / `--help` register only a stub for them, so a cold question does not import them.
LAZY_COMMANDS = {
    "eval": "evaluate retrieval and answers on a data set (questions.jsonl + unanswerable.jsonl)",
    "bench": BENCH_HELP,
}


def _add_ingest_parser(sub: argparse._SubParsersAction) -> None:
    ing = sub.add_parser("ingest", help="ingest files or folders into a collection (incremental)")
    ing.add_argument("paths", nargs="+")
    ing.add_argument("--collection", "-c")
    add_options(ing, "ingest")  # --chunk-size, --chunk-overlap, --embed-model from the settings catalog
    ing.add_argument("--no-prune", action="store_true", help="keep documents that are not in PATHS any more")
    ing.add_argument("--rebuild", action="store_true", help="drop the collection first and build it again (e.g. with "
                     "another --embed-model)")
    ing.add_argument("--no-calibrate", action="store_true",
                     help="do not set the abstain bar from the corpus itself (label-free calibration, a few seconds)")
    from ragcore.cli.gitcli import add_ref_arguments

    add_ref_arguments(ing)
    ing.add_argument("--json", action="store_true", help="print the ingest report as JSON")
    ing.add_argument("--quiet", "-q", action="store_true")
    ing.add_argument("--progress", action="store_true", help="show the progress bar even when not on a terminal")
    ing.set_defaults(func=cmd_ingest)


def build_parser(full: bool = True) -> argparse.ArgumentParser:
    """The CLI's parser; ``full=False`` leaves `eval` and `bench` as stubs (listed in --help only)."""
    p = argparse.ArgumentParser(prog="ragcore", description="Grounded question answering over a document corpus.")
    p.add_argument("--data-dir", dest="data_dir", help="where embedded Qdrant lives (default: RAGCORE_DATA_DIR or ~/.local/share/ragcore)")
    sub = p.add_subparsers(dest="command", required=True)

    _add_ingest_parser(sub)

    ask = sub.add_parser("ask", help="ask a question")
    ask.add_argument("question")
    ask.add_argument("--collection", "-c")
    add_options(ask, "ask")  # --top-k, --threshold, --mode, … from the settings catalog
    ask.add_argument("--selection", help="answer only from this passage")
    ask.add_argument("--selection-file", dest="selection_file", help="FILE[:START-END] lines to answer from (read as the app's viewer shows them: an HTML page's text, a PDF page's)")
    ask.add_argument("--selection-page", dest="selection_page", type=int, help="the PDF page whose lines --selection-file names")
    ask.add_argument("--context", "--ask-mode", dest="context", choices=["corpus", "selection", "both"], help="answer from the whole corpus, only the selection, or both (default: corpus, or both with --selection-file)")
    ask.add_argument("--json", action="store_true", help="print the Answer contract as JSON")
    ask.add_argument("--stream", action="store_true", help="print tokens as they come")
    ask.set_defaults(func=cmd_ask)

    col = sub.add_parser("collections", help="list collections with their stats")
    col.add_argument("--json", action="store_true")
    col.add_argument("--repair", action="store_true", help="first rewrite any query snapshot that is missing, stale "
                     "(a writer died) or damaged, from the embedded store (a write: waits for another writer)")
    col.set_defaults(func=cmd_collections)

    add_serve_parser(sub)
    from ragcore.cli.mcp_command import add_mcp_parser

    add_mcp_parser(sub)

    from ragcore.cli.bars_command import add_bars_parser

    add_bars_parser(sub)

    if not full:
        for name, text in LAZY_COMMANDS.items():
            sub.add_parser(name, help=text, add_help=False)
        return p
    from ragcore.cli.plugins import add_plugin_parsers
    from ragcore.cli.eval_command import add_eval_parser

    add_eval_parser(sub)
    add_plugin_parsers(sub)
    return p


def _command(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (the first word that is neither an option nor --data-dir's value)."""
    skip = False
    for a in argv:
        if skip:
            skip = False
        elif a == "--data-dir":
            skip = True
        elif not a.startswith("-"):
            return a
    return None


def main(argv: Sequence[str] | None = None) -> int:
    return _dispatch(argv)[0]


def run() -> None:
    """The ``ragcore`` console script. A question that opened no store leaves nothing to close
    or flush but its output, so it skips the interpreter's teardown (freeing the model's session,
    the snapshot's maps and every module one by one: ~0.1 s of a ~1.2 s cold ``ragcore ask``)."""
    code, quick = _dispatch(None)
    if quick:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:  # a closed pipe: nothing more can be said
                pass
        os._exit(code)
    raise SystemExit(code)


def _dispatch(argv: Sequence[str] | None) -> tuple[int, bool]:
    """Run one command: (exit code, whether the process may end without teardown)."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(full=_command(args_in) in LAZY_COMMANDS)
    try:
        args = parser.parse_args(attach_negative_values(args_in))
    except SystemExit as exc:  # argparse has printed the usage error (or --help)
        return (exc.code if isinstance(exc.code, int) else 2), False
    code = _run_command(args)
    return code, code == 0 and bool(getattr(args, "quick_exit", False))


def _run_command(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("\n(interrupted)", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`ragcore ask ... | head`): nothing more to tell it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit's flush cannot fail again
        return 141  # 128 + SIGPIPE, as a shell reports a process a closed pipe stopped
    except (ConfigError, UsageError) as exc:  # a value the user gave: say which, and what is allowed
        print(f"error: {term_safe(exc)}", file=sys.stderr)
        return 2
    except Exception as exc:  # no tracebacks for users; RAGCORE_DEBUG=1 shows them
        if os.environ.get("RAGCORE_DEBUG"):
            raise
        from ragcore.storage.store import StoreError

        msg = str(exc) if isinstance(exc, StoreError) else f"{type(exc).__name__}: {exc}"
        print(f"error: {term_safe(msg)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    run()
