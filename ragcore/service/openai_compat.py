"""An OpenAI-compatible front door: ``GET /v1/models`` lists the collections as models, and
``POST /v1/chat/completions`` (streamed or not) answers the last user message from the collection
named by ``model``, the earlier user/assistant pairs being the conversation history.

The reply's text is the answer with its ``[n]`` markers and a "Sources:" list at its end; the
citations also travel in an extra top-level field ``ragcore`` (status, request_id, the follow-up
made standalone, citations with path, lines, section, page and a short quote), which OpenAI SDKs keep (``completion.ragcore`` in
Python, ``completion.ragcore`` in JavaScript). Sampling parameters (temperature, max_tokens …)
are accepted and ignored: the answer comes from the engine's settings. System messages are ignored.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any, AsyncIterator

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragcore.service.collections import resolved_async
from ragcore.service.errors import ApiError, validation_message
from ragcore.service.rest import answer_of
from ragcore.service.schemas import AskRequest, Turn
from ragcore.service.state import Service, service
from ragcore.service.stream import start_ask, watch_disconnect
from ragcore.service.wire import dumps
from ragcore.storage.names import CollectionRefused
from ragcore.types import Answer, Citation

router = APIRouter(prefix="/v1", tags=["openai-compatible"])
QUOTE_CHARS = 300


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # OpenAI clients send many parameters this endpoint ignores
    model: str = Field(description="the collection to answer from (GET /v1/models lists them)")
    messages: list[dict[str, Any]] = Field(min_length=1)
    stream: bool = False


@router.get("/models", summary="the collections, as models")
async def models(svc: Service = Depends(service)) -> dict[str, Any]:
    infos = await run_in_threadpool(svc.engine.collections)
    return {"object": "list", "data": [{"id": i.name, "object": "model", "created": _epoch(i.built_at),
                                        "owned_by": "ragcore"} for i in infos]}


@router.post("/chat/completions", summary="answer the last user message from the collection named by `model`")
async def chat(body: ChatRequest, request: Request, svc: Service = Depends(service)):
    try:  # the one collection rule (service/collections.py); 404 in OpenAI's words
        await resolved_async(svc, body.model, label="model")
    except CollectionRefused as exc:
        if exc.status != 404:
            raise
        raise ApiError(404, f"The model {body.model!r} does not exist: models are collections, GET /v1/models "
                            "lists them.", "model_not_found") from None
    ask = ask_of(body)
    if body.stream:
        run = await start_ask(svc, ask, label="model")
        return StreamingResponse(_chunks(run, request, body.model), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache"})
    answer = await answer_of(svc, ask)
    if answer.status == "error":
        raise ApiError(400, answer.error_message or "The question could not be answered.", "answer_error")
    created = int(time.time())
    return {"id": _id(answer), "object": "chat.completion", "created": created, "model": body.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer.answer + sources_text(answer)},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}, "ragcore": extra(answer)}


# ------------------------------------------------------------------ messages → question + history


def ask_of(body: ChatRequest) -> AskRequest:
    """The question the messages ask; 400 in OpenAI's shape for one the service refuses (too long)."""
    try:
        return AskRequest(question=question_of(body.messages), collection=body.model, history=history_of(body.messages))
    except ValidationError as exc:
        long = any(e.get("type") == "string_too_long" for e in exc.errors())
        raise ApiError(400, "messages: " + validation_message(exc.errors()).replace("question:", "the last user message:"),
                       "context_length_exceeded" if long else "invalid_request") from None


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: only the text ones count
        texts = [p.get("text") for p in content if isinstance(p, dict) and p.get("type") == "text"]
        if not all(isinstance(t, str) for t in texts):
            raise ApiError(400, "messages: a text content part's `text` must be a string", "invalid_request")
        return "".join(texts)
    return ""


def question_of(messages: list[dict[str, Any]]) -> str:
    if messages[-1].get("role") != "user" or not _text(messages[-1]).strip():
        raise ApiError(422, "messages: the last message must be a user message with text (the question)")
    return _text(messages[-1])


def history_of(messages: list[dict[str, Any]]) -> list[Turn]:
    """Earlier user messages each followed by an assistant reply, oldest first."""
    turns, pending = [], None
    for m in messages[:-1]:
        role = m.get("role")
        if role == "user":
            pending = _text(m)
        elif role == "assistant" and pending is not None:
            turns.append(Turn(question=pending[:4000], answer=_text(m)))
            pending = None
    return turns[-50:]


# ------------------------------------------------------------------ answer → reply


def quote(answer: Answer, c: Citation) -> str:
    """The cited lines of the evidence [n], shortened."""
    ev = next((e for e in answer.evidence if e.n == c.n), None)
    if ev is None:
        return ""
    lines = ev.chunk.text.splitlines()
    a, b = c.start_line - ev.chunk.start_line, c.end_line - ev.chunk.start_line + 1
    text = " ".join(x.strip() for x in (lines[a:b] if 0 <= a < b <= len(lines) else lines)).strip()
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1].rstrip() + "…"


def extra(answer: Answer) -> dict[str, Any]:
    conf = answer.confidence
    return {"status": answer.status, "request_id": answer.metadata.get("request_id"), "error_message": answer.error_message,
            "confidence": {"value": conf.value, "level": conf.level} if conf else None,
            "standalone_question": answer.metadata.get("standalone_question"),
            "citations": [{"n": c.n, "path": c.path, "start_line": c.start_line, "end_line": c.end_line,
                           "section": list(c.section), "page": c.page, "support": round(c.support, 4),
                           "quote": quote(answer, c)} for c in answer.citations]}


def sources_text(answer: Answer) -> str:
    if not answer.citations:
        return ""
    lines = []
    for c in answer.citations:
        where = f"{c.path}:{c.start_line}-{c.end_line}" + (f" (page {c.page})" if c.page is not None else "")
        lines.append(f"[{c.n}] {where}" + (f" § {' › '.join(c.section)}" if c.section else ""))
    return "\n\nSources:\n" + "\n".join(lines)


def _id(answer: Answer) -> str:
    return f"chatcmpl-{answer.metadata.get('request_id') or 'ragcore'}"


def _epoch(built_at: str | None) -> int:
    try:
        return int(datetime.fromisoformat(str(built_at).replace("Z", "+00:00")).timestamp())
    except ValueError:
        return 0


# ------------------------------------------------------------------ streamed reply


def _chunk(cid: str, model: str, delta: dict[str, Any], finish: str | None, **more: Any) -> bytes:
    obj = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
           "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], **more}
    return f"data: {dumps(obj)}\n\n".encode("utf-8")


async def _chunks(run, request: Request, model: str) -> AsyncIterator[bytes]:
    watcher = asyncio.create_task(watch_disconnect(request, run))
    cid = "chatcmpl-ragcore"
    try:
        async for ev in run.events():
            if ev.type == "started":
                cid = f"chatcmpl-{ev.request_id}"
                yield _chunk(cid, model, {"role": "assistant", "content": ""}, None)
            elif ev.type == "token":
                yield _chunk(cid, model, {"content": ev.data["text"]}, None)
            elif ev.type == "done":
                answer = ev.data.get("answer")
                if isinstance(answer, Answer):
                    if answer.status == "error":
                        yield _chunk(cid, model, {"content": answer.error_message or "The question could not be answered."}, None)
                    elif answer.citations:
                        yield _chunk(cid, model, {"content": sources_text(answer)}, None)
                    finish = "stop" if ev.data.get("status") == "ok" else "length"
                    yield _chunk(cid, model, {}, finish, ragcore=extra(answer))
                else:
                    yield _chunk(cid, model, {}, "length", ragcore={"status": "error", "error_message": "deadline"})
        yield b"data: [DONE]\n\n"
    finally:
        run.close()
        watcher.cancel()
