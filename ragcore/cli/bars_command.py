"""`ragcore bars -c NAME [--restore N]`: the collection's calibrated abstain bar and the earlier
ones `ragcore eval --calibrate` replaced (eval/calibration.py keeps them); restore one."""

from __future__ import annotations

import argparse
import sys

from ragcore.cli.common import term_safe

__all__ = ["add_bars_parser", "cmd_bars"]


def add_bars_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    b = sub.add_parser("bars", help="list a collection's calibrated abstain bars (current and earlier); restore one")
    b.add_argument("--collection", "-c")
    b.add_argument("--restore", type=int, metavar="N", help="put back earlier bar number N (as listed)")
    b.set_defaults(func=cmd_bars)
    return b


def cmd_bars(args: argparse.Namespace) -> int:
    from ragcore.cli.common import settings_from_args
    from ragcore.engine.engine import Engine
    from ragcore.eval.calibration import CalibrationError, describe_bar, restore_bar, stored_bars

    s = settings_from_args(args)
    engine = Engine(s)
    try:
        name = s.collection
        if not engine.store.exists(name):
            print(f"error: no collection {term_safe(name)!r}", file=sys.stderr)
            return 2
        if args.restore is not None:
            try:
                chosen = restore_bar(engine, name, args.restore - 1)
            except CalibrationError as exc:
                print(f"error: {term_safe(exc)}", file=sys.stderr)
                return 2
            print(f"restored the abstain bar of {term_safe(name)}: {term_safe(describe_bar(chosen))}")
        current, history = stored_bars(engine, name)
        print(f"calibrated bar of {term_safe(name)}: {term_safe(describe_bar(current)) if current else 'none'}")
        for i, cal in enumerate(history, 1):
            print(f"  {i}. {term_safe(describe_bar(cal))}")
        if history:
            print(f"restore one with: ragcore bars -c {term_safe(name)} --restore N")
        return 0
    finally:
        engine.close()
