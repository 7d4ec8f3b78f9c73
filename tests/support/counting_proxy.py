"""A counting HTTP proxy on 127.0.0.1 in front of a real embeddings server: every ``POST`` is
forwarded as it is, and its JSON ``input`` texts are recorded with the status the server gave (or
0 when it could not be reached), so a test can count exactly which texts a server embedded and
which were sent again. The server behind it may die and come back on the same port."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Forwarded:
    path: str
    texts: list[str]
    status: int  # the server's status; 0: it could not be reached


@dataclass
class CountingProxy:
    target: str  # the server's root, e.g. http://127.0.0.1:8080
    seen: list[Forwarded] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def answered(self) -> set[str]:
        """Texts the server embedded (a 200 came back for their request)."""
        with self._lock:
            return {t for f in self.seen if f.status == 200 for t in f.texts}

    def start(self) -> "CountingProxy":
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                self._forward(None)

            def do_POST(self) -> None:  # noqa: N802
                self._forward(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def _forward(self, body: bytes | None) -> None:
                req = urllib.request.Request(proxy.target + self.path, data=body, method=self.command,
                                             headers={"Content-Type": "application/json"})
                try:
                    with urllib.request.urlopen(req, timeout=600) as resp:
                        status, data = resp.status, resp.read()
                except urllib.error.HTTPError as exc:
                    status, data = exc.code, exc.read()
                except OSError:  # the server is down: the client sees a 502, as from a real gateway
                    status, data = 0, b'{"error": {"message": "upstream unreachable"}}'
                if body is not None:
                    inputs = json.loads(body or b"{}").get("input", [])
                    with proxy._lock:
                        proxy.seen.append(Forwarded(self.path, inputs if isinstance(inputs, list) else [inputs], status))
                self.send_response(status or 502)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
