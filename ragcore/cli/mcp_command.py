"""``ragcore mcp``: the MCP server over stdio, for a desktop assistant that starts it as a process
(Claude Desktop, Cursor, VS Code). The same tools and limits as ``/mcp`` on ``ragcore serve``: the
question slots and the deadline come from the ``RAGCORE_SERVE_*`` settings. Nothing but the
protocol is written to stdout; messages go to stderr."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ragcore.settings.config import ConfigError


def run_stdio(args: argparse.Namespace) -> int:
    from ragcore.cli.common import settings_from_args
    from ragcore.service.server import one_blas_thread

    one_blas_thread()
    settings = settings_from_args(args)
    selection = _selection(args.selection_file)

    from ragcore.engine.engine import Engine
    from ragcore.service.mcp.server import build_server
    from ragcore.service.mcp.tools import RagTools
    from ragcore.service.limits import Slots
    from ragcore.settings.service import ServiceSettings

    svc = ServiceSettings.from_env(os.environ)
    engine = Engine(settings)
    slots = Slots(svc.max_concurrent, svc.max_queued, svc.retry_after_s)
    tools = RagTools(engine, slots, svc.deadline_s, allow_ingest=args.allow_ingest, selection=selection)
    print(f"ragcore mcp on stdio · collection {settings.collection} · ingest {'on' if args.allow_ingest else 'off'}"
          f"{' · scoped to a selection (no search)' if selection else ''}", file=sys.stderr)
    try:
        build_server(tools).run("stdio")
    finally:
        slots.close()
        engine.close()
    return 0


def _selection(path: str | None) -> Any:
    """The passage of ``--selection-file`` as a ``SelectionInput`` (None without the option)."""
    if path is None:
        return None
    from ragcore.engine.selection import selection_problem
    from ragcore.engine.stages import SelectionInput
    from ragcore.settings.config import RagcoreSettings

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--selection-file {path!r} cannot be read: {type(exc).__name__}") from None
    problem = selection_problem(text, RagcoreSettings().min_selection_chars)
    if problem:
        raise ConfigError(f"--selection-file: {problem}")
    return SelectionInput(text, Path(path).name)


def add_mcp_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mcp", help="serve the engine to AI agents over the Model Context Protocol on stdio (docs/20)")
    p.add_argument("--collection", "-c", help="the default collection (default RAGCORE_COLLECTION)")
    p.add_argument("--allow-ingest", action="store_true", help="offer the ingest tool (off by default: agents only read)")
    p.add_argument("--selection-file", dest="selection_file",
                   help="scope the session to this passage: ask answers from it alone and no search tool is offered")
    p.set_defaults(func=_cmd)


def _cmd(args: argparse.Namespace) -> int:
    try:
        import mcp  # noqa: F401
    except ImportError:
        print("error: `ragcore mcp` needs the mcp extra: pip install 'ragcore[mcp]'", file=sys.stderr)
        return 2
    return run_stdio(args)
