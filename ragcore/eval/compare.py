"""``python -m ragcore.eval.compare RESULTS.json…``: each configuration of a saved evaluation
against its base, question by question (paired.py), without running anything again.

Reads the JSON that ``ragcore eval --out`` writes (or a saved run under DATA_DIR/eval_runs) and
prints one Markdown table per file, so results committed long ago can be re-judged.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Sequence

from ragcore.eval.report import evidence_lines, paired_markdown, report_from_dict


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ragcore.eval.compare", description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", type=Path, help="JSON written by ragcore eval --out")
    args = ap.parse_args(argv)
    status = 0
    for path in args.results:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise ValueError(f"a JSON {type(data).__name__}, not an object")
            report = report_from_dict(data)
        except (OSError, ValueError, KeyError, TypeError) as e:
            print(f"{path}: not an evaluation result ({type(e).__name__}: {e})", file=sys.stderr)
            status = 1
            continue
        print(f"## {path.name}: {report.dataset} on `{report.collection}`\n")
        print("\n".join(evidence_lines(report.runs)))
        if len(report.runs) < 2:
            print(f"Only one configuration ({report.runs[0].label if report.runs else 'none'}): nothing to compare.\n")
            continue
        print(paired_markdown(report.runs) + "\n")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
