"""`ragcore bench serve`: what the HTTP transport of `ragcore serve` costs.

A collection of ``size`` chunks (copies of a real collection's, vectors included) is served by a
`ragcore serve` process on 127.0.0.1. ``clients`` threads send ``/api/retrieve`` and extractive
``/api/ask`` requests; in the same run, the same number of threads make the same calls in this
process on the same collection. Both sides do the same work: the engine's call, then the JSON the
service sends (``wire.json_bytes``, the same bytes), so the difference is the transport alone (HTTP
on loopback, the event loop, the hop to the worker thread, the client reading the reply). What
writing the JSON costs is reported on its own line. The sides alternate in ``rounds`` short slices,
so a change in the machine's load falls on both. The HTTP client is the standard library's
``http.client`` with one kept-alive connection per client thread (httpx's own overhead, ~1 ms of
CPU and ~3 ms of wall time per request here, is the client's, not the service's); a ``/healthz``
round trip is the floor. The server runs with as many question slots as there are clients, so
neither side queues. A last phase sends twice as many clients to the server at its default limits,
where the only error allowed is 429. The server's RSS is read at start (after a warm-up) and at
the end.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from bench.common import REPO, machine, pad_collection, pcts, questions, utc_now, write
from ragcore.settings.config import RagcoreSettings

ROUTES = ("/api/retrieve", "/api/ask")
SIDES = ("in_process", "http")
NOTES = "<!-- notes below: kept when the bench rewrites this file -->"


def body(route: str, q: str) -> dict[str, Any]:
    return {"question": q, "generator": "extractive"} if route == "/api/ask" else {"question": q}


def processes(pid: int) -> list[int]:
    """``pid`` and its descendants (`ragcore serve --workers N` serves from child processes)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            todo += [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except OSError:  # it ended meanwhile
            pass
    return out


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its descendants."""
    kb = 0
    for p in processes(pid):
        try:
            kb += next(int(line.split()[1]) for line in Path(f"/proc/{p}/status").read_text().splitlines()
                       if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            pass
    return round(kb / 1024, 1)


class Conn:
    """One kept-alive HTTP/1.1 connection to the server (each client thread has its own)."""

    def __init__(self, port: int) -> None:
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def request(self, method: str, path: str, payload: dict[str, Any] | None = None) -> int:
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        self.http.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        reply = self.http.getresponse()
        reply.read()  # the whole reply, as a client that uses it would
        return reply.status

    def close(self) -> None:
        self.http.close()


def hammer(make_call: Callable[[], Callable[[str], int]], qs: list[str], clients: int, seconds: float,
           start: int = 0) -> dict[str, Any]:
    """``clients`` threads, each with its own ``make_call()``, calling it back to back for
    ``seconds``: latencies of the 200s, every status (-1: an exception), wall time."""
    lat: list[float] = []
    codes: Counter[int] = Counter()
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def client(k: int) -> None:
        call = make_call()
        i = start + k
        try:
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
        finally:
            getattr(call, "close", lambda: None)()

    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"lat": lat, "codes": codes, "wall": time.monotonic() - t0}


def merged(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Slices of one side and route pooled: rate, percentiles, statuses."""
    lat = [x for p in parts for x in p["lat"]]
    codes = sum((p["codes"] for p in parts), Counter())
    wall = sum(p["wall"] for p in parts)
    out = {"requests_per_s": round(codes[200] / wall, 2), "statuses": {str(k): v for k, v in sorted(codes.items())}}
    if all("cpu" in p for p in parts) and codes[200]:
        out["cpu_ms_per_request"] = round(sum(p["cpu"] for p in parts) / sum(codes.values()) * 1e3, 2)
    if all("loop_cpu" in p for p in parts) and codes[200]:
        out["loop_cpu_ms_per_request"] = round(sum(p["loop_cpu"] for p in parts) / sum(codes.values()) * 1e3, 3)
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


def _calls(eng, port: int) -> dict[tuple[str, str], Callable[[], Callable[[str], int]]]:
    """Per side and route, what makes one client thread's call (the same JSON bytes on both sides)."""
    from ragcore.service.wire import json_bytes

    def in_process(route: str) -> Callable[[], Callable[[str], int]]:
        return lambda: lambda q: 200 if json_bytes((eng.retrieve if route == "/api/retrieve" else eng.ask)(q)) else 0

    def over_http(route: str) -> Callable[[], Callable[[str], int]]:
        def make() -> Callable[[str], int]:
            conn = Conn(port)
            call = lambda q: conn.request("POST", route, body(route, q))  # noqa: E731
            call.close = conn.close  # type: ignore[attr-defined]
            return call
        return make

    return {**{("in_process", r): in_process(r) for r in ROUTES}, **{("http", r): over_http(r) for r in ROUTES}}


def _serialisation(eng, qs: list[str]) -> dict[str, Any]:
    """What writing the reply's JSON costs (p50 ms, one thread) and how large it is: part of both sides."""
    from ragcore.service.wire import json_bytes

    out = {}
    for route, work in (("/api/retrieve", eng.retrieve), ("/api/ask", eng.ask)):
        ms, size = [], []
        for q in qs:
            obj = work(q)
            t = time.perf_counter()
            size.append(len(json_bytes(obj)))
            ms.append((time.perf_counter() - t) * 1e3)
        out[route] = {"json_p50_ms": pcts(ms)["p50_ms"], "kb_p50": round(sorted(size)[len(size) // 2] / 1024, 1)}
    return out


def _floor(port: int, n: int = 200) -> float:
    """p50 ms of a /healthz round trip (one connection): HTTP on loopback with no work behind it."""
    conn = Conn(port)
    ms = []
    for _ in range(n):
        t = time.perf_counter()
        conn.request("GET", "/healthz")
        ms.append((time.perf_counter() - t) * 1e3)
    conn.close()
    return pcts(ms)["p50_ms"]


def cpu_s(pid: int, thread: int | None = None) -> float:
    """CPU seconds (user + system) process ``pid`` has used: every thread, or only ``thread``
    (the server's event loop runs in its main thread, whose id is the process id)."""
    stat = Path(f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat")
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except OSError:  # a process that ended meanwhile
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_cpu_s(pid: int) -> tuple[float, float]:
    """CPU seconds of the server (its processes, every thread) and of its event loops (their
    main threads; with --workers N the supervisor's main thread is counted too, and is idle)."""
    procs = processes(pid)
    return sum(cpu_s(p) for p in procs), sum(cpu_s(p, p) for p in procs)


def _measure(calls, qs: list[str], clients: int, seconds: float, rounds: int, server_pid: int) -> dict[str, Any]:
    """Every side × route × client count, in ``rounds`` slices of ``seconds / rounds`` with the
    sides' order flipped each round (ABBA), so drifting machine load falls on both sides alike.
    Each slice also counts the CPU time spent (this process, plus the server's for HTTP): unlike
    wall time, it hardly moves with the load the other tenants of the machine put on it."""
    slices: dict[str, list[dict[str, Any]]] = {}
    for k in (1, clients):  # one client: the transport alone; many: the transport under contention
        for route in ROUTES:
            for r in range(rounds):
                for side in (SIDES if r % 2 == 0 else SIDES[::-1]):
                    c0, (s0, l0) = cpu_s(os.getpid()), server_cpu_s(server_pid)
                    part = hammer(calls[(side, route)], qs, k, seconds / rounds, start=r * k)
                    s1, l1 = server_cpu_s(server_pid)
                    part["cpu"] = cpu_s(os.getpid()) - c0 + (s1 - s0 if side == "http" else 0.0)
                    if side == "http":  # the event loop's share: the part of the transport that holds the server's GIL
                        part["loop_cpu"] = l1 - l0
                    slices.setdefault(f"{side} {route} ×{k}", []).append(part)
    return {name: merged(parts) for name, parts in slices.items()}


def _collection(source_collection: str, size: int, settings: RagcoreSettings, data: Path, encoder):
    """An engine over ``data`` holding the ``bench`` collection of ``size`` chunks (built unless
    ``data`` already holds one: ``--data`` keeps it between runs)."""
    from ragcore.engine.engine import Engine

    eng = Engine(RagcoreSettings(data_dir=data, collection="bench", calibrated_bar=False), encoder=encoder)
    if eng.store.exists("bench"):
        # a copied folder (cp -a gives the stamp file a new inode) has a stale snapshot: every read
        # would then open Qdrant, both processes taking turns at its lock (~100 ms a retrieval)
        eng.repair_snapshots("bench")
        return eng, eng.store.count("bench")
    src = Engine(settings, encoder=encoder)
    if not src.store.exists(source_collection):
        raise SystemExit(f"no collection {source_collection!r} under {settings.store_path}; ingest one first")
    n = pad_collection(src, source_collection, eng, "bench", size)
    src.close()
    return eng, n


def bench_serve(source_collection: str, size: int, clients: int, seconds: float, n_questions: int, results_dir: Path,
                settings: RagcoreSettings, rounds: int = 4, data_dir: Path | None = None,
                server_workers: int = 1, server_running: int | None = None) -> dict[str, Any]:
    from ragcore.encoders.minilm import OnnxMiniLM
    from ragcore.settings.service import ServiceSettings
    from bench.support.scripted_openai import unused_port

    qs = questions()[:n_questions]
    with tempfile.TemporaryDirectory() as tmp:
        data = data_dir or Path(tmp)
        eng, n = _collection(source_collection, size, settings, data, OnnxMiniLM())
        port = unused_port()
        # the server's own limit on questions answered at once, as shipped unless --server-running
        # says otherwise; the queue holds every other client, so none gets a 429
        running = server_running or ServiceSettings().max_concurrent
        proc = _server(data, port, {"RAGCORE_SERVE_MAX_CONCURRENT": str(running), "RAGCORE_SERVE_MAX_QUEUED": str(clients),
                                    "RAGCORE_CALIBRATED_BAR": "false", "RAGCORE_SERVE_WORKERS": str(server_workers)})
        load_start = machine()["load_avg"]
        try:
            wait_ready(f"http://127.0.0.1:{port}", proc)
            calls = _calls(eng, port)
            for route in ROUTES:  # both sides see every question once first: steady state, caches warm on both
                for side in SIDES:
                    call = calls[(side, route)]()
                    for q in qs:
                        call(q)
                    getattr(call, "close", lambda: None)()
                if server_workers > 1:  # one connection reached one worker: the others see the questions too
                    hammer(calls[("http", route)], qs, clients, 4.0)
            rss_start = rss_mb(proc.pid)
            floor = _floor(port)
            runs = _measure(calls, qs, clients, seconds, rounds, proc.pid)
            rss_end = rss_mb(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        overload = _overload(data, qs, clients * 2, seconds / 2)
        serialisation = _serialisation(eng, qs[:32])
        eng.close()
    overhead, cpu_overhead = ({f"{r} ×{k}": round(runs[f"http {r} ×{k}"][key] / runs[f"in_process {r} ×{k}"][key] - 1, 3)
                               for k in (1, clients) for r in ROUTES} for key in ("p50_ms", "cpu_ms_per_request"))
    payload = {"bench": "serve", "when": utc_now(), "machine": machine(), "load_avg_start": load_start, "chunks": n,
               "clients": clients, "server_workers": server_workers, "server_running": running, "seconds_per_phase": seconds, "rounds": rounds, "questions": len(qs), "runs": runs,
               "p50_overhead": overhead, "cpu_overhead": cpu_overhead, "healthz_p50_ms": floor, "serialisation": serialisation,
               "server_rss_mb": {"start": rss_start, "end": rss_end, "growth": round(rss_end / rss_start - 1, 3)},
               "overload": overload}
    write(results_dir, "serve", payload, summary(payload) + notes(results_dir / "serve.md"))
    return payload


def _overload(data: Path, qs: list[str], clients: int, seconds: float) -> dict[str, Any]:
    """Twice the clients against the default limits (4 running, 16 waiting): statuses seen."""
    from ragcore.settings.service import ServiceSettings
    from bench.support.scripted_openai import unused_port

    port = unused_port()
    proc = _server(data, port, {"RAGCORE_CALIBRATED_BAR": "false"})
    try:
        wait_ready(f"http://127.0.0.1:{port}", proc)
        calls = _calls(None, port)
        out = merged([hammer(calls[("http", "/api/ask")], qs, clients, seconds)])
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    d = ServiceSettings()
    return {"clients": clients, "limits": {"max_concurrent": d.max_concurrent, "max_queued": d.max_queued}, **out}


def summary(p: dict[str, Any]) -> str:
    rows = "\n".join(f"| {name} | {r['requests_per_s']} | {r.get('p50_ms')} | {r.get('mean_ms')} | {r.get('p95_ms')} | "
                     f"{r.get('cpu_ms_per_request')} | {r.get('loop_cpu_ms_per_request', '–')} | {r['statuses']} |"
                     for name, r in p["runs"].items())
    o = p["overload"]
    ser = "; ".join(f"{route} {s['json_p50_ms']} ms for {s['kb_p50']} KB" for route, s in p["serialisation"].items())
    return (
        f"# bench serve ({p['when']})\n\n{p['chunks']} chunks, {p['clients']} concurrent clients on 127.0.0.1, "
        f"{p['seconds_per_phase']} s per side and phase in {p['rounds']} alternated slices (×1: one client; "
        f"×{p['clients']}: all of them), {p['questions']} questions (each asked once on both sides before timing). "
        f"Both sides write the reply's JSON (the same bytes); HTTP through `http.client`, one kept-alive "
        f"connection per client; the server answers {p.get('server_running', p['clients'])} at once and queues the rest{_workers_note(p)}. Machine: {p['machine']['cpus']} CPUs, load {p['load_avg_start']} at the start, "
        f"{p['machine']['load_avg']} at the end.\n\n"
        f"| side route | req/s | p50 ms | mean ms | p95 ms | CPU ms/request | server event loop CPU ms/request | statuses |\n"
        f"|---|---|---|---|---|---|---|---|\n{rows}\n\n"
        f"Transport overhead at p50 (HTTP / in process − 1): "
        + ", ".join(f"{k} {v:+.1%}" for k, v in p["p50_overhead"].items()) + ".\n\n"
        f"Transport overhead in CPU time per request (server + client / in process − 1): "
        + ", ".join(f"{k} {v:+.1%}" for k, v in p["cpu_overhead"].items()) + ".\n\n"
        f"Floor: a `/healthz` round trip, p50 {p['healthz_p50_ms']} ms. Writing the reply's JSON (both sides, "
        f"one thread, p50): {ser}.\n\n"
        f"Server RSS: {p['server_rss_mb']['start']} MB after warm-up, {p['server_rss_mb']['end']} MB at the end "
        f"({p['server_rss_mb']['growth']:+.1%}).\n\n"
        f"Overload: {o['clients']} clients against the default limits ({o['limits']['max_concurrent']} running, "
        f"{o['limits']['max_queued']} waiting) for {p['seconds_per_phase'] / 2:g} s: statuses {o['statuses']}."
    )


def _workers_note(p: dict[str, Any]) -> str:
    n = p.get("server_workers", 1)
    return "" if n == 1 else (f"; the server runs **{n} worker processes** (`--workers {n}`) against one process on the "
                              "in-process side, so HTTP / in process compares two set-ups, not the transport alone")


def notes(md: Path) -> str:
    """The hand-written notes (before/after, analysis) below ``NOTES`` in the previous ``md``: a
    new run replaces the figures above them, not them."""
    text = md.read_text() if md.is_file() else ""
    return "\n\n" + text[text.index(NOTES):].rstrip() if NOTES in text else ""
