"""The event contract's one producer: ``started``, ``sources``, ``token``, ``message``,
``done`` {status: ok | cancelled | error}, ``error`` — each with request_id, seq and a timestamp."""

from __future__ import annotations

import itertools
import time
from typing import Any

from ragcore.types import Event, EventType


class EventFactory:
    """Numbers one request's events in order."""

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        self._seq = itertools.count()

    def __call__(self, event_type: EventType, /, **data: Any) -> Event:
        return Event(type=event_type, request_id=self.request_id, seq=next(self._seq), ts=time.time(), data=data)
