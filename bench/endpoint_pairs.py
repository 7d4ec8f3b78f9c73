"""Before/after pairs of ``ragcore bench ingest --endpoint scripted:MS``, alternated run by run.

    python -m bench.endpoint_pairs --before DIR --after DIR --ms 10,20,50 --pairs 3 --limit 40 --out FILE.json

Each run is a process of its own in its checkout (``PYTHONPATH`` = the checkout, so its ``ragcore`` is
the one measured), one pair at a time: before then after, so both sides meet the same load (other jobs
share the machine). The machine's 1-minute load average is read before each run. Give the before
checkout this checkout's ``bench/endpoint.py`` and ``bench/support/scripted_embeddings.py`` so that both
sides run the same harness. Writes the raw runs as JSON; :func:`rows` makes the Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import DJANGO


def run_side(checkout: Path, ms: float, limit: int, corpus: Path) -> dict[str, Any]:
    load = round(os.getloadavg()[0], 1)
    with tempfile.TemporaryDirectory() as results:
        env = {**os.environ, "PYTHONPATH": str(checkout)}
        cmd = [sys.executable, "-m", "ragcore.cli.main", "bench", "ingest", "--endpoint", f"scripted:{ms:g}",
               "--corpus", str(corpus), "--limit", str(limit), "--runs", "1", "--results", results]
        subprocess.run(cmd, cwd=checkout, env=env, check=True, stdout=subprocess.DEVNULL)
        got = json.loads((Path(results) / "ingest-endpoint.json").read_text())
    run = got["runs"][0]
    return {"load": load, "ragcore_s": run["ragcore"]["seconds"], "alone_s": run["endpoint_alone"]["seconds"],
            "texts": run["ragcore"]["texts"], "chunks": run["ragcore"]["chunks"], "share": run["share_of_endpoint"]}


def rows(runs: list[dict[str, Any]]) -> str:
    """One Markdown row per pair and a median row per endpoint speed."""
    out = ["| endpoint | pair | before: ragcore s | alone s | share | after: ragcore s | alone s | share | load (before–after) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for ms in sorted({r["ms"] for r in runs}):
        pairs = [r for r in runs if r["ms"] == ms]
        for k, p in enumerate(pairs, 1):
            b, a = p["before"], p["after"]
            out.append(f"| {ms:g} ms per text | {k} | {b['ragcore_s']} | {b['alone_s']} | {b['share']} | {a['ragcore_s']} | "
                       f"{a['alone_s']} | **{a['share']}** | {b['load']:g}–{a['load']:g} |")
        med = [round(statistics.median(p[side]["share"] for p in pairs), 3) for side in ("before", "after")]
        out.append(f"| {ms:g} ms per text | median | | | {med[0]} | | | **{med[1]}** | |")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, required=True)
    ap.add_argument("--ms", default="10,20,50")
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--corpus", type=Path, default=DJANGO / "corpus")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    runs = json.loads(args.out.read_text()) if args.out.exists() else []  # appends: a long series can be resumed
    for ms in (float(x) for x in args.ms.split(",")):
        for _ in range(args.pairs):
            pair = {"ms": ms, "limit": args.limit, "before": run_side(args.before, ms, args.limit, args.corpus),
                    "after": run_side(args.after, ms, args.limit, args.corpus)}
            runs.append(pair)
            args.out.write_text(json.dumps(runs, indent=1))
            print(json.dumps(pair), flush=True)
    print(rows(runs))


if __name__ == "__main__":
    main()
