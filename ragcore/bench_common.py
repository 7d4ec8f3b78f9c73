"""What every `ragcore bench` command shares: where results go, the machine they ran on, the
sample of files and the questions they time (bench.py and bench_scale.py both use them)."""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any, Sequence

import numpy as np

REPO = Path(__file__).resolve().parent.parent
DEFAULT_RESULTS = REPO / "bench" / "results"
DJANGO = REPO.parent / "shared" / "data" / "django-docs-qa"


def utc_now() -> str:
    from .store import utc_now as now  # lazily: the store imports Qdrant's client, `ragcore --help` need not

    return now()


def pcts(ms: Sequence[float]) -> dict[str, float]:
    a = np.asarray(ms, dtype=float)
    return {"p50_ms": round(float(np.percentile(a, 50)), 2), "p95_ms": round(float(np.percentile(a, 95)), 2),
            "mean_ms": round(float(a.mean()), 2), "n": int(a.size)}


def machine() -> dict[str, Any]:
    import os

    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
            "load_avg": [round(x, 2) for x in os.getloadavg()]}


def write(results_dir: Path, name: str, payload: dict[str, Any], summary: str) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n")
    (results_dir / f"{name}.md").write_text(summary + "\n")
    return path


def sample_files(corpus: Path, limit: int | None) -> list[Path]:
    from .ingest.loaders import kind_for

    files = sorted(p for p in corpus.rglob("*") if p.is_file() and kind_for(p) is not None)
    if limit and len(files) > limit:
        step = len(files) / limit
        files = [files[int(i * step)] for i in range(limit)]
    return files


def questions() -> list[str]:
    qs: list[str] = []
    for name in ("questions.jsonl", "unanswerable.jsonl"):
        p = DJANGO / name
        if p.is_file():
            qs += [json.loads(line)["question"] for line in p.read_text().splitlines() if line.strip()]
    if not qs:
        qs = [line.strip("# ").strip() + "?" for f in sorted((REPO / "docs").glob("*.md"))
              for line in f.read_text().splitlines() if line.startswith("## ")]
    return qs
