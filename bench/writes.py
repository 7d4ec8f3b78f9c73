"""`ragcore bench writes`: how fast chunks get into the embedded store of record.

The same batch of chunks (copies of a real collection's, vectors included: no embedding is timed)
is written through ``Store.write_chunks`` into a collection of ``size`` points, in three stores
alternated run by run in one process: qdrant-client's local mode with SQLite's default rollback
journal, local mode with the write-ahead log it used (local_storage.py; local mode commits every
point in its own SQLite transaction, so the journal decides its rate), and Qdrant Edge, the
embedded default (edge_client.py). Reports points/s per store and the ratios of each run.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.common import machine, pad_collection, utc_now, write
from ragcore.settings.config import RagcoreSettings

MODES = ("local mode, rollback journal", "local mode, write-ahead log", "Qdrant Edge")


def bench_writes(source_collection: str, size: int, batch: int, runs: int, results_dir: Path,
                 settings: RagcoreSettings) -> dict[str, Any]:
    from ragcore.encoders.minilm import OnnxMiniLM
    from ragcore.engine.engine import Engine

    encoder = OnnxMiniLM()  # never run: the chunks are copied with their vectors
    src = Engine(settings, encoder=encoder)
    if not src.store.exists(source_collection):
        raise SystemExit(f"no collection {source_collection!r} under {settings.store_path}")
    data = src.store.load(source_collection)
    base, dense = list(data.chunks[:batch]), data.dense[:batch]
    secs: dict[str, list[float]] = {m: [] for m in MODES}
    with tempfile.TemporaryDirectory() as tmp:
        dests = {engine: Engine(RagcoreSettings(data_dir=Path(tmp) / engine, snapshots=False, embedded_engine=engine),
                                encoder=encoder) for engine in ("local", "edge")}
        n = 0
        for dest in dests.values():
            n = pad_collection(src, source_collection, dest, "bench", size)
        src.close()
        with dests["local"].store.session() as local, dests["edge"].store.session():
            for run in range(runs):
                for mode in MODES:  # alternated, so all three feel the same machine load
                    store = dests["edge" if mode == MODES[2] else "local"].store
                    secs[mode].append(_timed_write(store, local, mode, base, dense, f"w{run}-{len(secs[mode])}-{MODES.index(mode)}"))
        for dest in dests.values():
            dest.close()
    payload = {
        "bench": "writes", "when": utc_now(), "machine": machine(), "source_collection": source_collection,
        "collection_points": n, "batch_points": len(base), "runs": runs,
        "seconds": {m: [round(x, 3) for x in v] for m, v in secs.items()},
        "points_per_s_median": {m: round(len(base) / statistics.median(v), 1) for m, v in secs.items()},
        "ratio_per_pair": [round(a / b, 2) for a, b in zip(secs[MODES[0]], secs[MODES[1]])],
        "edge_ratio_per_run": [round(a / b, 2) for a, b in zip(secs[MODES[1]], secs[MODES[2]])],
    }
    write(results_dir, "writes", payload, summary(payload))
    return payload


def _timed_write(store: Any, local_client: Any, mode: str, base: list, dense: Any, prefix: str) -> float:
    from ragcore.ingest.chunking import chunk_id
    from ragcore.storage.local_storage import use_write_ahead_log

    if mode != MODES[2]:
        use_write_ahead_log(local_client, on=mode == MODES[1])
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
    rows = "\n".join(f"| {m} | {pps[m]} | {secs[m]} |" for m in MODES if m in pps)
    ratios, edge = p["ratio_per_pair"], p.get("edge_ratio_per_run") or []
    edge_line = (f" Local mode with the write-ahead log ÷ Qdrant Edge, run by run: {edge} "
                 f"(median {statistics.median(edge):.2f}×)." if edge else "")
    return (
        f"## Writes into the embedded store of record ({p['when']}, `ragcore bench writes`)\n\n"
        f"{p['batch_points']} chunks (copies of '{p['source_collection']}', with their vectors and BM25 sparse vectors) "
        f"written through `Store.write_chunks` into a collection of {p['collection_points']:,} points in each store "
        f"(local mode through LlamaIndex's `QdrantVectorStore`, Qdrant Edge with the same payload), "
        f"{p['runs']} alternated runs in one process; load average at the start {p['machine']['load_avg']}.\n\n"
        f"| store | points/s (median) | seconds per batch |\n|---|---|---|\n{rows}\n\n"
        f"Rollback journal ÷ write-ahead log, seconds run by run: {ratios} "
        f"(median {statistics.median(ratios):.2f}×).{edge_line}"
    )
