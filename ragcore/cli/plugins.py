"""Commands that live outside the installed package: ``ragcore bench`` is registered when the
checkout's ``bench/`` folder is importable, as a plugin would be.

The benchmarks (and the scripted OpenAI server they drive) are not part of what a user installs to
ask questions, so the wheel holds none of them. From a checkout (an editable install, or the
repository on ``sys.path``) they are found beside the package.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCH_HELP = "benchmarks against a baseline in the same run (results in bench/results/)"


def bench_module() -> ModuleType | None:
    """``bench.cli`` from the checkout ragcore runs from, or None in an installed package."""
    root = Path(__file__).resolve().parents[2]
    if (root / "bench" / "cli.py").is_file() and str(root) not in sys.path:
        # an editable install runs the console script from .venv/bin, where the checkout is not on the path
        sys.path.append(str(root))
    try:
        mod = importlib.import_module("bench.cli")
    except ImportError:
        return None
    return mod if hasattr(mod, "add_bench_parser") else None  # another project's "bench" is not ours


def add_plugin_parsers(sub: argparse._SubParsersAction) -> None:
    mod = bench_module()
    if mod is not None:
        mod.add_bench_parser(sub)
        return
    p = sub.add_parser("bench", help=BENCH_HELP + " — from a checkout only")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    p.set_defaults(func=_no_bench)


def _no_bench(args: argparse.Namespace) -> int:
    print("error: `ragcore bench` runs from a checkout of the ragcore repository: the benchmarks live in its "
          "bench/ folder and are not installed with the package (pip install -e . from the checkout).", file=sys.stderr)
    return 2
