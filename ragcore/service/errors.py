"""Errors as JSON, never a traceback: ``{"error": {"code", "message", "type"}}``.

The shape is OpenAI's error object (``type`` repeats ``code``), so the OpenAI-compatible routes and
the REST routes answer errors alike and an OpenAI SDK shows the message. Request validation errors
name the field and the rule but never echo the value sent (it may be a document's text or a key).
"""

from __future__ import annotations

import logging
import os
import re
from typing import Any, Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ragcore.settings.config import ConfigError
from ragcore.storage.names import CollectionRefused

log = logging.getLogger("ragcore.service")

_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed",
          408: "timeout", 409: "conflict", 413: "too_large", 415: "unsupported_media_type", 422: "invalid_request",
          429: "busy", 500: "internal_error", 503: "unavailable", 504: "deadline_exceeded"}


class ApiError(Exception):
    """A request the service refuses or cannot answer, with the status and message the client sees."""

    def __init__(self, status: int, message: str, code: str | None = None, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code or _CODES.get(status, "error")
        self.message = message
        self.headers = dict(headers or {})


def error_body(code: str, message: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "type": code}}


def error_response(status: int, message: str, code: str | None = None, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """The JSON error; its message with server paths taken out (a store's or the OS's message may
    name one); after a 5xx the connection is closed (``Connection: close``), as a client expects
    of a server that failed: a kept-alive connection dropped without it made clients retry blind."""
    code = code or _CODES.get(status, "error")
    headers = dict(headers or {})
    if status >= 500:
        headers["Connection"] = "close"
    return JSONResponse(error_body(code, without_paths(message)), status_code=status, headers=headers)


_ROUTE_ROOTS = frozenset({"api", "v1", "healthz", "docs", "openapi.json"})
_ABSOLUTE = re.compile(r"(?<![\w.:/~])(/[^\s'\"/:,;()\[\]]+)(/[^\s'\"/:,;()\[\]]*)*")


def without_paths(message: str) -> str:
    """``message`` with every absolute server path replaced by ``<path>``: a path whose first part
    is a folder of this machine's root (``/tmp/...``, ``/home/...``); the service's own routes
    (``/api/...``) stay."""
    def one(m: re.Match[str]) -> str:
        first = m.group(1)[1:]
        if first in _ROUTE_ROOTS or not os.path.isdir("/" + first):
            return m.group(0)
        return "<path>"

    return _ABSOLUTE.sub(one, message)


def validation_message(errors: list[dict[str, Any]]) -> str:
    """``field: rule`` for each problem; the offending value is left out on purpose."""
    parts = []
    for e in errors[:10]:
        loc = ".".join(str(x) for x in e.get("loc", ()) if x not in ("body", "query", "path"))
        parts.append(f"{loc or 'body'}: {e.get('msg', 'invalid')}")
    return "; ".join(parts) or "the request is not valid"


def known_error_response(exc: Exception) -> JSONResponse | None:
    """The reply to a refusal the routes raise (None for anything else): the exception handlers
    below and the lean routes (lean.py) answer with it, so both write the same JSON."""
    if isinstance(exc, ApiError):
        return error_response(exc.status, exc.message, exc.code, exc.headers)
    if isinstance(exc, CollectionRefused):  # storage/names.py: the one collection rule
        return error_response(exc.status, exc.reason, None if exc.status == 404 else "invalid_collection")
    if isinstance(exc, ConfigError):  # a setting sent in the request
        return error_response(422, str(exc), "invalid_setting")
    if isinstance(exc, RequestValidationError):
        return error_response(422, validation_message(list(exc.errors())))
    if isinstance(exc, StarletteHTTPException):
        message = exc.detail if isinstance(exc.detail, str) else "request refused"
        return error_response(exc.status_code, message, headers=getattr(exc, "headers", None))
    return None


def install_error_handlers(app: FastAPI) -> None:
    async def _known(_: Request, exc: Exception) -> JSONResponse:
        response = known_error_response(exc)
        assert response is not None  # registered only for the kinds it knows
        return response

    for kind in (ApiError, CollectionRefused, ConfigError, RequestValidationError, StarletteHTTPException):
        app.add_exception_handler(kind, _known)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        # the type only: a message may quote a document or a key
        log.error("unexpected %s on %s %s", type(exc).__name__, request.method, request.url.path)
        return error_response(500, f"The service failed on this request ({type(exc).__name__}); see the server log.")
