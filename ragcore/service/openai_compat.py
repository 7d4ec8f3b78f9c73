"""An OpenAI-compatible front door: ``GET /v1/models`` lists the collections as models, and
``POST /v1/chat/completions`` (streamed or not) answers the last user message from the collection
named by ``model``, the earlier user/assistant pairs being the conversation history.

The reply's text is the checked answer with its ``[n]`` markers, a one-line status when the answer is
not ``ok``, and a "Sources:" list of what it cites (openai_reply.py); a streamed reply carries the same
text, sent once checked (openai_stream.py). The citations also travel in an extra top-level field
``ragcore`` (status, request_id, the follow-up made standalone, citations with path, lines, section,
page and a short quote), which OpenAI SDKs keep (``completion.ragcore`` in Python and JavaScript). Sampling parameters (temperature, max_tokens …)
are accepted and ignored: the answer comes from the engine's settings. System messages are ignored.
``n`` > 1, ``tools`` and a non-text ``response_format`` are refused with a 400: they would change
what the reply means. ``usage`` is an estimate (characters / 4).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ragcore.service import openai_stream
from ragcore.service.collections import resolved_async
from ragcore.service.errors import ApiError, validation_message
from ragcore.service.openai_reply import content, extra, finish_reason, refuse_unsupported, usage
from ragcore.service.rest import answer_of
from ragcore.service.runner import deadline_message
from ragcore.service.schemas import AskRequest, Turn
from ragcore.service.state import Service, service
from ragcore.service.stream import start_ask
from ragcore.storage.names import CollectionRefused
from ragcore.types import Answer

router = APIRouter(prefix="/v1", tags=["openai-compatible"])


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # OpenAI clients send many parameters this endpoint ignores
    model: str = Field(description="the collection to answer from (GET /v1/models lists them)")
    messages: list[dict[str, Any]] = Field(min_length=1)
    stream: bool = False


@router.get("/models", summary="the collections, as models")
async def models(svc: Service = Depends(service)) -> dict[str, Any]:
    infos = await run_in_threadpool(svc.engine.collections)
    return {"object": "list", "data": [_model(i) for i in infos]}


@router.get("/models/{model_id}", summary="one collection, as a model")
async def model(model_id: str, svc: Service = Depends(service)) -> dict[str, Any]:
    infos = await run_in_threadpool(svc.engine.collections)
    found = next((i for i in infos if i.name == model_id), None)
    if found is None:
        raise _no_model(model_id)
    return _model(found)


def _model(info: Any) -> dict[str, Any]:
    return {"id": info.name, "object": "model", "created": _epoch(info.built_at), "owned_by": "ragcore"}


def _no_model(name: str) -> ApiError:
    return ApiError(404, f"The model {name!r} does not exist: models are collections, GET /v1/models lists them.",
                    "model_not_found")


@router.post("/chat/completions", summary="answer the last user message from the collection named by `model`")
async def chat(body: ChatRequest, request: Request, svc: Service = Depends(service)):
    refuse_unsupported(body.model_extra or {})
    try:  # the one collection rule (service/collections.py); 404 in OpenAI's words
        await resolved_async(svc, body.model, label="model")
    except CollectionRefused as exc:
        if exc.status != 404:
            raise
        raise _no_model(body.model) from None
    ask = ask_of(body)
    sent = sum(len(_text(m)) for m in body.messages)
    if body.stream:
        run = await start_ask(svc, ask, label="model")
        return StreamingResponse(openai_stream.reply(run, request, body.model, sent), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    answer = await answer_of(svc, ask)
    if answer.status == "error":
        raise ApiError(400, answer.error_message or "The question could not be answered.", "answer_error")
    if answer.metadata.get("deadline_s") is not None:  # the service's deadline stopped it: an error, as when streamed
        raise ApiError(504, deadline_message(svc.settings.deadline_s))
    return {"id": _id(answer), "object": "chat.completion", "created": int(time.time()), "model": body.model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content(answer)},
                         "logprobs": None, "finish_reason": finish_reason(answer)}],
            "usage": usage(answer, sent), "ragcore": extra(answer)}


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


def _id(answer: Answer) -> str:
    return f"chatcmpl-{answer.metadata.get('request_id') or 'ragcore'}"


def _epoch(built_at: str | None) -> int:
    try:
        return int(datetime.fromisoformat(str(built_at).replace("Z", "+00:00")).timestamp())
    except ValueError:
        return 0
