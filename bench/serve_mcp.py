"""`ragcore bench serve --mcp`: what MCP's ``search`` costs against ``/api/retrieve`` for the same question.

One `ragcore serve` process on 127.0.0.1 over the padded ``bench`` collection (as `bench serve`).
One client thread, one kept-alive ``http.client`` connection, asks each question twice in a row: once
as ``POST /api/retrieve`` and once as the MCP tool call ``search`` (JSON-RPC ``tools/call`` on
``/mcp``, in an MCP session opened once, as MCP clients do), the order flipped every question, so
each pair sees the same machine load and the same warm caches. Reported: p50/p95 of each side, the
p50 of the per-pair ratio, and the server's CPU per call of each side. Both replies are read whole.
The MCP side's reply is smaller (the kept evidence and at most 20 cut candidates, against the whole
ranked pool), so the figure is what an agent pays, not the transport alone.
"""

from __future__ import annotations

import http.client
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import DEFAULT_RESULTS, machine, pcts, questions, utc_now, write
from bench.serve import _collection, _server, cpu_s, notes, wait_ready
from ragcore.settings.config import RagcoreSettings

ACCEPT = "application/json, text/event-stream"
PROTOCOL = "2025-06-18"


class McpConn:
    """One kept-alive connection with an MCP session: ``search(q)`` is one ``tools/call``."""

    def __init__(self, port: int) -> None:
        self.http = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        self.headers = {"Content-Type": "application/json", "Accept": ACCEPT}
        init = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}
        reply = self._post(init)
        self.headers.update({"Mcp-Session-Id": reply.getheader("mcp-session-id") or "", "MCP-Protocol-Version": PROTOCOL})
        reply.read()
        self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}).read()
        self.n = 0

    def _post(self, payload: dict[str, Any]) -> http.client.HTTPResponse:
        self.http.request("POST", "/mcp", body=json.dumps(payload).encode("utf-8"), headers=self.headers)
        return self.http.getresponse()

    def search(self, q: str) -> int:
        self.n += 1
        call = {"jsonrpc": "2.0", "id": self.n, "method": "tools/call",
                "params": {"name": "search", "arguments": {"collection": "bench", "question": q}}}
        reply = self._post(call)
        data = reply.read()
        return reply.status if b'"evidence' in data and b'"isError":true' not in data else -1

    def retrieve(self, q: str) -> int:
        self.http.request("POST", "/api/retrieve", body=json.dumps({"question": q}).encode("utf-8"),
                          headers={"Content-Type": "application/json"})
        reply = self.http.getresponse()
        reply.read()
        return reply.status


def _pairs(conn: McpConn, qs: list[str], rounds: int, pid: int) -> dict[str, Any]:
    ms: dict[str, list[float]] = {"retrieve": [], "mcp_search": []}
    cpu = {"retrieve": 0.0, "mcp_search": 0.0}
    calls = {"retrieve": conn.retrieve, "mcp_search": conn.search}
    for r in range(rounds):
        for i, q in enumerate(qs):
            order = ("retrieve", "mcp_search") if (i + r) % 2 == 0 else ("mcp_search", "retrieve")
            for side in order:
                c0, t = cpu_s(pid), time.perf_counter()
                status = calls[side](q)
                ms[side].append((time.perf_counter() - t) * 1e3)
                cpu[side] += cpu_s(pid) - c0
                if status != 200:
                    raise RuntimeError(f"{side} answered {status}")
    ratios = sorted(m / r for m, r in zip(ms["mcp_search"], ms["retrieve"]))
    n = len(ratios)
    return {"sides": {k: {**pcts(v), "server_cpu_ms_per_call": round(cpu[k] / len(v) * 1e3, 2)} for k, v in ms.items()},
            "pair_ratio_p50": round(ratios[n // 2], 3), "pairs": n}


def bench_serve_mcp(source_collection: str, size: int, n_questions: int, rounds: int, results_dir: Path,
                    settings: RagcoreSettings, data_dir: Path | None = None) -> dict[str, Any]:
    from ragcore.encoders.minilm import OnnxMiniLM
    from bench.support.scripted_openai import unused_port

    qs = questions()[:n_questions]
    with tempfile.TemporaryDirectory() as tmp:
        data = data_dir or Path(tmp)
        eng, n = _collection(source_collection, size, settings, data, OnnxMiniLM())
        eng.close()
        port = unused_port()
        proc = _server(data, port, {"RAGCORE_CALIBRATED_BAR": "false"})
        load_start = machine()["load_avg"]
        try:
            wait_ready(f"http://127.0.0.1:{port}", proc)
            conn = McpConn(port)
            _pairs(conn, qs, 1, proc.pid)  # every question once on both sides first: warm caches
            out = _pairs(conn, qs, rounds, proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    s = out["sides"]
    payload = {"bench": "serve-mcp", "when": utc_now(), "machine": machine(), "load_avg_start": load_start, "chunks": n,
               "questions": len(qs), "rounds": rounds, **out,
               "p50_overhead": round(s["mcp_search"]["p50_ms"] / s["retrieve"]["p50_ms"] - 1, 3), "target": "at most +20%"}
    write(results_dir, "serve-mcp", payload, summary(payload) + notes(results_dir / "serve-mcp.md"))
    return payload


def summary(p: dict[str, Any]) -> str:
    rows = "\n".join(f"| {k} | {v['p50_ms']} | {v['mean_ms']} | {v['p95_ms']} | {v['server_cpu_ms_per_call']} | {v['n']} |"
                     for k, v in p["sides"].items())
    return (f"# bench serve --mcp ({p['when']})\n\n{p['chunks']} chunks, {p['questions']} questions × {p['rounds']} rounds, "
            "one client on 127.0.0.1, each question asked as `/api/retrieve` and as MCP `search` back to back (order "
            f"flipped each time). Machine: {p['machine']['cpus']} CPUs, load {p['load_avg_start']} at the start, "
            f"{p['machine']['load_avg']} at the end.\n\n| side | p50 ms | mean ms | p95 ms | server CPU ms/call | calls |\n"
            f"|---|---|---|---|---|---|\n{rows}\n\nMCP `search` / `/api/retrieve` at p50: {p['p50_overhead']:+.1%} "
            f"(target {p['target']}); p50 of the per-pair ratio: {p['pair_ratio_p50']}.")


def run(args: Any) -> int:
    from ragcore.cli.common import settings_from_args

    out = bench_serve_mcp(args.collection, args.size, min(args.questions, 64), max(args.rounds, 1),
                          args.results or DEFAULT_RESULTS, settings_from_args(args), data_dir=args.data)
    print(summary(out))
    return 0
