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
from dataclasses import dataclass
from typing import Any, AsyncIterator

from fastapi import APIRouter, Depends, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import StreamingResponse
from pydantic import ValidationError

from ragcore.service.errors import ApiError, validation_message
from ragcore.service.runner import QuestionRun, start_question
from ragcore.service.schemas import AskRequest, stream_kwargs
from ragcore.service.state import Service, service
from ragcore.service.wire import dumps, event_json, sse

router = APIRouter()
HEARTBEAT_S = 15.0  # an SSE comment line, so that proxies keep an idle stream open


async def start_ask(svc: Service, body: AskRequest) -> QuestionRun:
    kwargs = stream_kwargs(svc.engine.settings, body)
    return await start_question(svc.slots, svc.settings.deadline_s,
                                lambda cancel: svc.engine.stream(body.question, cancel=cancel, **kwargs))


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
            msg = await socket.receive_json()
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
    except (WebSocketDisconnect, RuntimeError, ValueError):
        pass  # gone, or not JSON: the socket ends and its questions stop
    finally:
        for q in asked:
            q.cancel(close=True)
        for task in tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            await socket.close()


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
        try:
            run = await start_ask(svc, AskRequest.model_validate(fields))
        except ValidationError as exc:
            await send(_ws_error(client_id, "invalid_request", validation_message(exc.errors())))
            return
        except ApiError as exc:
            await send(_ws_error(client_id, exc.code, exc.message))
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
        finally:
            run.close()
    finally:
        asked.remove(q)


def _ws_error(client_id: Any, code: str, message: str) -> dict[str, Any]:
    """A request the socket refused before it started (no request_id yet)."""
    return {"type": "rag.error", "request_id": None, "seq": None, "client_id": client_id,
            "data": {"code": code, "message": message}}
