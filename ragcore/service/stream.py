"""Streaming: ``POST /api/ask/stream`` as Server-Sent Events and ``GET /api/ws`` as a WebSocket.

Both carry the event contract as ``rag.*`` objects (wire.py). On the socket a client sends
``{"type": "rag.request", ...AskRequest fields}`` (several may run at once, told apart by their
``request_id``, which ``rag.started`` announces) and ``{"type": "rag.cancel", "request_id": ...}``
(or ``"client_id"``: the label the client gave its ``rag.request``; with neither: every question of
the socket, those still waiting to start included); a cancelled question ends with
``rag.done {status: "cancelled"}``. A client that goes away (closes the socket, drops the SSE
connection) cancels its questions and closes the model's stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from typing import Any, AsyncIterator

from fastapi import APIRouter, Depends, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import StreamingResponse
from pydantic import ValidationError

from ragcore.service.collections import resolved_async
from ragcore.service.errors import known_error_response, log, validation_message
from ragcore.service.runner import QuestionRun, start_question
from ragcore.service.schemas import AskRequest, stream_kwargs
from ragcore.service.state import Service, service
from ragcore.service.wire import dumps, event_json, public_events, sse

router = APIRouter()
HEARTBEAT_S = 15.0  # an SSE comment line, so that proxies keep an idle stream open


async def start_ask(svc: Service, body: AskRequest, label: str = "collection") -> QuestionRun:
    """A running question; its collection resolved first (422 / 404 before any stream starts)."""
    kwargs = stream_kwargs(svc.engine.settings, body)
    kwargs["collection"] = await resolved_async(svc, kwargs["collection"], must_exist=kwargs["context"] != "selection",
                                                label=label)
    return await start_question(svc.slots, svc.settings.deadline_s,
                                lambda cancel: public_events(svc.engine.stream(body.question, cancel=cancel, **kwargs)))


@router.post("/api/ask/stream", tags=["questions"], response_class=StreamingResponse,
             summary="the event contract as Server-Sent Events (rag.started … rag.done)")
async def ask_stream(body: AskRequest, request: Request, svc: Service = Depends(service)) -> StreamingResponse:
    run = await start_ask(svc, body)  # 429 / 422 come back as JSON before the stream starts
    return StreamingResponse(_sse(run, request), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})


async def _sse(run: QuestionRun, request: Request) -> AsyncIterator[bytes]:
    watcher = asyncio.create_task(watch_disconnect(request, run))
    try:
        async for ev in _with_heartbeat(run):
            yield ev
    finally:  # the client went away, or the stream ended: either way the question stops
        run.close()
        watcher.cancel()


async def _with_heartbeat(run: QuestionRun) -> AsyncIterator[bytes]:
    events = run.events().__aiter__()
    nxt = asyncio.ensure_future(events.__anext__())
    try:
        while True:
            done, _ = await asyncio.wait({nxt}, timeout=HEARTBEAT_S)
            if not done:
                yield b": keep-alive\n\n"
                continue
            try:
                ev = nxt.result()
            except StopAsyncIteration:
                return
            yield sse(event_json(ev))
            nxt = asyncio.ensure_future(events.__anext__())
    finally:
        nxt.cancel()


async def watch_disconnect(request: Request, run: QuestionRun) -> None:
    """Starlette notices a gone client only when a write fails; a question waiting on a silent
    model writes nothing, so the disconnect is watched for here."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            run.close()
            return


# ------------------------------------------------------------------ WebSocket


@router.websocket("/api/ws")
async def ws(socket: WebSocket) -> None:
    svc: Service = socket.app.state.service
    await socket.accept()
    asked: list[_Asked] = []  # every question of the socket, from its rag.request on (a cancel may come at once)
    tasks: set[asyncio.Task] = set()
    send_lock = asyncio.Lock()

    async def send(obj: dict[str, Any]) -> None:
        async with send_lock:
            await socket.send_text(dumps(obj))

    try:
        while True:
            msg = await _next_message(socket)
            if msg is _NOT_JSON:
                await send(_ws_error(None, "invalid_request", "each message is one JSON object sent as a text frame"))
                continue
            kind = msg.get("type") if isinstance(msg, dict) else None
            if kind == "rag.request":
                q = _Asked(msg.get("client_id"))
                asked.append(q)
                task = asyncio.create_task(_ws_question(svc, msg, q, asked, send))
                tasks.add(task)
                task.add_done_callback(tasks.discard)
            elif kind == "rag.cancel":
                _cancel(asked, msg.get("request_id"), msg.get("client_id"))
            else:
                await send(_ws_error(None, "invalid_request", "send {\"type\": \"rag.request\", ...} or "
                                                              "{\"type\": \"rag.cancel\", \"request_id\": ...}"))
    except (WebSocketDisconnect, RuntimeError):
        pass  # gone: the socket ends and its questions stop
    finally:
        for q in asked:
            q.cancel(close=True)
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await socket.close()


_NOT_JSON = object()


async def _next_message(socket: WebSocket) -> Any:
    """The next message as JSON, or ``_NOT_JSON`` (a binary frame, text that is not JSON): the
    client hears why (rag.error) and the socket stays open; nothing reaches the log."""
    message = await socket.receive()
    if message["type"] == "websocket.disconnect":
        raise WebSocketDisconnect(message.get("code", 1000))
    text = message.get("text")
    if text is None:
        return _NOT_JSON
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


@dataclass
class _Asked:
    """One question of a socket: cancellable from its ``rag.request`` on, before its run exists."""

    client_id: Any
    run: QuestionRun | None = None
    cancelled: bool = False

    def cancel(self, close: bool = False) -> None:
        self.cancelled = True
        if self.run is not None:
            self.run.close() if close else self.run.cancel("cancelled")


def _cancel(asked: list[_Asked], request_id: Any, client_id: Any) -> None:
    for q in list(asked):
        rid = q.run.request_id if q.run is not None else None
        if (request_id is None and client_id is None) or (request_id is not None and request_id == rid) \
                or (client_id is not None and client_id == q.client_id):
            q.cancel()


async def _ws_question(svc: Service, msg: dict[str, Any], q: _Asked, asked: list[_Asked], send) -> None:
    client_id = msg.get("client_id")
    fields = {k: v for k, v in msg.items() if k not in ("type", "client_id")}
    try:
        run = await _started(svc, fields, client_id, send)
        if run is None:
            return
        q.run = run
        if q.cancelled:  # cancelled while it was being started: it ends at once, with rag.done {cancelled}
            run.cancel("cancelled")
        try:
            async for ev in run.events():
                obj = event_json(ev)
                if client_id is not None:
                    obj["client_id"] = client_id
                await send(obj)
        except Exception as exc:  # noqa: BLE001 - the engine failed: said on the socket, the type only in the log
            log.error("unexpected %s in a WebSocket question", type(exc).__name__)
            await send(_ws_error(client_id, "internal_error", f"The service failed on this request ({type(exc).__name__})."))
        finally:
            run.close()
    finally:
        asked.remove(q)


async def _started(svc: Service, fields: dict[str, Any], client_id: Any, send) -> QuestionRun | None:
    """The question's run, or None once its refusal was sent (rag.error): every refusal is a reply (top_k 0
    once died in this task unheard)."""
    try:
        return await start_ask(svc, AskRequest.model_validate(fields))
    except ValidationError as exc:
        await send(_ws_error(client_id, "invalid_request", validation_message(exc.errors())))
    except Exception as exc:  # noqa: BLE001
        response = known_error_response(exc)
        if response is None:
            log.error("unexpected %s on a WebSocket question", type(exc).__name__)
            await send(_ws_error(client_id, "internal_error", f"The service failed on this request ({type(exc).__name__})."))
        else:
            error = json.loads(response.body)["error"]
            await send(_ws_error(client_id, error["code"], error["message"]))
    return None


def _ws_error(client_id: Any, code: str, message: str) -> dict[str, Any]:
    """A request the socket refused before it started (no request_id yet)."""
    return {"type": "rag.error", "request_id": None, "seq": None, "client_id": client_id,
            "data": {"code": code, "message": message}}
