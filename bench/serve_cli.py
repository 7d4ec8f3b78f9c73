"""`ragcore bench serve`: the command's options and its dispatch, to bench/serve.py (HTTP against in
process) or, with ``--mcp``, to bench/serve_mcp.py (MCP `search` against `/api/retrieve`). Apart from
both, so that neither imports the other."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from bench.common import DEFAULT_RESULTS
from bench.serve import bench_serve, summary


def add_serve_parser(bsub: argparse._SubParsersAction) -> None:
    b = bsub.add_parser("serve", help="`ragcore serve` req/s and p50/p95 vs the same calls in process; RSS; 429 under overload")
    b.add_argument("--collection", default="guide", help="collection whose vectors are copied up to --size")
    b.add_argument("--size", type=int, default=10_000)
    b.add_argument("--clients", type=int, default=16)
    b.add_argument("--seconds", type=float, default=20.0,
                   help="per side and phase (8 phases, each in --rounds alternated slices), then an overload phase of half")
    b.add_argument("--rounds", type=int, default=4)
    b.add_argument("--questions", type=int, default=64)
    b.add_argument("--data", type=Path, default=None,
                   help="keep the padded collection in this folder between runs (default: a temporary folder)")
    b.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    b.add_argument("--server-workers", type=int, default=1,
                   help="`ragcore serve --workers N` (not the transport's overhead: N processes against one in process)")
    b.add_argument("--server-running", type=int, default=None,
                   help="questions the server answers at once (RAGCORE_SERVE_MAX_CONCURRENT; default: the service's own)")
    b.add_argument("--mcp", action="store_true", help="instead: MCP `search` against `/api/retrieve` for the same "
                   "questions, paired, one client (bench/serve_mcp.py; results in serve-mcp.md)")
    b.set_defaults(func=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    from ragcore.cli.common import settings_from_args
    from ragcore.service.server import BLAS_THREAD_VARS, one_blas_thread

    if any(v not in os.environ for v in BLAS_THREAD_VARS):
        # `ragcore serve` runs BLAS on one thread unless told otherwise; numpy is loaded in this
        # process already (bench.common), so start again with the same setting: both sides alike.
        one_blas_thread()
        os.execv(sys.executable, [sys.executable, *sys.orig_argv[1:]])

    if args.mcp:
        from bench.serve_mcp import run

        return run(args)
    out = bench_serve(args.collection, args.size, args.clients, args.seconds, args.questions, args.results,
                      settings_from_args(args), rounds=args.rounds, data_dir=args.data,
                      server_workers=args.server_workers, server_running=args.server_running)
    print(summary(out))
    return 0
