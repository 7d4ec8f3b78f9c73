"""`ragcore bench git`: collections from git refs on a real repository of a few thousand files.

The repository is built here from a real source tree (by default the installed ``openai`` package's
source: ~2,000 files), committed in several commits. Measured:

* reading a commit's every blob: the ``git`` program (ls-tree + one cat-file --batch), and dulwich
  and pygit2 when they can be imported (``--libs`` adds a folder holding them to the path);
* a full ingest of ``main``; then a commit changing 1% of the files (a rename and a delete among
  them) and the re-ingest of ``main``: target ≤ 10% of the full ingest's wall time;
* a second branch sharing 95% of its files with the first, ingested as a second collection:
  target ≤ 10% of the first's chunks embedded (the rest come from the repository's vector cache).
"""

from __future__ import annotations

import argparse
import math
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from bench.common import DEFAULT_RESULTS, machine, utc_now, write

ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org", "GIT_COMMITTER_NAME": "bench",
       "GIT_COMMITTER_EMAIL": "bench@example.org"}


def add_git_parser(bsub: argparse._SubParsersAction) -> None:
    bg = bsub.add_parser("git", help="collections from git refs: re-ingest after a 1% commit, a second branch's embeddings")
    bg.add_argument("--source", type=Path, help="the source tree committed into the repository (default: the "
                    "installed openai package's source)")
    bg.add_argument("--libs", type=Path, help="a folder holding dulwich and pygit2, to compare their reading speed")
    bg.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    bg.set_defaults(func=_cmd_git)


def _cmd_git(args: argparse.Namespace) -> int:
    out = bench_git(args.source or _default_source(), args.results, args.libs)
    print((args.results / "git.md").read_text())
    return 0 if out["targets_met"] else 1


def _default_source() -> Path:
    import openai

    return Path(openai.__file__).resolve().parent


def _git(cwd: Path, *args: str) -> str:
    import os

    done = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **ENV}, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def build_repo(source: Path, work: Path, commits: int = 4) -> list[str]:
    """``source``'s text files (caches left out) committed into ``work`` in ``commits`` commits."""
    work.mkdir(parents=True)
    _git(work, "init", "-q", "-b", "main")
    files = sorted(p for p in source.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc")
    per = math.ceil(len(files) / commits)
    for i in range(commits):
        for p in files[i * per:(i + 1) * per]:
            dest = work / source.name / p.relative_to(source)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dest)
        _git(work, "add", "-A")
        _git(work, "commit", "-q", "-m", f"part {i + 1} of {commits}")
    _git(work, "gc", "-q")
    return _git(work, "ls-files").splitlines()


def change_files(work: Path, files: list[str], share: float, tag: str, *, rename_delete: bool) -> int:
    """Change ``share`` of the ``.py`` files (one line each), renaming one and deleting one of them."""
    py = [f for f in files if f.endswith(".py")]
    n = max(3, round(len(files) * share))
    step = max(1, len(py) // n)
    chosen = py[::step][:n]
    for f in chosen:
        p = work / f
        p.write_text(p.read_text() + f"\n# {tag}: changed for the benchmark ({f})\n")
    if rename_delete:
        _git(work, "mv", chosen[0], chosen[0].replace(".py", "_renamed.py"))
        _git(work, "rm", "-q", "-f", chosen[1])
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", f"{tag}: {len(chosen)} files")
    return len(chosen)


def read_speed(work: Path, libs: Path | None) -> dict[str, float]:
    """Best of three: seconds to read every blob of HEAD with each reader that can be imported."""
    from ragcore.ingest import gitrepo

    repo = gitrepo.open_repo(work)

    def with_git() -> int:
        entries = gitrepo.list_tree(repo, "HEAD")
        return sum(len(d) for _, d in gitrepo.read_blobs(repo, [e.sha for e in entries if e.kind == "blob"]))

    readers: dict[str, Callable[[], int]] = {"git program (ls-tree + cat-file --batch)": with_git}
    if libs is not None:
        sys.path.append(str(libs))
    try:
        readers["dulwich"] = _dulwich_reader(work)
    except ImportError:
        pass
    try:
        readers["pygit2"] = _pygit2_reader(work)
    except ImportError:
        pass
    out = {}
    for name, fn in readers.items():
        best = math.inf
        for _ in range(3):
            t = time.perf_counter()
            fn()
            best = min(best, time.perf_counter() - t)
        out[name] = round(best, 4)
    return out


def _dulwich_reader(work: Path) -> Callable[[], int]:
    from dulwich.object_store import iter_tree_contents
    from dulwich.repo import Repo

    def run() -> int:
        r = Repo(str(work))
        return sum(len(r.object_store[e.sha].data) for e in iter_tree_contents(r.object_store, r[r.head()].tree))
    return run


def _pygit2_reader(work: Path) -> Callable[[], int]:
    import pygit2

    def run() -> int:
        r = pygit2.Repository(str(work))
        stack, total = [r.head.peel().tree], 0
        while stack:
            for e in stack.pop():
                if e.type_str == "tree":
                    stack.append(r[e.id])
                else:
                    total += len(r[e.id].data)
        return total
    return run


def bench_git(source: Path, results: Path, libs: Path | None = None) -> dict[str, Any]:
    from ragcore.encoders.minilm import OnnxMiniLM
    from ragcore.engine.engine import Engine
    from ragcore.settings.config import RagcoreSettings

    with tempfile.TemporaryDirectory(prefix="ragcore-bench-git-") as tmp:
        work = Path(tmp) / "repo"
        files = build_repo(source, work)
        base = _git(work, "rev-parse", "HEAD")
        speed = read_speed(work, libs)
        engine = Engine(RagcoreSettings(data_dir=Path(tmp) / "data"), encoder=OnnxMiniLM())
        try:
            full = _timed(lambda: engine.ingest_ref(work, "main", "main"))
            changed = change_files(work, files, 0.01, "one-percent", rename_delete=True)
            again = _timed(lambda: engine.ingest_ref(work, "main", "main"))
            _git(work, "checkout", "-q", "-b", "other", base)
            branched = change_files(work, files, 0.05, "other-branch", rename_delete=False)
            other = _timed(lambda: engine.ingest_ref(work, "other", "other"))
        finally:
            engine.close()
    payload = _payload(source, files, speed, full, again, other, changed, branched)
    write(results, "git", payload, summary(payload))
    return payload


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    report = fn()
    return report, time.perf_counter() - t


def _row(timed: tuple[Any, float]) -> dict[str, Any]:
    r, wall = timed
    return {"wall_s": round(wall, 2), "files_read": len(r.outcomes) - r.count("removed"), "removed": r.count("removed"),
            "chunks_written": r.chunks_written, "chunks_embedded": r.chunks_embedded, "incremental": r.incremental,
            "skipped": len(r.skipped), "commit": r.source.get("commit")}


def _payload(source: Path, files: list[str], speed: dict[str, float], full, again, other, changed: int,
             branched: int) -> dict[str, Any]:
    f, a, o = _row(full), _row(again), _row(other)
    wall_ratio = a["wall_s"] / f["wall_s"]
    embed_ratio = o["chunks_embedded"] / max(1, f["chunks_embedded"])
    return {"format": 1, "when": utc_now(), "machine": machine(), "source": "/".join(source.parts[-2:]), "files": len(files),
            "read_speed_s": speed, "full": f, "reingest_1pct": {**a, "files_changed": changed},
            "second_branch_5pct": {**o, "files_changed": branched},
            "reingest_wall_ratio": round(wall_ratio, 4), "second_branch_embed_ratio": round(embed_ratio, 4),
            "targets_met": wall_ratio <= 0.10 and embed_ratio <= 0.10}


def summary(p: dict[str, Any]) -> str:
    f, a, o = p["full"], p["reingest_1pct"], p["second_branch_5pct"]
    speed = "\n".join(f"| {k} | {v * 1000:.0f} ms |" for k, v in p["read_speed_s"].items())
    return f"""# bench git ({p['when']})

A repository built from the source tree of the installed package folder `{p['source']}` ({p['files']:,} files,
committed in 4 commits, packed),
ingested with `Engine.ingest_ref` (the label-free calibration included, as `ragcore ingest --ref` runs it);
load average at the end {p['machine'].get('load_avg')} on {p['machine'].get('cpus')} CPUs.

Reading every blob of HEAD (best of 3):

| reader | time |
|---|---|
{speed}

| step | wall s | files read | removed | chunks written | chunks embedded | incremental |
|---|---|---|---|---|---|---|
| full ingest of `main` | {f['wall_s']} | {f['files_read']:,} | {f['removed']} | {f['chunks_written']:,} | {f['chunks_embedded']:,} | {f['incremental']} |
| re-ingest of `main` after a commit changing {a['files_changed']} files (1%, a rename and a delete among them) | {a['wall_s']} | {a['files_read']} | {a['removed']} | {a['chunks_written']} | {a['chunks_embedded']} | {a['incremental']} |
| branch `other` ({o['files_changed']} files changed, 5%) as a second collection | {o['wall_s']} | {o['files_read']:,} | {o['removed']} | {o['chunks_written']:,} | {o['chunks_embedded']:,} | {o['incremental']} |

Re-ingest wall time / full ingest: **{p['reingest_wall_ratio']:.3f}** (target ≤ 0.10).
Second branch's chunks embedded / the first's: **{p['second_branch_embed_ratio']:.3f}** (target ≤ 0.10).
Targets met: **{p['targets_met']}**. Reproduce: `ragcore bench git` from a checkout.
"""
