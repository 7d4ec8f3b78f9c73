"""Which collection a request reads: every route, job and stream of the service (``/api/*``, the
WebSocket, SSE, the OpenAI ``model``, uploads) goes through :func:`resolved`, which applies the one
name rule (``storage/names.resolve_collection``, the rule the CLI applies) and asks the store
whether the collection exists. A name that breaks the rule is refused with 422 before anything is
read or any folder is named after it; an unknown one is 404. Neither reply carries a path.

``resolved`` blocks (the store may have to be asked): routes call it in a worker thread.
"""

from __future__ import annotations

from fastapi.concurrency import run_in_threadpool

from ragcore.service.state import Service
from ragcore.storage.names import checked_name, resolve_collection


def resolved(svc: Service, name: str | None, *, must_exist: bool = True, label: str = "collection") -> str:
    """``name`` (None: the server's RAGCORE_COLLECTION) when a request may read it; raises
    ``CollectionRefused`` (422 or 404) otherwise. ``must_exist=False``: the rule only (a question
    on a selection alone reads no collection)."""
    wanted = svc.engine.settings.collection if name is None else name
    if not must_exist:
        return checked_name(wanted, label)
    return resolve_collection(wanted, svc.engine.store.exists, label)


async def resolved_async(svc: Service, name: str | None, *, must_exist: bool = True, label: str = "collection") -> str:
    return await run_in_threadpool(lambda: resolved(svc, name, must_exist=must_exist, label=label))
