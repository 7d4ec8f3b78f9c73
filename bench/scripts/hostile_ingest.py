"""Peak memory and wall time of `ragcore ingest` over the hostile corpus at full size.

Builds the corpus of tests/integration/test_hostile_corpus.py (bench/support/hostile_corpus.py) in a temp folder at the sizes of the issue
(a 20 MB minified JSON line, 2 MB of one-character lines, a /dev/zero link, 100k nested
HTML tags, 1,100 nested folders …) with the default limits (max_file_bytes 20 MB,
max_file_chunks 5000), runs `ragcore ingest --json` in a subprocess with a fresh HOME and
RAGCORE_DATA_DIR, and reports its wall time and peak RSS: sampled from /proc every 50 ms and
taken from getrusage(RUSAGE_CHILDREN) once it exits.

    .venv/bin/python bench/scripts/hostile_ingest.py [--json out.json] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from bench.support.hostile_corpus import Sizes, build_hostile_corpus, deep_folders  # noqa: E402

FULL = Sizes(
    max_file_bytes=20_000_000, max_file_chunks=5000, huge_line_bytes=20_000_000, short_lines=1_000_000,
    nested_html=100_000, table_columns=10_000, zip_bomb_bytes=1_000_000_000, folder_depth=1100,
)


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def run_ingest(root: Path, data_dir: Path, home: Path, timeout: float) -> dict:
    env = {**os.environ, "HOME": str(home), "RAGCORE_DATA_DIR": str(data_dir)}
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGCORE_LLM_MODEL", "RAGCORE_QDRANT_URL"):
        env.pop(var, None)
    cmd = [sys.executable, "-m", "ragcore.cli.main", "ingest", str(root), "-c", "hostile", "--json", "--quiet"]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0]
    samples: list[tuple[float, int]] = []

    def sample() -> None:
        while proc.poll() is None:
            rss = _rss_kb(proc.pid)
            peak[0] = max(peak[0], rss)
            samples.append((time.perf_counter() - t0, rss))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return {"error": f"ingest did not finish in {timeout} s (hang)", "stderr": err[-2000:]}
    wall = time.perf_counter() - t0
    sampler.join()
    maxrss_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        return {"error": f"exit code {proc.returncode}", "stderr": err[-2000:]}
    report = json.loads(out)
    return {"wall_s": round(wall, 1), "peak_rss_mb_sampled": round(peak[0] / 1024, 1),
            "peak_rss_mb_getrusage": round(maxrss_kb / 1024, 1), "report": report,
            "rss_timeline_mb": [(round(t, 1), round(r / 1024)) for t, r in samples[:: max(1, len(samples) // 40)]]}


def summarize(result: dict, expected_bad: dict[str, str]) -> dict:
    outcomes = result["report"]["outcomes"]
    failed = {o["path"]: o["reason"] for o in outcomes if o["status"] == "failed"}
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o["status"]] = counts.get(o["status"], 0) + 1
    missing = sorted(rel for rel in expected_bad if rel not in failed)
    return {"wall_s": result["wall_s"], "peak_rss_mb_sampled": result["peak_rss_mb_sampled"],
            "peak_rss_mb_getrusage": result["peak_rss_mb_getrusage"], "outcomes": counts,
            "chunks_written": result["report"]["chunks_written"], "bad_not_reported": missing,
            "long_allowed.md": next((o for o in outcomes if o["path"] == "long_allowed.md"), None),
            "reasons": {rel: failed.get(rel) for rel in ("huge_line.json", "short_lines.txt", "zero.txt", "passwd.txt", "fifo.md")}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="hostile-ingest-"))
    try:
        t0 = time.perf_counter()
        corpus = build_hostile_corpus(base, FULL)
        with socket.socket(socket.AF_UNIX) as sock, \
                deep_folders(corpus.root, FULL.folder_depth, {"bottom.md": "The cable ship carries grapnels.\n"}):  # fmt: skip
            sock.bind(str(corpus.root / "sock.md"))
            corpus.bad.pop("vanishing.md")  # the test deletes it mid-ingest; here it is just a file
            # a long but allowed file: embedded and written over several batches
            long_text = "\n\n".join(f"Entry {i}: the archivist files record {i} under shelf {i % 37} and notes "
                                      f"its condition, date and donor before it goes into box {i // 50}." for i in range(6000))
            (corpus.root / "long_allowed.md").write_text(long_text + "\n")
            built = time.perf_counter() - t0
            result = run_ingest(corpus.root, base / "data", base / "home", args.timeout)
    finally:
        if not args.keep:
            shutil.rmtree(base / "outside", ignore_errors=True)
            shutil.rmtree(base, ignore_errors=True)
    if "error" in result:
        print(json.dumps(result, indent=2))
        return 1
    figures = {"corpus_build_s": round(built, 1), **summarize(result, corpus.bad),
               "rss_timeline_mb": result["rss_timeline_mb"]}
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
