"""The embeddings server's own busy time, read from its log while ragcore ingests through it.

llama.cpp (and llama-cpp-python's server, which prints llama.cpp's timings when verbose, its default)
ends every ``/v1/embeddings`` call with ``llama_perf_context_print: total time = X ms / N tokens``,
the timer reset at the call's start, and the web server then logs ``"POST /v1/embeddings …" 200 OK``
for a reply it delivered (none when the client had already given up: a request that timed out on
ragcore's side, computed all the same). The server works through calls one at a time, so the sum of
the delivered calls' times over an ingest is how long the server computed for what ragcore kept, and
that over ragcore's wall time is the share of the server's own sequential throughput ragcore reached,
*measured in the same minutes as the ingest*. On a machine that others share, a replay of the same
requests afterwards meets another load; this does not (but the server's time includes what ragcore's
own work on the same cores took from it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_TOTAL = re.compile(r"llama_perf_context_print:\s+total time\s*=\s*([\d.]+)\s*ms\s*/\s*(\d+)\s*tokens")
_DELIVERED = re.compile(r'"POST /v1/embeddings[^"]*" 200')


@dataclass(frozen=True)
class ServerBusy:
    seconds: float  # the server's computing time on calls whose reply was delivered
    calls: int
    tokens: int
    abandoned_seconds: float  # computing time on calls whose client had gone (timed out): wasted
    abandoned_calls: int

    def as_dict(self) -> dict[str, float | int]:
        return {"seconds": round(self.seconds, 2), "calls": self.calls, "tokens": self.tokens,
                "tokens_per_s": round(self.tokens / self.seconds, 1) if self.seconds else 0.0,
                "abandoned_seconds": round(self.abandoned_seconds, 2), "abandoned_calls": self.abandoned_calls}


def log_size(path: Path) -> int:
    """Where the log ends now: read from here after the run."""
    return path.stat().st_size if path.is_file() else 0


def busy_since(path: Path, offset: int) -> ServerBusy:
    """The calls the server logged after byte ``offset`` of its log."""
    with open(path, "rb") as f:
        f.seek(offset)
        lines = f.read().decode("utf-8", errors="replace").splitlines()
    done: list[tuple[float, int]] = []
    lost: list[float] = []
    pending: tuple[float, int] | None = None
    for line in lines:
        m = _TOTAL.search(line)
        if m:  # a call computed; delivered only if its 200 line comes before the next call's timings
            if pending:
                lost.append(pending[0])
            pending = (float(m.group(1)), int(m.group(2)))
        elif pending and _DELIVERED.search(line):
            done.append(pending)
            pending = None
    if pending:
        lost.append(pending[0])
    return ServerBusy(sum(ms for ms, _ in done) / 1e3, len(done), sum(t for _, t in done), sum(lost) / 1e3, len(lost))
