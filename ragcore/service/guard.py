"""Browsers kept out unless invited: the ``Host`` of every request and the ``Origin`` of every
state-changing request and every WebSocket handshake, checked before keys or routes.

Why, with keys off on loopback (the default): a web page the user opens in a browser on this
machine may send requests to ``127.0.0.1``. Without these checks it could open a WebSocket and
read answers, or POST a multipart upload (no CORS preflight is needed for one) and add documents.
And a page on a domain that resolves to 127.0.0.1 (DNS rebinding) is "same origin" for the
browser; only its ``Host`` header (the page's domain) tells it apart.

- ``Host``: the bound address; on loopback also ``localhost``, ``127.0.0.1`` and ``::1``; bound to
  every interface (0.0.0.0, ::), any IP address; and the names in RAGCORE_SERVE_ALLOWED_HOSTS
  (``*``: any). The port is not compared (a proxy may forward from another one). A request without
  a Host header (not a browser's) passes.
- ``Origin``: checked on POST, PUT, PATCH, DELETE and WebSocket handshakes. A request without one
  (curl, SDKs, servers) passes; a browser's passes when it is the server's own origin
  (``scheme://`` + the Host it sent) or one of RAGCORE_SERVE_CORS_ORIGINS (CORS stays opt-in).
  ``Origin: null`` (sandboxed frames, files) is refused. Reads (GET) are not checked: a foreign
  page may send one, but without CORS headers its script cannot read the reply.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

from ragcore.service.errors import error_response
from ragcore.settings.service import ServiceSettings, is_loopback

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_UNSPECIFIED = frozenset({"0.0.0.0", "::", ""})


class BrowserGuard:
    def __init__(self, app: ASGIApp, settings: ServiceSettings) -> None:
        self.app = app
        bound = _bare(settings.host)
        self.hosts = {bound, *(_bare(h) for h in settings.allowed_hosts)} | (LOOPBACK_HOSTS if is_loopback(bound) else set())
        self.any_host = "*" in settings.allowed_hosts
        self.any_ip = bound in _UNSPECIFIED
        self.origins = {o.rstrip("/").lower() for o in settings.cors_origins}
        self.any_origin = "*" in settings.cors_origins

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers", []))  # ASGI servers send header names in lower case
        host = headers.get(b"host", b"").decode("latin-1")
        problem = None
        if host and not self.host_allowed(host):
            problem = (f"Forbidden: this server does not answer for the host {host[:80]!r} (a DNS-rebinding guard); "
                       "add the name to RAGCORE_SERVE_ALLOWED_HOSTS if it is yours.")
        elif scope["type"] == "websocket" or scope.get("method") not in SAFE_METHODS:
            origin = headers.get(b"origin")
            if origin is not None and not self.origin_allowed(origin.decode("latin-1"), host, scope):
                problem = ("Forbidden: a request from another web origin; list it in RAGCORE_SERVE_CORS_ORIGINS "
                           "to allow it.")
        if problem is None:
            await self.app(scope, receive, send)
        elif scope["type"] == "websocket":  # closed before it is accepted: the browser sees HTTP 403
            await send({"type": "websocket.close", "code": 1008, "reason": problem[:120]})
        else:
            await error_response(403, problem)(scope, receive, send)

    def host_allowed(self, host: str) -> bool:
        name = _host_name(host)
        if name is None:
            return False
        if self.any_host or name in self.hosts:
            return True
        return self.any_ip and _is_ip(name)

    def origin_allowed(self, origin: str, host: str, scope: Scope) -> bool:
        origin = origin.strip().rstrip("/").lower()
        if origin == "null":
            return False
        if self.any_origin or origin in self.origins:
            return True
        scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
        return bool(host) and origin == f"{scheme}://{host.lower()}"


def _host_name(host: str) -> str | None:
    """The name part of a Host header (``[::1]:8000`` → ``::1``), or None when it is not one."""
    try:
        return _bare(urlsplit("//" + host.strip()).hostname or "") or None
    except ValueError:
        return None


def _bare(host: str) -> str:
    return host.strip().strip("[]").rstrip(".").lower()


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False
