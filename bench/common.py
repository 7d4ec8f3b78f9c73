"""What every `ragcore bench` command shares: where results go, the machine they ran on, the
sample of files and the questions they time (cli.py and scale.py both use them)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ragcore.eval.sweep import machine  # noqa: F401  (one description of the machine for eval and bench results)

REPO = Path(__file__).resolve().parent.parent
DEFAULT_RESULTS = REPO / "bench" / "results"
DJANGO = REPO.parent / "shared" / "data" / "django-docs-qa"


def utc_now() -> str:
    from ragcore.storage.store import utc_now as now  # lazily: the store imports Qdrant's client, `ragcore --help` need not

    return now()


def pcts(ms: Sequence[float]) -> dict[str, float]:
    a = np.asarray(ms, dtype=float)
    return {"p50_ms": round(float(np.percentile(a, 50)), 2), "p95_ms": round(float(np.percentile(a, 95)), 2),
            "mean_ms": round(float(a.mean()), 2), "n": int(a.size)}




def write(results_dir: Path, name: str, payload: dict[str, Any], summary: str) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n")
    (results_dir / f"{name}.md").write_text(summary + "\n")
    return path


def sample_files(corpus: Path, limit: int | None) -> list[Path]:
    from ragcore.ingest.read.loaders import kind_for

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
        qs = [line.strip("# ").strip() + "?" for f in sorted((REPO / "demo").glob("*.md"))
              for line in f.read_text().splitlines() if line.startswith("## ")]
    return qs


def pad_collection(src_engine, src: str, dest_engine, dest: str, size: int) -> int:
    """Copy ``src``'s points (vectors included, no re-embedding) into ``dest`` until it holds
    ``size`` chunks; copies get their own ids and a ``copyN/`` path prefix."""
    from dataclasses import replace

    from ragcore.ingest.chunking import chunk_id

    with src_engine.store.session(write=False):  # embedded Qdrant opened once for both reads
        data = src_engine.store.load(src)
        texts = sorted({t.strip() for c in data.chunks for t in (*c.section, c.title or "") if t and t.strip()})
        headings = src_engine.store.heading_vectors(texts)  # so the copy's topic index needs no embedding
    with dest_engine.store.session():  # one write session: embedded Qdrant is opened once
        dest_engine.store.ensure_collection(dest)
        if headings:
            dest_engine.store.write_heading_vectors(list(headings), np.stack(list(headings.values())))
        n, k = 0, 0
        while n < size:
            take = min(size - n, len(data.chunks))
            prefix = f"copy{k}/" if k else ""
            chunks = [replace(c, path=prefix + c.path, chunk_id=chunk_id(prefix + c.path, c.start_line, c.end_line, c.text))
                      for c in data.chunks[:take]]
            counts: dict[str, int] = {}
            for c in chunks:
                counts[c.path] = counts.get(c.path, 0) + 1
            for i in range(0, take, 512):
                dest_engine.store.write_chunks(dest, chunks[i : i + 512], data.dense[i : i + 512], counts)
            n += take
            k += 1
        dest_engine.store.write_meta(dest, {"corpus_version": uuid.uuid4().hex[:16], "built_at": "bench", "documents": 0})
    return n


def stage_sample(corpus: Path, files: list[Path], staging: Path) -> Path:
    """A copy of the sample, so both sides read exactly these files."""
    for f in files:
        dest = staging / f.relative_to(corpus)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(f.read_bytes())
    return staging
