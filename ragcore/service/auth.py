"""Bearer keys: with ``RAGCORE_API_KEYS`` set, every route but ``/healthz`` needs
``Authorization: Bearer <key>``, compared in constant time against each key.

A pure ASGI middleware, so the WebSocket handshake is checked the same way as HTTP requests (a
refused handshake is closed before it is accepted: the client sees HTTP 403). CORS preflight
requests never reach it (the CORS middleware answers them).
"""

from __future__ import annotations

import hmac
from typing import Sequence

from starlette.types import ASGIApp, Receive, Scope, Send

from ragcore.service.errors import error_response

OPEN_PATHS = frozenset({"/healthz"})


def key_matches(given: str, keys: Sequence[bytes]) -> bool:
    """Whether ``given`` is one of ``keys``; every key is compared (no early exit), each in constant time."""
    g = given.encode("utf-8", "surrogateescape")
    found = False
    for k in keys:
        found |= hmac.compare_digest(g, k)
    return found


def bearer(headers: list[tuple[bytes, bytes]]) -> str | None:
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


class BearerAuth:
    def __init__(self, app: ASGIApp, keys: Sequence[str]) -> None:
        self.app = app
        self.keys = [k.encode("utf-8", "surrogateescape") for k in keys]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or not self.keys or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        token = bearer(scope.get("headers", []))
        if token is not None and key_matches(token, self.keys):
            await self.app(scope, receive, send)
            return
        problem = "no API key was sent" if token is None else "the API key is not valid"
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": problem})
            return
        response = error_response(401, f"Unauthorized: {problem}. Send Authorization: Bearer <key>.",
                                  headers={"WWW-Authenticate": "Bearer"})
        await response(scope, receive, send)


