"""The engine's event contract on the wire: ``started``, ``sources``, ``token``, ``message``,
``done``, ``error`` become ``rag.started`` … ``rag.error``, each a JSON object with
``type``, ``request_id``, ``seq``, ``ts`` (Unix seconds) and ``data``. The same objects travel as
Server-Sent Events (``event: rag.token`` / ``data: {...}``) and as WebSocket text messages.

Everything the service sends is written by :func:`json_bytes`: what ``ragcore.types.to_jsonable``
makes of an object (the JSON ``ragcore ask --json`` prints), written by orjson straight from the
dataclasses. A 100-candidate retrieval pool (130 KB) takes ~1 ms; building the plain dicts first
and ``json.dumps`` took ~13 ms, most of what HTTP added to a request."""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Iterator

import orjson

from ragcore.types import Answer, Event, Validation, to_jsonable

PREFIX = "rag."
_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_SERIALIZE_NUMPY


def event_json(ev: Event) -> dict[str, Any]:
    return {"type": PREFIX + ev.type, "request_id": ev.request_id, "seq": ev.seq, "ts": round(ev.ts, 6),
            "data": dict(ev.data)}


def public_events(events: Iterator[Event]) -> Iterator[Event]:
    """The engine's events as they may leave the service (:func:`public_event`); closing this
    closes ``events`` at once (and with them the model's stream)."""
    try:
        for ev in events:
            yield public_event(ev)
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()


def public_event(ev: Event) -> Event:
    """``ev`` without what names the server's files: the answer's ``metadata.config`` is the
    settings it was made with, and ``data_dir`` there is an absolute server path."""
    answer = ev.data.get("answer") if ev.type == "done" else None
    config = answer.metadata.get("config") if isinstance(answer, Answer) else None
    if not isinstance(config, dict) or "data_dir" not in config:
        return ev
    config = {k: v for k, v in config.items() if k != "data_dir"}
    answer = dataclasses.replace(answer, metadata={**answer.metadata, "config": config})
    return dataclasses.replace(ev, data={**ev.data, "answer": answer})


def json_bytes(obj: Any) -> bytes:
    """``to_jsonable(obj)`` as strict UTF-8 JSON on one line (no NaN; no raw newline, which an SSE
    ``data:`` field cannot hold). A test checks that it reads back equal to ``to_jsonable``."""
    return orjson.dumps(shallow(obj), default=_dataclass, option=_OPTIONS)


def dumps(obj: Any) -> str:
    """:func:`json_bytes` as text (a WebSocket text message)."""
    return json_bytes(obj).decode("utf-8")


def sse(obj: dict[str, Any]) -> bytes:
    return b"event: " + obj["type"].encode("utf-8") + b"\ndata: " + json_bytes(obj) + b"\n\n"


_PLAIN = (str, int, bool, type(None))
_FIELDS: dict[type, tuple[str, ...] | None] = {}


def shallow(obj: Any) -> Any:
    """``obj`` with its plain containers made JSON's as ``to_jsonable`` makes them (floats rounded,
    non-finite ones null, keys as text, tuples as lists), down to the first dataclass, which is left
    for orjson to hand to :func:`_dataclass`. Exact types are tested first: this is the hot path."""
    t = type(obj)
    if t in _PLAIN:
        return obj
    if t is float:
        return round(obj, 6) if math.isfinite(obj) else None
    if t is tuple or t is list:
        return [shallow(v) for v in obj]
    if t is dict:
        return {str(k): shallow(v) for k, v in obj.items()}
    if (_FIELDS[t] if t in _FIELDS else _field_names(t)) is not None:
        return obj
    return to_jsonable(obj)  # paths, enums, sets, other mappings, Validation: the reference walk


def _dataclass(obj: Any) -> dict[str, Any]:
    """orjson's callback for what it cannot write itself: the dataclasses :func:`shallow` left."""
    names = _FIELDS.get(type(obj))
    if names is None:
        raise TypeError(f"{type(obj).__name__} is not JSON serialisable")
    return {n: shallow(getattr(obj, n)) for n in names}


def _field_names(t: type) -> tuple[str, ...] | None:
    """A dataclass's field names (those ``to_jsonable`` writes: not ``metadata["json"] = False``), or
    None for what only ``to_jsonable`` knows how to write
    (Validation adds its derived lists; paths, enums, mappings of other types)."""
    ok = dataclasses.is_dataclass(t) and not issubclass(t, Validation)
    names = tuple(f.name for f in dataclasses.fields(t) if f.metadata.get("json", True)) if ok else None
    _FIELDS[t] = names
    return names
