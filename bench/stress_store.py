"""`ragcore bench stress`: many processes on one embedded store, for minutes, counting every error.

Issue 39 found, while other processes used the store: a collection without a query snapshot
answering "empty or does not exist" (274 of 281 asks), a CLI ingest beside readers failing after
its 15 s wait, and "failed to open WAL … WouldBlock". This runs, against one data folder on
127.0.0.1 only, for ``minutes``:

* two `ragcore serve` processes, each asked by ``clients`` threads in turn: ``/api/ask`` on a
  collection with a snapshot ("snap") and on one without ("nosnap": it is read from Qdrant, so
  each question takes the store's lock), ``/api/collections`` and ``/v1/models``;
* ``cli_readers`` threads running `ragcore ask --json` (on both collections) and `ragcore collections --json`;
* one writer running `ragcore ingest` into "writes", a file changed each round (so every round writes).

An error is any reply other than 200 with an answer that is not ``status: error``, any CLI exit
other than 0, and any message naming an empty collection, a busy store or WouldBlock. The summary
counts them by kind (first message of each kept) with the requests made and the writer's rounds
and times. Results: bench/results/stress-store.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import DEFAULT_RESULTS, REPO, machine, utc_now, write

QUESTIONS = {"snap": "How are citations numbered?", "nosnap": "How does hybrid fusion combine the two rankings?"}
PAGES = {"snap": "06-citations-and-the-answer-contract.md", "nosnap": "04-retrieval-modes-and-fusion.md"}
KINDS = (("empty or does not exist", "reported empty"), ("WouldBlock", "WouldBlock"),
         ("in use by another process", "store busy"), ("cannot be read", "damaged"))


class Tally:
    """Requests and errors by kind, thread-safe; keeps the first message of each kind."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.first: dict[str, str] = {}
        self.latency: dict[str, list[float]] = {}

    def ok(self, what: str, secs: float) -> None:
        with self._lock:
            self.requests[what] += 1
            self.latency.setdefault(what, []).append(secs)

    def error(self, what: str, message: str) -> None:
        kind = next((k for needle, k in KINDS if needle in message), "other")
        with self._lock:
            self.requests[what] += 1
            self.errors[f"{what}: {kind}"] += 1
            self.first.setdefault(f"{what}: {kind}", message[:400])


def _env(data: Path, code: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGCORE_")}
    env.update(PYTHONPATH=str(code), RAGCORE_DATA_DIR=str(data), RAGCORE_COLLECTION="snap")
    return env


def _cli(env: dict[str, str], *argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    # cwd: the checkout measured (``python -m`` puts the working directory first on the path)
    return subprocess.run([sys.executable, "-m", "ragcore.cli.main", *argv], env=env, capture_output=True,
                          text=True, timeout=timeout, cwd=env["PYTHONPATH"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _prepare(data: Path, work: Path, env: dict[str, str]) -> Path:
    """Collections snap (with its snapshot), nosnap (its snapshot removed) and writes; returns the writer's folder."""
    for name, page in PAGES.items():
        src = work / name
        src.mkdir(parents=True)
        shutil.copy(REPO / "docs" / page, src / page)
        done = _cli(env, "ingest", str(src), "-c", name, "-q", "--no-calibrate")
        if done.returncode:
            raise SystemExit(f"preparing {name} failed: {done.stderr[-2000:]}")
    shutil.rmtree(data / "snapshots" / "nosnap")  # read from Qdrant from now on: readers never publish
    w = work / "writes"
    w.mkdir()
    (w / "fixed.md").write_text("# Fixed\n\nThis page does not change between rounds.\n")
    return w


def _server(env: dict[str, str], port: int) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "ragcore.cli.main", "serve", "--port", str(port)], env=env,
                            cwd=env["PYTHONPATH"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _http_client(url: str, tally: Tally, until: float, i: int) -> None:
    import httpx

    calls = [("ask snap", "POST", "/api/ask", {"question": QUESTIONS["snap"], "collection": "snap", "generator": "extractive"}),
             ("ask nosnap", "POST", "/api/ask", {"question": QUESTIONS["nosnap"], "collection": "nosnap",
                                                  "generator": "extractive"}),
             ("GET /api/collections", "GET", "/api/collections", None), ("GET /v1/models", "GET", "/v1/models", None)]
    with httpx.Client(base_url=url, timeout=120) as http:
        n = i
        while time.monotonic() < until:
            what, method, path, body = calls[n % len(calls)]
            n += 1
            t = time.monotonic()
            try:
                r = http.request(method, path, json=body)
                text = r.text
                if r.status_code != 200 or (body and json.loads(text).get("status") == "error"):
                    err = json.loads(text).get("error_message") if r.status_code == 200 else text
                    tally.error(f"http {what}", f"{r.status_code}: {err}")
                else:
                    tally.ok(f"http {what}", time.monotonic() - t)
            except Exception as exc:  # noqa: BLE001 - counted, the run goes on
                tally.error(f"http {what}", f"{type(exc).__name__}: {exc}")


def _cli_reader(env: dict[str, str], tally: Tally, until: float, i: int) -> None:
    n = i
    while time.monotonic() < until:
        name = ("snap", "nosnap", "collections")[n % 3]
        n += 1
        t = time.monotonic()
        argv = ("collections", "--json") if name == "collections" else ("ask", "--json", "-c", name, QUESTIONS[name])
        try:
            done = _cli(env, *argv)
        except subprocess.TimeoutExpired:
            tally.error(f"cli {name}", "timed out")
            continue
        message = _cli_problem(name, done)
        if message:
            tally.error(f"cli {name}", message)
        else:
            tally.ok(f"cli {name}", time.monotonic() - t)


def _cli_problem(name: str, done: subprocess.CompletedProcess) -> str | None:
    """What went wrong with one CLI reader's run (None: it answered)."""
    if done.returncode != 0:
        return f"exit {done.returncode}: {done.stderr[-400:]}"
    try:
        got = json.loads(done.stdout)
    except ValueError:
        return f"not JSON: {done.stdout[-200:]}"
    if name == "collections":
        return next((c["problem"] for c in got if c.get("problem")), None)
    return got.get("error_message") or "status error" if got.get("status") == "error" else None


def _writer(env: dict[str, str], folder: Path, tally: Tally, until: float) -> None:
    r = 0
    while time.monotonic() < until:
        r += 1
        (folder / "changing.md").write_text(f"# Round {r}\n\nThe writer changed this page in round {r} of the run.\n")
        t = time.monotonic()
        try:
            done = _cli(env, "ingest", str(folder), "-c", "writes", "-q", "--no-calibrate")
        except subprocess.TimeoutExpired:
            tally.error("cli ingest (writer)", "timed out")
            continue
        if done.returncode:
            tally.error("cli ingest (writer)", f"exit {done.returncode}: {done.stderr[-400:]}")
        else:
            tally.ok("cli ingest (writer)", time.monotonic() - t)


def stress(minutes: float, clients: int, cli_readers: int, code: Path) -> dict[str, Any]:
    tally = Tally()
    with tempfile.TemporaryDirectory(prefix="ragcore-stress-") as tmp:
        data, work = Path(tmp) / "data", Path(tmp) / "work"
        env = _env(data, code)
        folder = _prepare(data, work, env)
        ports = [_free_port(), _free_port()]
        servers = [_server(env, p) for p in ports]
        try:
            from bench.serve import wait_ready

            for p, proc in zip(ports, servers):
                wait_ready(f"http://127.0.0.1:{p}", proc)
            load_start = os.getloadavg()[0]
            until = time.monotonic() + minutes * 60
            threads = [threading.Thread(target=_writer, args=(env, folder, tally, until))]
            threads += [threading.Thread(target=_http_client, args=(f"http://127.0.0.1:{p}", tally, until, i))
                        for p in ports for i in range(clients)]
            threads += [threading.Thread(target=_cli_reader, args=(env, tally, until, i)) for i in range(cli_readers)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            alive = [proc.poll() is None for proc in servers]
        finally:
            for proc in servers:
                proc.terminate()
                try:
                    proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    proc.kill()
    return {"bench": "stress-store", "when": utc_now(), "machine": machine(), "load_avg_start": round(load_start, 2),
            "minutes": minutes, "servers": 2, "http_clients_per_server": clients, "cli_readers": cli_readers,
            "code": "this checkout" if code == REPO else str(code), "servers_alive_at_end": alive,
            "requests": dict(sorted(tally.requests.items())), "errors_total": sum(tally.errors.values()),
            "errors": dict(sorted(tally.errors.items())), "first_messages": tally.first,
            "latency_s": {k: _seconds(v) for k, v in sorted(tally.latency.items())}}


def _seconds(xs: list[float]) -> dict[str, float]:
    a = np.asarray(xs, float)
    return {"p50": round(float(np.percentile(a, 50)), 2), "p95": round(float(np.percentile(a, 95)), 2),
            "max": round(float(a.max()), 2)}


def summary(p: dict[str, Any]) -> str:
    lines = [f"# bench stress-store ({p['when']})", "",
             f"{p['minutes']} min, 2 `ragcore serve` processes × {p['http_clients_per_server']} HTTP clients, "
             f"{p['cli_readers']} CLI readers, 1 CLI writer, one data folder; load average at start "
             f"{p['load_avg_start']}; code: {p['code']}.", "",
             f"**errors: {p['errors_total']}** of {sum(p['requests'].values())} requests", "",
             "| what | requests | errors | p50 s | p95 s | max s |", "|---|---:|---:|---:|---:|---:|"]
    for what, n in p["requests"].items():
        errs = sum(v for k, v in p["errors"].items() if k.startswith(what + ":"))
        lat = p["latency_s"].get(what, {})
        lines.append(f"| {what} | {n} | {errs} | {lat.get('p50', '-')} | {lat.get('p95', '-')} | {lat.get('max', '-')} |")
    for k, msg in p["first_messages"].items():
        lines.append(f"\n- {k} ({p['errors'][k]}×), first: `{msg[:300]}`")
    return "\n".join(lines)


def add_stress_parser(bsub: argparse._SubParsersAction) -> None:
    b = bsub.add_parser("stress", help="2 servers + CLI readers + a writer on one embedded store for N minutes; counts errors")
    b.add_argument("--minutes", type=float, default=10.0)
    b.add_argument("--clients", type=int, default=2, help="HTTP client threads per server")
    b.add_argument("--cli-readers", dest="cli_readers", type=int, default=1)
    b.add_argument("--code", type=Path, default=REPO, help="the checkout the servers and CLI run (to measure an older one)")
    b.add_argument("--name", default="stress-store", help="result file name under --results")
    b.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    b.set_defaults(func=_cmd_stress)


def _cmd_stress(args: argparse.Namespace) -> int:
    out = stress(args.minutes, args.clients, args.cli_readers, args.code.resolve())
    write(args.results, args.name, out, summary(out))
    print(summary(out))
    return 0 if out["errors_total"] == 0 else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m bench.stress_store")
    add_stress_parser(parser.add_subparsers(dest="bench", required=True))
    ns = parser.parse_args(["stress", *sys.argv[1:]])
    raise SystemExit(ns.func(ns))
