"""`ragcore bench serve`: what the HTTP transport of `ragcore serve` costs.

A collection of ``size`` chunks (copies of a real collection's, vectors included) is served by a
`ragcore serve` process on 127.0.0.1. ``clients`` threads send ``/api/retrieve`` and extractive
``/api/ask`` requests for ``seconds`` each; in the same run, the same number of threads call
``Engine.retrieve`` / ``Engine.ask`` in this process on the same collection: the difference is the
transport (HTTP, JSON, the event loop, the worker thread). The server runs with as many question
slots as there are clients, so neither side queues. A last phase sends twice as many clients to the
server at its default limits, where the only error allowed is 429. The server's RSS is read at
start (after a warm-up) and at the end.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from bench.common import DEFAULT_RESULTS, REPO, machine, pad_collection, pcts, questions, utc_now, write
from ragcore.settings.config import RagcoreSettings

ROUTES = ("/api/retrieve", "/api/ask")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def hammer(call: Callable[[str], int], qs: list[str], clients: int, seconds: float) -> dict[str, Any]:
    """``clients`` threads calling ``call(question)`` back to back for ``seconds``: rate, latency, statuses."""
    lat: list[float] = []
    codes: Counter[int] = Counter()
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def client(k: int) -> None:
        i = k
        while time.monotonic() < end:
            t = time.perf_counter()
            try:
                code = call(qs[i % len(qs)])
            except Exception:  # noqa: BLE001 - counted: the bench reports every failure
                code = -1
            ms = (time.perf_counter() - t) * 1e3
            with lock:
                codes[code] += 1
                if code == 200:
                    lat.append(ms)
            i += clients

    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    out = {"requests_per_s": round(codes[200] / wall, 2), "statuses": {str(k): v for k, v in sorted(codes.items())}}
    return {**out, **(pcts(lat) if lat else {"n": 0})}


def _server(data_dir: Path, port: int, env_extra: dict[str, str]) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGCORE_")}
    env.update(PYTHONPATH=str(REPO), RAGCORE_DATA_DIR=str(data_dir), RAGCORE_COLLECTION="bench", **env_extra)
    return subprocess.Popen([sys.executable, "-m", "ragcore.cli.main", "serve", "--port", str(port)], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_ready(url: str, proc: subprocess.Popen, timeout: float = 180) -> None:
    """Until the server at ``url`` answers /healthz (RuntimeError if it stops or takes too long)."""
    import httpx

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError("the server stopped while starting")
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError("the server did not start")


def bench_serve(source_collection: str, size: int, clients: int, seconds: float, n_questions: int, results_dir: Path,
                settings: RagcoreSettings) -> dict[str, Any]:
    import httpx

    from ragcore.encoders.minilm import OnnxMiniLM
    from ragcore.engine.engine import Engine
    from tests.support.scripted_openai import unused_port

    encoder = OnnxMiniLM()
    qs = questions()[:n_questions]
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        src = Engine(settings, encoder=encoder)
        if not src.store.exists(source_collection):
            raise SystemExit(f"no collection {source_collection!r} under {settings.store_path}; ingest one first")
        eng = Engine(RagcoreSettings(data_dir=data, collection="bench", calibrated_bar=False), encoder=encoder)
        n = pad_collection(src, source_collection, eng, "bench", size)
        src.close()
        port = unused_port()
        url = f"http://127.0.0.1:{port}"
        proc = _server(data, port, {"RAGCORE_SERVE_MAX_CONCURRENT": str(clients), "RAGCORE_SERVE_MAX_QUEUED": str(clients),
                                    "RAGCORE_CALIBRATED_BAR": "false"})
        try:
            wait_ready(url, proc)
            http = httpx.Client(base_url=url, timeout=120, limits=httpx.Limits(max_connections=clients * 2))
            calls = _calls(eng, http)
            for q in qs:  # both sides see every question once first: steady state, caches warm on both
                for call in calls.values():
                    call(q)
            rss_start = rss_mb(proc.pid)
            runs = {}
            for k in (1, clients):  # one client: the transport alone; many: the transport under contention
                for route in ROUTES:  # in process, then over HTTP, route by route: both feel the same machine load
                    for side in ("in_process", "http"):
                        runs[f"{side} {route} ×{k}"] = hammer(calls[(side, route)], qs, k, seconds)
            rss_end = rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        overload = _overload(data, qs, clients * 2, seconds / 2)
        eng.close()
    overhead = {f"{r} ×{k}": round(runs[f"http {r} ×{k}"]["p50_ms"] / runs[f"in_process {r} ×{k}"]["p50_ms"] - 1, 3)
                for k in (1, clients) for r in ROUTES}
    payload = {"bench": "serve", "when": utc_now(), "machine": machine(), "chunks": n, "clients": clients,
               "seconds_per_phase": seconds, "questions": len(qs), "runs": runs, "p50_overhead": overhead,
               "server_rss_mb": {"start": rss_start, "end": rss_end, "growth": round(rss_end / rss_start - 1, 3)},
               "overload": overload}
    write(results_dir, "serve", payload, summary(payload))
    return payload


def _calls(eng, http) -> dict[tuple[str, str], Callable[[str], int]]:
    def ok(_: Any) -> int:
        return 200

    return {
        ("in_process", "/api/retrieve"): lambda q: ok(eng.retrieve(q)),
        ("in_process", "/api/ask"): lambda q: ok(eng.ask(q)),
        ("http", "/api/retrieve"): lambda q: http.post("/api/retrieve", json={"question": q}).status_code,
        ("http", "/api/ask"): lambda q: http.post("/api/ask", json={"question": q, "generator": "extractive"}).status_code,
    }


def _overload(data: Path, qs: list[str], clients: int, seconds: float) -> dict[str, Any]:
    """Twice the clients against the default limits (4 running, 16 waiting): statuses seen."""
    import httpx

    from ragcore.settings.service import ServiceSettings
    from tests.support.scripted_openai import unused_port

    port = unused_port()
    url = f"http://127.0.0.1:{port}"
    proc = _server(data, port, {"RAGCORE_CALIBRATED_BAR": "false"})
    try:
        wait_ready(url, proc)
        http = httpx.Client(base_url=url, timeout=120, limits=httpx.Limits(max_connections=clients * 2))
        out = hammer(lambda q: http.post("/api/ask", json={"question": q, "generator": "extractive"}).status_code,
                     qs, clients, seconds)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    d = ServiceSettings()
    return {"clients": clients, "limits": {"max_concurrent": d.max_concurrent, "max_queued": d.max_queued}, **out}


def summary(p: dict[str, Any]) -> str:
    rows = "\n".join(f"| {name} | {r['requests_per_s']} | {r.get('p50_ms')} | {r.get('p95_ms')} | {r['statuses']} |"
                     for name, r in p["runs"].items())
    o = p["overload"]
    return (
        f"# bench serve ({p['when']})\n\n{p['chunks']} chunks, {p['clients']} concurrent clients on 127.0.0.1, "
        f"{p['seconds_per_phase']} s per phase (×1: one client; ×{p['clients']}: all of them), {p['questions']} questions (each asked once on both sides before "
        f"timing). Machine: {p['machine']['cpus']} CPUs, load {p['machine']['load_avg']}.\n\n"
        f"| side route | req/s | p50 ms | p95 ms | statuses |\n|---|---|---|---|---|\n{rows}\n\n"
        f"Transport overhead at p50 (HTTP / in process − 1): "
        + ", ".join(f"{k} {v:+.1%}" for k, v in p["p50_overhead"].items()) + ".\n\n"
        f"Server RSS: {p['server_rss_mb']['start']} MB after warm-up, {p['server_rss_mb']['end']} MB at the end "
        f"({p['server_rss_mb']['growth']:+.1%}).\n\n"
        f"Overload: {o['clients']} clients against the default limits ({o['limits']['max_concurrent']} running, "
        f"{o['limits']['max_queued']} waiting) for {p['seconds_per_phase'] / 2:g} s: statuses {o['statuses']}."
    )


def add_serve_parser(bsub: argparse._SubParsersAction) -> None:
    b = bsub.add_parser("serve", help="`ragcore serve` req/s and p50/p95 vs the same calls in process; RSS; 429 under overload")
    b.add_argument("--collection", default="guide", help="collection whose vectors are copied up to --size")
    b.add_argument("--size", type=int, default=10_000)
    b.add_argument("--clients", type=int, default=16)
    b.add_argument("--seconds", type=float, default=20.0, help="per phase (8 phases, then an overload phase of half)")
    b.add_argument("--questions", type=int, default=64)
    b.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    b.set_defaults(func=_cmd_serve)


def _cmd_serve(args: argparse.Namespace) -> int:
    from ragcore.cli.common import settings_from_args

    out = bench_serve(args.collection, args.size, args.clients, args.seconds, args.questions, args.results,
                      settings_from_args(args))
    print(summary(out))
    return 0
