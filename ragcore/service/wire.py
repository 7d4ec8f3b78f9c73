"""The engine's event contract on the wire: ``started``, ``sources``, ``token``, ``message``,
``done``, ``error`` become ``rag.started`` … ``rag.error``, each a JSON object with
``type``, ``request_id``, ``seq``, ``ts`` (Unix seconds) and ``data``. The same objects travel as
Server-Sent Events (``event: rag.token`` / ``data: {...}``) and as WebSocket text messages."""

from __future__ import annotations

import json
from typing import Any

from ragcore.types import Event, to_jsonable

PREFIX = "rag."


def event_json(ev: Event) -> dict[str, Any]:
    return {"type": PREFIX + ev.type, "request_id": ev.request_id, "seq": ev.seq, "ts": round(ev.ts, 6),
            "data": to_jsonable(dict(ev.data))}


def dumps(obj: Any) -> str:
    """Strict JSON (no NaN), one line: an SSE ``data:`` field cannot hold a raw newline."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def sse(obj: dict[str, Any]) -> bytes:
    return f"event: {obj['type']}\ndata: {dumps(obj)}\n\n".encode("utf-8")
