"""The streamed ``/v1/chat/completions`` reply: only checked text, and errors as errors.

The model's raw tokens are never forwarded. The checker reads the whole answer, and a later
sentence (``RAGCORE_LLM_UNSUPPORTED_POLICY=extractive``) or a model failing mid-answer can
replace every earlier sentence, so nothing sent ahead of the verdict could be taken back. The
reply therefore waits for the checked answer (an SSE comment keeps proxies and clients from
timing out meanwhile) and streams its text (:func:`~ragcore.service.openai_reply.content`, the
same text the whole reply carries) sentence by sentence.

A question that fails, or passes the service's deadline, ends with an SSE error event in the
OpenAI shape (``data: {"error": {...}}``), which the openai SDKs raise as ``APIError``; it never
arrives as an assistant message with ``finish_reason: length``.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator, Iterator, TypeVar

from fastapi import Request

from ragcore.service.openai_reply import content, extra, finish_reason, pieces, usage
from ragcore.service.runner import QuestionRun, deadline_message
from ragcore.service.stream import HEARTBEAT_S, watch_disconnect
from ragcore.service.wire import dumps
from ragcore.types import Answer, Event

T = TypeVar("T")
KEEP_ALIVE = b": checking\n\n"


def chunk(cid: str, model: str, delta: dict[str, Any], finish: str | None, **more: Any) -> bytes:
    obj = {"id": cid, "object": "chat.completion.chunk", "created": int(time.time()), "model": model,
           "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}], **more}
    return f"data: {dumps(obj)}\n\n".encode("utf-8")


def error_event(message: str, code: str) -> bytes:
    return f"data: {dumps({'error': {'message': message, 'type': code, 'code': code, 'param': None}})}\n\n".encode("utf-8")


async def reply(run: QuestionRun, request: Request, model: str, messages_chars: int) -> AsyncIterator[bytes]:
    """The SSE body: the role, keep-alive comments while the answer is made and checked, then
    the checked text in pieces and a final chunk (or an error event)."""
    watcher = asyncio.create_task(watch_disconnect(request, run))
    cid = "chatcmpl-ragcore"
    try:
        async for ev in _ticking(run.events(), HEARTBEAT_S):
            if ev is None:
                yield KEEP_ALIVE
            elif ev.type == "started":
                cid = f"chatcmpl-{ev.request_id}"
                yield chunk(cid, model, {"role": "assistant", "content": ""}, None)
            elif ev.type == "done":
                failed = _failure(ev, run)
                if failed is not None:
                    yield error_event(*failed)
                    return
                for part in _answer_chunks(cid, model, ev.data["answer"], messages_chars):
                    yield part
        yield b"data: [DONE]\n\n"
    finally:
        run.close()
        watcher.cancel()


def _failure(ev: Event, run: QuestionRun) -> tuple[str, str] | None:
    """(message, code) when the question ended without an answer to give."""
    answer = ev.data.get("answer")
    if ev.data.get("status") == "cancelled" or not isinstance(answer, Answer):
        if ev.data.get("reason") == "deadline" or run.reason == "deadline":
            return deadline_message(run.deadline_s), "deadline_exceeded"
        return "The question was cancelled before it was answered.", "cancelled"
    if answer.status == "error":
        return answer.error_message or "The question could not be answered.", "answer_error"
    return None


def _answer_chunks(cid: str, model: str, answer: Answer, messages_chars: int) -> Iterator[bytes]:
    for part in pieces(content(answer)):
        yield chunk(cid, model, {"content": part}, None)
    yield chunk(cid, model, {}, finish_reason(answer), usage=usage(answer, messages_chars), ragcore=extra(answer))


async def _ticking(events: AsyncIterator[T], interval: float) -> AsyncIterator[T | None]:
    """``events``, with a None each time ``interval`` seconds pass without one."""
    it = events.__aiter__()
    nxt = asyncio.ensure_future(it.__anext__())
    try:
        while True:
            done, _ = await asyncio.wait({nxt}, timeout=interval)
            if not done:
                yield None
                continue
            try:
                item = nxt.result()
            except StopAsyncIteration:
                return
            yield item
            nxt = asyncio.ensure_future(it.__anext__())
    finally:
        nxt.cancel()
