"""The two hot routes, ``POST /api/retrieve`` and ``POST /api/ask``, served by a pure ASGI layer in
front of FastAPI's router.

Why: at one client, FastAPI's per-request machinery (its exception and exit-stack middlewares, the
router's matching, the ``Request`` object, content-type parsing, dependency solving) was most of the
~1.1 ms of event-loop CPU a retrieval cost beyond a ``/healthz`` round trip (py-spy and per-thread
CPU of the server, bench/results/serve.md). This layer does the same three things for these two
routes only: read the body, validate it into the same pydantic model, call the same function as the
FastAPI route (``rest.retrieve_reply`` / ``rest.ask_reply``).

Nothing else changes: it sits inside the key, body-limit and access-log middlewares (they see
these requests as before); the routes stay declared in ``rest.py``, so ``/openapi.json`` documents
them as before; a refusal is written by ``errors.known_error_response``, as the exception handlers
write it; a failure it does not know goes on to the same 500 handler. Request bodies are parsed as
FastAPI parses them (the same content-type rule, ``json.loads``, the same validation mode and messages): a test
sends the same malformed requests to an app built with and without this layer and compares the
replies byte for byte.
"""

from __future__ import annotations

import email.message
import json
from typing import Any, Awaitable, Callable

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ValidationError
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from ragcore.service import rest
from ragcore.service.errors import known_error_response
from ragcore.service.schemas import AskRequest, RetrieveRequest
from ragcore.service.state import Service

Reply = Callable[[Service, Any], Awaitable[bytes]]
ROUTES: dict[str, tuple[type[BaseModel], Reply]] = {
    "/api/retrieve": (RetrieveRequest, rest.retrieve_reply),
    "/api/ask": (AskRequest, rest.ask_reply),
}
_JSON_HEADERS = [(b"content-type", b"application/json")]


class LeanRoutes:
    def __init__(self, app: ASGIApp, service: Service) -> None:
        self.app, self.service = app, service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        route = ROUTES.get(scope["path"]) if scope["type"] == "http" and scope["method"] == "POST" else None
        if route is None:
            await self.app(scope, receive, send)
            return
        model, reply = route
        try:
            try:
                body = parsed_body(await read_body(receive), _content_type(scope))
                request = model.model_validate(body, from_attributes=True)  # FastAPI's mode
            except ValidationError as exc:  # located under "body", as FastAPI locates a body's errors
                raise RequestValidationError([{**e, "loc": ("body", *e["loc"])} for e in exc.errors()]) from None
            data = await reply(self.service, request)
        except Exception as exc:  # noqa: BLE001 - what the handlers know is answered alike; the rest goes on to the 500 handler
            response = known_error_response(exc)
            if response is None:
                raise
            await response(scope, receive, send)
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", str(len(data)).encode("ascii")), *_JSON_HEADERS]})
        await send({"type": "http.response.body", "body": data})


async def read_body(receive: Receive) -> bytes:
    """The whole body; a client gone first (or cut off by the body limit, which then answers 413)
    is FastAPI's 400."""
    chunks = []
    while True:
        msg = await receive()
        if msg["type"] == "http.disconnect":
            raise HTTPException(400, "There was an error parsing the body")
        chunks.append(msg.get("body", b""))
        if not msg.get("more_body", False):
            return b"".join(chunks)


def parsed_body(body: bytes, content_type: str | None) -> Any:
    """What FastAPI hands its validator: the JSON of a JSON body, the raw bytes of any other
    (refused by the model as not an object); an empty or unreadable body is refused as FastAPI refuses it."""
    if not body:  # FastAPI validates it as a missing body
        raise RequestValidationError([{"type": "missing", "loc": ("body",), "msg": "Field required", "input": None}])
    if not _is_json(content_type):
        return body
    try:  # json.loads, as FastAPI: orjson reads an integer past 64 bits as a float, and refuses NaN and UTF-16
        return json.loads(body)
    except json.JSONDecodeError as exc:
        raise RequestValidationError([{"type": "json_invalid", "loc": ("body", exc.pos), "msg": "JSON decode error",
                                       "input": {}, "ctx": {"error": exc.msg}}]) from None
    except Exception:  # noqa: BLE001 - FastAPI's answer to a body it cannot decode at all (bad UTF-8)
        raise HTTPException(400, "There was an error parsing the body") from None


def _content_type(scope: Scope) -> str | None:
    for name, value in scope["headers"]:
        if name == b"content-type":  # ASGI servers send header names in lower case
            return value.decode("latin-1")
    return None


def _is_json(content_type: str | None) -> bool:
    if not content_type:  # FastAPI's strict content type: a body without one is not read as JSON
        return False
    if content_type == "application/json":
        return True
    message = email.message.Message()  # the rule FastAPI applies, for every other spelling
    message["content-type"] = content_type
    subtype = message.get_content_subtype()
    return message.get_content_maintype() == "application" and (subtype == "json" or subtype.endswith("+json"))
