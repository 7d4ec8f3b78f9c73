"""A scripted embeddings + rerank protocol server on 127.0.0.1 (no mocks), beside
``scripted_openai.py``, for the failures a real server cannot be made to produce on demand.

* ``POST /v1/embeddings`` (OpenAI's shape: ``{"data": [{"index", "embedding"}], "model"}``): by
  default a bag-of-words vector per input (each lower-cased word hashed to one of ``dim``
  dimensions), so texts sharing words are close and retrieval over it behaves sensibly.
* ``POST /rerank`` and ``POST /v1/rerank`` (Cohere / Jina / TEI / llama.cpp's shape: ``query`` +
  ``documents`` → ``{"results": [{"index", "relevance_score"}]}``): by default the share of the
  query's words each document contains.

Scripted replies, used in order by the next requests of either kind (then the defaults again):
:class:`Fail` (status, optional Retry-After), :class:`Hang` (sleep before answering),
:class:`WrongDim`, :class:`NaNs`, :class:`Fewer` (one vector less than asked), :class:`PerToken`
(one vector per word, as llama.cpp's server does for a model without pooling), :class:`Drop`
(close the connection without answering). Each request is recorded: path, the JSON body and the
Authorization header's value (a test checks the key was sent, and never shown elsewhere).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Union

WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class Fail:
    status: int
    retry_after: float | None = None
    body: str = '{"error": {"message": "scripted failure"}}'


@dataclass(frozen=True)
class Hang:
    seconds: float


@dataclass(frozen=True)
class WrongDim:
    dim: int


@dataclass(frozen=True)
class NaNs:
    pass


@dataclass(frozen=True)
class Fewer:
    pass


@dataclass(frozen=True)
class PerToken:
    pass


@dataclass(frozen=True)
class Drop:
    pass


Reply = Union[Fail, Hang, WrongDim, NaNs, Fewer, PerToken, Drop]


@dataclass
class Seen:
    path: str
    body: Any
    authorization: str | None


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def bag_vector(text: str, dim: int) -> list[float]:
    v = [0.0] * dim
    for w in words(text) or ["empty"]:
        v[int(hashlib.sha1(w.encode()).hexdigest(), 16) % dim] += 1.0
    norm = math.sqrt(sum(x * x for x in v)) or 1.0
    return [x / norm for x in v]


def overlap_score(query: str, doc: str) -> float:
    q, d = set(words(query)), set(words(doc))
    return len(q & d) / len(q) if q else 0.0


@dataclass
class ScriptedEmbeddingServer:
    dim: int = 64
    model: str = "scripted-embed"
    # seconds of "model time" per embedded text, one request at a time (a real server computes one batch
    # at a time): what `ragcore bench ingest --endpoint scripted:MS` measures ragcore's overhead against
    seconds_per_text: float = 0.0
    requests: list[Seen] = field(default_factory=list)
    port: int = 0  # 0: any free port; a test that restarts a stopped server passes the old one

    def __post_init__(self) -> None:
        self._script: list[Reply] = []
        self._lock = threading.Lock()
        self.in_flight = self.max_in_flight = 0  # requests being answered at once (a client's concurrency)
        self.compute = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def script(self, *replies: Reply) -> "ScriptedEmbeddingServer":
        with self._lock:
            self._script.extend(replies)
        return self

    def _next(self) -> Reply | None:
        with self._lock:
            return self._script.pop(0) if self._script else None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    @property
    def root_url(self) -> str:
        return self.base_url[: -len("/v1")]

    def start(self) -> "ScriptedEmbeddingServer":
        state = self

        class Handler(_Handler):
            server_state = state

        self._server = _QuietServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server.close_all()
            self._server = None

    def __enter__(self) -> "ScriptedEmbeddingServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class _QuietServer(ThreadingHTTPServer):
    """Keeps its open connections, so that stopping it closes them too (a server that dies does:
    a client's kept-alive connection must not go on being answered)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.open_sockets: set[Any] = set()

    def process_request(self, request: Any, client_address: Any) -> None:
        self.open_sockets.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.open_sockets.discard(request)
        super().shutdown_request(request)

    def close_all(self) -> None:
        for sock in list(self.open_sockets):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request: Any, client_address: Any) -> None:  # a dropped connection is scripted
        pass


class _Handler(BaseHTTPRequestHandler):
    server_state: ScriptedEmbeddingServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = (obj if isinstance(obj, str) else json.dumps(obj)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 - the http.server API
        st = self.server_state
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
        st.requests.append(Seen(self.path, body, self.headers.get("Authorization")))
        reply = st._next()
        with st._lock:
            st.in_flight += 1
            st.max_in_flight = max(st.max_in_flight, st.in_flight)
        try:
            self._answer(st, body, reply)
        finally:
            with st._lock:
                st.in_flight -= 1

    def _answer(self, st: ScriptedEmbeddingServer, body: Any, reply: Reply | None) -> None:
        if isinstance(reply, Hang):
            time.sleep(reply.seconds)
            reply = None
        if isinstance(reply, Drop):
            self.close_connection = True
            self.connection.close()
            return
        if isinstance(reply, Fail):
            headers = {"Retry-After": str(reply.retry_after)} if reply.retry_after is not None else None
            self._send(reply.status, reply.body, headers)
            return
        if self.path.rstrip("/") in ("/v1/embeddings", "/embeddings"):
            if st.seconds_per_text:
                with st.compute:
                    time.sleep(st.seconds_per_text * len(body["input"] if isinstance(body["input"], list) else [1]))
            self._send(200, _embeddings(st, body, reply))
        elif self.path.rstrip("/") in ("/rerank", "/v1/rerank"):
            docs = [d if isinstance(d, str) else d.get("text", "") for d in body["documents"]]
            scores = [overlap_score(body["query"], d) for d in docs]
            order = sorted(range(len(docs)), key=lambda i: -scores[i])[: body.get("top_n") or len(docs)]
            self._send(200, {"results": [{"index": i, "relevance_score": scores[i]} for i in order]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}"}})


def _embeddings(st: ScriptedEmbeddingServer, body: Any, reply: Reply | None) -> dict[str, Any]:
    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
    dim = reply.dim if isinstance(reply, WrongDim) else st.dim
    data: list[dict[str, Any]] = []
    for i, text in enumerate(inputs):
        vec: Any = bag_vector(text, dim)
        if isinstance(reply, NaNs) and i == 0:
            vec = [float("nan")] * dim
        if isinstance(reply, PerToken):
            vec = [bag_vector(w, dim) for w in (words(text) or ["empty"])]
        data.append({"object": "embedding", "index": i, "embedding": vec})
    if isinstance(reply, Fewer):
        data = data[:-1]
    data.reverse()  # the protocol orders by "index", not by position: a client must sort
    return {"object": "list", "data": data, "model": body.get("model", st.model),
            "usage": {"prompt_tokens": 0, "total_tokens": 0}}


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.support.scripted_embeddings --dim 384 --ms 10``: serve in a process of its own
    (as a real endpoint runs: `bench ingest --endpoint scripted:MS` must not share ragcore's GIL); prints
    the base URL on one line, then serves until its standard input closes."""
    import argparse
    import sys

    ap = argparse.ArgumentParser()
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--ms", type=float, default=0.0, help="milliseconds of model time per text")
    args = ap.parse_args(argv)
    with ScriptedEmbeddingServer(dim=args.dim, seconds_per_text=args.ms / 1e3) as srv:
        print(srv.base_url, flush=True)
        sys.stdin.read()  # the parent closes it (or exits) to stop the server


if __name__ == "__main__":
    main()
