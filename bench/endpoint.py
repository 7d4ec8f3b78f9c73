"""``ragcore bench ingest --endpoint URL --model NAME``: ingest through an OpenAI-compatible embeddings
endpoint against the endpoint's own throughput on the same texts.

For the same files, alternating:

* **ragcore**: ``Engine.ingest`` with ``RAGCORE_EMBED_MODEL=openai:NAME`` into a fresh store (reading,
  chunking, embedding through the endpoint, BM25, writing, headings; no calibration), every text
  it sent recorded;
* **endpoint alone**: those very texts sent again, straight with httpx, in the same requests (the
  sizes ragcore's adaptive sizing chose), one after another: the server's own sequential
  throughput, nothing else done.

The ratio endpoint-alone seconds / ragcore seconds is the share of the endpoint's own throughput that
ragcore's ingest reaches (target ≥ 0.8): what ragcore adds around the endpoint (parsing, writing,
waiting on itself) is the rest.

With ``server_log`` (a llama.cpp server's log, ``bench/server_log.py``) the server's own computing
time during ragcore's ingest is read as well: server seconds / ragcore seconds is the same share,
measured in the same minutes (a replay afterwards meets whatever else the machine is doing then).
``replay=False`` skips the replay (on a slow CPU server it doubles the run).
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from ragcore.settings.config import RagcoreSettings

from bench.common import machine, sample_files, stage_sample, utc_now, write


def _recording(settings: RagcoreSettings, model: str):
    from ragcore.encoders.openai_embed import OpenAIEmbedder

    class RecordingEmbedder(OpenAIEmbedder):
        def _post(self, inputs, timeout):  # type: ignore[override]
            vecs = super()._post(inputs, timeout)
            self.sent.append(list(inputs))  # answered requests only: a timed-out one is sent again
            return vecs

    enc = RecordingEmbedder(model, base_url=settings.embed_base_url, api_key=settings.embed_api_key,
                    timeout_s=settings.embed_timeout_s, concurrency=settings.embed_concurrency,
                    batch=settings.embed_request_size)
    enc.sent = []
    return enc


def _run_ragcore(staging: Path, data_dir: Path, settings: RagcoreSettings, model: str) -> tuple[dict[str, Any], list[list[str]]]:
    from ragcore.engine.engine import Engine

    s = settings.with_(data_dir=data_dir, embed_model=f"openai:{model}")
    engine = Engine(s)
    enc = _recording(s, model)
    engine.encoders._by_key[(f"openai:{model}", "", "")] = enc  # this run's encoder records what it sends
    t0 = time.perf_counter()
    report = engine.ingest([staging], "bench", settings=s, calibrate=False)
    secs = time.perf_counter() - t0
    engine.close()
    sent = [g for g in enc.sent if g != ["dimension probe"]]
    texts = sum(map(len, sent))
    return {"seconds": round(secs, 2), "texts": texts, "texts_per_s": round(texts / secs, 1), "requests": len(sent),
            "chunks": report.chunks_written, "failed_files": report.count("failed"), "sustained": report.endpoint}, sent


def _run_direct(groups: Sequence[list[str]], settings: RagcoreSettings, model: str) -> dict[str, Any]:
    """The same requests with plain httpx, one at a time: the endpoint's own sequential speed."""
    import httpx

    headers = {"Authorization": f"Bearer {settings.embed_api_key}"} if settings.embed_api_key else {}
    url = settings.embed_base_url.rstrip("/") + "/embeddings"
    with httpx.Client(headers=headers, timeout=max(settings.embed_timeout_s, 600.0)) as client:
        def post(group: list[str]) -> int:
            r = client.post(url, json={"model": model, "input": group, "encoding_format": "float"})
            r.raise_for_status()
            return len(r.json()["data"])

        t0 = time.perf_counter()
        n = sum(post(g) for g in groups)
        secs = time.perf_counter() - t0
    return {"seconds": round(secs, 2), "texts": n, "texts_per_s": round(n / secs, 1), "requests": len(groups)}


@contextlib.contextmanager
def _scripted_server(ms: float) -> Iterator[str]:
    """The scripted embeddings server in a process of its own, as a real endpoint is: in this process it
    would wait on ragcore's GIL (parsing holds it) and slow both sides unequally."""
    proc = subprocess.Popen([sys.executable, "-m", "bench.support.scripted_embeddings", "--dim", "384", "--ms", str(ms)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parent.parent)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@contextlib.contextmanager
def busy_loops(n: int, niceness: int = 0) -> Iterator[None]:
    """``n`` processes spinning on a core each for the duration (a machine others are using), at
    ``niceness`` (a shared machine's other users may ask for niced loops)."""
    code = f"import os; os.nice({niceness})\nwhile True: pass"
    procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(n)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait(timeout=30)


def bench_endpoint(corpus: Path, limit: int | None, results_dir: Path, settings: RagcoreSettings, model: str,
                   runs: int = 2, server: str = "", scripted_ms: float | None = None, busy: int = 0,
                   busy_nice: int = 0, server_log: Path | None = None, replay: bool = True) -> dict[str, Any]:
    """``scripted_ms``: against the scripted protocol server on 127.0.0.1, taking that many milliseconds
    per text, one request at a time (ragcore's share measured without a real model server). ``busy``:
    busy loops running through both sides of every run, at niceness ``busy_nice``. ``server_log``: the
    llama.cpp server's log, for its busy time during each ingest; ``replay``: the endpoint-alone side."""
    if scripted_ms is not None:
        with _scripted_server(scripted_ms) as url:
            label = server or f"the scripted protocol server (its own process on 127.0.0.1) at {scripted_ms:g} ms per text, one request at a time"
            return bench_endpoint(corpus, limit, results_dir, settings.with_(embed_base_url=url), model, runs, label,
                                  busy=busy, busy_nice=busy_nice, server_log=server_log, replay=replay)

    if not settings.embed_base_url:
        raise SystemExit("bench ingest --endpoint needs the endpoint: --endpoint URL (or RAGCORE_EMBED_BASE_URL)")
    files = sample_files(corpus, limit)
    pairs = []
    with tempfile.TemporaryDirectory() as tmp, busy_loops(busy, busy_nice):
        staging = stage_sample(corpus, files, Path(tmp) / "corpus")
        for k in range(runs):
            pairs.append(_one_run(staging, Path(tmp) / f"data{k}", settings, model, server_log, replay))
    shares = [p["share_of_endpoint"] for p in pairs if "share_of_endpoint" in p]
    busy_shares = [p["share_of_server_busy"] for p in pairs if "share_of_server_busy" in p]
    payload = {"bench": "ingest-endpoint", "when": utc_now(), "machine": machine(), "corpus": str(corpus),
               "files": len(files), "model": model, "server": server, "request_size": settings.embed_request_size,
               "concurrency": settings.embed_concurrency, "busy_loops": busy, "busy_nice": busy_nice, "runs": pairs,
               "share_of_endpoint": round(statistics.median(shares), 3) if shares else None,
               "share_of_server_busy": round(statistics.median(busy_shares), 3) if busy_shares else None}
    write(results_dir, "ingest-endpoint", payload, summary(payload))
    return payload


def _one_run(staging: Path, data_dir: Path, settings: RagcoreSettings, model: str, server_log: Path | None,
             replay: bool) -> dict[str, Any]:
    from bench.server_log import busy_since, log_size

    start = log_size(server_log) if server_log else 0
    ours, sent = _run_ragcore(staging, data_dir, settings, model)
    run: dict[str, Any] = {"ragcore": ours}
    if server_log:
        busy = busy_since(server_log, start)
        run.update(server_busy=busy.as_dict(), share_of_server_busy=round(busy.seconds / ours["seconds"], 3))
    if replay:
        direct = _run_direct(sent, settings, model)
        run.update(endpoint_alone=direct, share_of_endpoint=round(direct["seconds"] / ours["seconds"], 3))
    return run


def summary(p: dict[str, Any]) -> str:
    rows = []
    for k, r in enumerate(p["runs"], 1):
        o = r["ragcore"]
        if o.get("sustained"):
            sus = o["sustained"]
            rows.append(f"| {k} | (ragcore's adaptive sizing ended at {sus['request_texts']} texts / ~{sus['request_tokens']:,} "
                        f"tokens a request, {sus['in_flight']} in flight, {sus['shrinks']} back-off(s)) | | | | |")
        rows.append(f"| {k} | ragcore ingest through the endpoint | {o['seconds']} | {o['texts']:,} | {o['texts_per_s']:,} | {o['requests']} |")
        if "server_busy" in r:
            b = r["server_busy"]
            rows += [f"| {k} | the server computing the replies ragcore received, same minutes (its log: {b['tokens']:,} "
                     f"tokens, {b['tokens_per_s']} tokens/s) | {b['seconds']} | | | {b['calls']} |",
                     f"| {k} | (and computing replies nobody received: requests that had timed out) "
                     f"| {b.get('abandoned_seconds', 0)} | | | {b.get('abandoned_calls', 0)} |",
                     f"| {k} | share of the server's own throughput (its time on what ragcore received / ragcore's) "
                     f"| **{r['share_of_server_busy']}** | | | |"]
        if "endpoint_alone" in r:
            d = r["endpoint_alone"]
            rows += [f"| {k} | the endpoint alone, same requests | {d['seconds']} | {d['texts']:,} | {d['texts_per_s']:,} | {d['requests']} |",
                     f"| {k} | share of the endpoint's throughput | **{r['share_of_endpoint']}** | | | |"]
    replay_how = ("; the endpoint alone gets exactly the requests ragcore sent, one after another, with plain httpx "
                  "(the server's own sequential throughput)")
    log_how = ("; the server's computing time is the sum of the times its log gives for the replies it delivered "
               "during ragcore's ingest (bench/server_log.py)")
    medians = "".join(f"\n\nMedian {what}: **{p[key]}** (target ≥ 0.8)." for key, what in
                      (("share_of_endpoint", "share of the endpoint's own throughput (replayed afterwards)"),
                       ("share_of_server_busy", "share of the server's own computing time (its log, the same minutes)"))
                      if p.get(key) is not None)
    return (f"# bench ingest --endpoint ({p['when']})\n\n{p['files']} files of {Path(p['corpus']).name}; model "
            f"`{p['model']}` served by {p['server'] or 'the endpoint given'}; ceilings of {p['request_size']} texts per "
            f"request and {p['concurrency']} in flight (requests are sized to the server); "
            f"{p.get('busy_loops', 0)} busy loop(s) (nice {p.get('busy_nice', 0)}) running throughout; load average at the end {p['machine']['load_avg']} on "
            f"{p['machine']['cpus']} CPUs.\n\n"
            "ragcore's seconds are the whole `Engine.ingest` (read, chunk, embed through the endpoint, BM25, write, "
            "headings; no calibration)" + (replay_how if any("endpoint_alone" in r for r in p["runs"]) else "")
            + (log_how if any("server_busy" in r for r in p["runs"]) else "") + ".\n\n"
            "| run | side | seconds | texts | texts/s | requests |\n|---|---|---|---|---|---|\n" + "\n".join(rows)
            + medians + "".join(f"\n\n{n}" for n in p.get("notes", ())) + "\n")
