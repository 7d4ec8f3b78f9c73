"""`ragcore bench writes`: how fast chunks get into embedded Qdrant, the store of record.

Qdrant's local mode commits every point in its own SQLite transaction, so its journal decides
the write rate. This writes the same batch of chunks (copies of a real collection's, vectors
included: no embedding is timed) into a collection of ``size`` points, alternating SQLite's
default rollback journal with the write-ahead log ragcore uses (local_storage.py), pair by pair
in one process, and reports points/s and the ratio of each pair.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from .bench_common import machine, pad_collection, utc_now, write
from .config import RagcoreSettings

MODES = ("rollback journal", "write-ahead log")


def bench_writes(source_collection: str, size: int, batch: int, runs: int, results_dir: Path,
                 settings: RagcoreSettings) -> dict[str, Any]:
    from .embeddings import OnnxMiniLM
    from .pipeline import Engine

    encoder = OnnxMiniLM()  # never run: the chunks are copied with their vectors
    src = Engine(settings, encoder=encoder)
    if not src.store.exists(source_collection):
        raise SystemExit(f"no collection {source_collection!r} under {settings.qdrant_path}")
    data = src.store.load(source_collection)
    src.close()
    base, dense = list(data.chunks[:batch]), data.dense[:batch]
    secs: dict[str, list[float]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        dest = Engine(RagcoreSettings(data_dir=Path(tmp), snapshots=False), encoder=encoder)
        n = pad_collection(src, source_collection, dest, "bench", size)
        with dest.store.session() as client:
            for run in range(runs):
                for mode in MODES:  # alternated, so both feel the same machine load
                    secs[mode].append(_timed_write(dest.store, client, mode, base, dense, f"w{run}-{len(secs[mode])}-{mode[0]}"))
        dest.close()
    payload = {
        "bench": "writes", "when": utc_now(), "machine": machine(), "source_collection": source_collection,
        "collection_points": n, "batch_points": len(base), "runs": runs,
        "seconds": {m: [round(x, 3) for x in v] for m, v in secs.items()},
        "points_per_s_median": {m: round(len(base) / statistics.median(v), 1) for m, v in secs.items()},
        "ratio_per_pair": [round(a / b, 2) for a, b in zip(secs[MODES[0]], secs[MODES[1]])],
    }
    write(results_dir, "writes", payload, summary(payload))
    return payload


def _timed_write(store: Any, client: Any, mode: str, base: list, dense: Any, prefix: str) -> float:
    from .ingest.chunking import chunk_id
    from .local_storage import use_write_ahead_log

    use_write_ahead_log(client, on=mode == MODES[1])
    chunks = [replace(c, path=f"{prefix}/{c.path}", chunk_id=chunk_id(f"{prefix}/{c.path}", c.start_line, c.end_line, c.text))
              for c in base]
    counts: dict[str, int] = {}
    for c in chunks:
        counts[c.path] = counts.get(c.path, 0) + 1
    t = time.perf_counter()
    store.write_chunks("bench", chunks, dense, counts)
    return time.perf_counter() - t


def summary(p: dict[str, Any]) -> str:
    pps, secs = p["points_per_s_median"], p["seconds"]
    rows = "\n".join(f"| {m} | {pps[m]} | {secs[m]} |" for m in MODES)
    ratios = p["ratio_per_pair"]
    return (
        f"## Writes into embedded Qdrant ({p['when']}, `ragcore bench writes`)\n\n"
        f"{p['batch_points']} chunks (copies of '{p['source_collection']}', with their vectors and BM25 sparse vectors) "
        f"written through `QdrantVectorStore` into a local-mode collection of {p['collection_points']:,} points, "
        f"{p['runs']} alternated pairs in one process; load average at the start {p['machine']['load_avg']}.\n\n"
        f"| SQLite journal | points/s (median) | seconds per batch |\n|---|---|---|\n{rows}\n\n"
        f"Rollback journal ÷ write-ahead log, seconds pair by pair: {ratios} "
        f"(median {statistics.median(ratios):.2f}×)."
    )
