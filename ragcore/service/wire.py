"""The engine's event contract on the wire: ``started``, ``sources``, ``token``, ``message``,
``done``, ``error`` become ``rag.started`` … ``rag.error``, each a JSON object with
``type``, ``request_id``, ``seq``, ``ts`` (Unix seconds) and ``data``. The same objects travel as
Server-Sent Events (``event: rag.token`` / ``data: {...}``) and as WebSocket text messages."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from ragcore.types import Event, Validation, to_jsonable

PREFIX = "rag."


def event_json(ev: Event) -> dict[str, Any]:
    return {"type": PREFIX + ev.type, "request_id": ev.request_id, "seq": ev.seq, "ts": round(ev.ts, 6),
            "data": jsonable(dict(ev.data))}


def dumps(obj: Any) -> str:
    """Strict JSON (no NaN), one line: an SSE ``data:`` field cannot hold a raw newline."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def sse(obj: dict[str, Any]) -> bytes:
    return f"event: {obj['type']}\ndata: {dumps(obj)}\n\n".encode("utf-8")


_PLAIN = (str, int, bool, type(None))
_FIELDS: dict[type, tuple[str, ...] | None] = {}


def jsonable(obj: Any) -> Any:
    """:func:`ragcore.types.to_jsonable`'s result, computed faster for the shapes a retrieval pool
    and an answer are made of (a 50-candidate pool took ~45 ms through it, most of the time of a
    request): exact types are tested first and each dataclass's field names are looked up once.
    Anything else goes to ``to_jsonable`` itself; a test checks that both agree on real results."""
    t = type(obj)
    if t in _PLAIN:
        return obj
    if t is float:
        return round(obj, 6) if math.isfinite(obj) else None
    if t is tuple or t is list:
        return [jsonable(v) for v in obj]
    if t is dict:
        return {str(k): jsonable(v) for k, v in obj.items()}
    names = _FIELDS[t] if t in _FIELDS else _field_names(t)
    if names is None:
        return to_jsonable(obj)
    return {n: jsonable(getattr(obj, n)) for n in names}


def _field_names(t: type) -> tuple[str, ...] | None:
    """A dataclass's field names (those ``to_jsonable`` writes: not ``metadata["json"] = False``), or
    None for what only ``to_jsonable`` knows how to write
    (Validation adds its derived lists; paths, enums, mappings of other types)."""
    ok = dataclasses.is_dataclass(t) and not issubclass(t, Validation)
    names = tuple(f.name for f in dataclasses.fields(t) if f.metadata.get("json", True)) if ok else None
    _FIELDS[t] = names
    return names
