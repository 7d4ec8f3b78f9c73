"""Where an ingest through an embeddings endpoint spends its wall time: one ``Engine.ingest`` of the
same files as ``ragcore bench ingest --endpoint scripted:MS``, with the stages timed as they run.

    PYTHONPATH=. python -m bench.endpoint_timeline --ms 10 --limit 40 [--json out.json]

Each stage is the wall time of one function (requests, file reads, store writes, the snapshot
publish ...), first start and last end since ``Engine(...)``; the endpoint's idle time is the wall
time during which no request was in flight (before the first, between, after the last). The stages
are timed by wrapping the functions of whichever checkout is imported, so the same command measures
the code before and after a change. A tool for finding the critical path, not a benchmark: run
``ragcore bench ingest --endpoint`` for the figures.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

from bench.common import DJANGO, sample_files, stage_sample

Event = tuple[str, float, float, str]  # stage, start s, end s, thread


def _wrap(owner: Any, attr: str, name: str, events: list[Event], t0: Callable[[], float]) -> None:
    fn = getattr(owner, attr, None)
    if fn is None:  # a stage the checkout does not have
        return

    @functools.wraps(fn)
    def timed(*a: Any, **k: Any) -> Any:
        start = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            events.append((name, start - t0(), time.perf_counter() - t0(), threading.current_thread().name))

    setattr(owner, attr, timed)


def _instrument(events: list[Event], t0: Callable[[], float]) -> None:
    import ragcore.ingest.batch_writer as pipeline
    import ragcore.ingest.run as writer
    import ragcore.storage.headings as headings
    import ragcore.storage.publisher as publisher
    import ragcore.storage.reads as reads
    import ragcore.storage.schema as schema
    import ragcore.storage.snapshot as snapshot
    import ragcore.storage.store as store
    from ragcore.encoders.openai_embed import OpenAIEmbedder

    stages = [(OpenAIEmbedder, "_post", "endpoint request"), (writer, "_ingest_file", "read + chunk a file"),
              (schema, "qdrant_models", "import qdrant-client models"), (pipeline, "warm_write_path", "writer start-up imports"),
              (store.Store, "ensure_collection", "create the collection"), (store.Store, "write_chunks", "store write (batch)"),
              (headings.HeadingStore, "put", "store headings (batch)"), (pipeline.BatchWriter, "flush", "wait for the last batches"),
              (store.Store, "write_meta", "metadata + snapshot publish"), (reads.PointReader, "load", "publish: read back"),
              (snapshot.SnapshotFiles, "publish", "publish: write files")]
    for owner, attr, name in stages:
        _wrap(owner, attr, name, events, t0)


def idle(events: list[Event], total: float) -> dict[str, float]:
    """Wall time with no request in flight: before the first, in gaps, after the last."""
    spans = sorted((a, b) for n, a, b, _ in events if n == "endpoint request")
    if not spans:
        return {"before_first": round(total, 2), "gaps": 0.0, "after_last": 0.0}
    gaps, end = 0.0, spans[0][1]
    for a, b in spans[1:]:
        gaps += max(0.0, a - end)
        end = max(end, b)
    return {"before_first": round(spans[0][0], 2), "gaps": round(gaps, 2), "after_last": round(total - end, 2)}


def timeline(ms: float, limit: int, corpus: Path) -> dict[str, Any]:
    from bench.endpoint import _recording, _scripted_server
    from ragcore.engine.engine import Engine
    from ragcore.settings.config import RagcoreSettings

    events: list[Event] = []
    start = [time.perf_counter()]
    _instrument(events, lambda: start[0])
    files = sample_files(corpus, limit)
    with _scripted_server(ms) as url, tempfile.TemporaryDirectory() as tmp:
        staging = stage_sample(corpus, files, Path(tmp) / "corpus")
        s = RagcoreSettings.from_env().with_(data_dir=Path(tmp) / "data", embed_model="openai:embed", embed_base_url=url)
        start[0] = time.perf_counter()
        engine = Engine(s)
        engine.encoders._by_key[("openai:embed", "", "")] = _recording(s, "embed")
        report = engine.ingest([staging], "bench", settings=s, calibrate=False)
        total = time.perf_counter() - start[0]
        engine.close()
    stages: dict[str, dict[str, float]] = defaultdict(lambda: {"calls": 0, "sum_s": 0.0, "first": 1e9, "last_end": 0.0})
    for name, a, b, _ in events:
        st = stages[name]
        st["calls"] += 1
        st["sum_s"] += b - a
        st["first"], st["last_end"] = min(st["first"], a), max(st["last_end"], b)
    return {"ms_per_text": ms, "files": len(files), "chunks": report.chunks_written, "total_s": round(total, 2),
            "load_avg": round(os.getloadavg()[0], 1), "endpoint_idle_s": idle(events, total),
            "stages": {n: {k: round(v, 2) for k, v in st.items()} for n, st in sorted(stages.items(), key=lambda x: x[1]["first"])},
            "events": [(n, round(a, 3), round(b, 3), th) for n, a, b, th in events]}


def summary(t: dict[str, Any]) -> str:
    rows = [f"| {n} | {st['calls']:g} | {st['sum_s']} | {st['first']} | {st['last_end']} |" for n, st in t["stages"].items()]
    i = t["endpoint_idle_s"]
    return (f"{t['files']} files, {t['chunks']} chunks, {t['ms_per_text']:g} ms per text: **{t['total_s']} s** "
            f"(load {t['load_avg']}); endpoint idle {i['before_first']} s before the first request, {i['gaps']} s "
            f"between requests, {i['after_last']} s after the last\n\n"
            "| stage | calls | sum of wall s | first start s | last end s |\n|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ms", type=float, default=10.0)
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--corpus", type=Path, default=DJANGO / "corpus")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    t = timeline(args.ms, args.limit or 0, args.corpus)
    if args.json:
        args.json.write_text(json.dumps(t, indent=1))
    print(summary(t))


if __name__ == "__main__":
    main()
