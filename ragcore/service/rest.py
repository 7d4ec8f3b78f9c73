"""REST: health, collections, documents, retrieval, answers, ingest jobs."""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Any, Callable, Generator, Iterator

from fastapi import APIRouter, Depends, Request, Response
from fastapi.concurrency import run_in_threadpool

from ragcore.service.collections import resolved, resolved_async
from ragcore.service.errors import ApiError
from ragcore.service.gitroutes import sources_by_name
from ragcore.service.runner import start_question, run_blocking
from ragcore.service.schemas import AskRequest, RetrieveRequest, request_settings, stream_kwargs
from ragcore.service.state import Service, service
from ragcore.service.wire import json_bytes, public_events
from ragcore.storage.store import StoreError
from ragcore.types import Event

router = APIRouter()
ANSWER_JSON = "answer_json"  # in a done event inside the service only: its answer, written in the worker thread


@router.get("/healthz", tags=["service"], summary="liveness (no key needed)")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/api/collections", tags=["corpus"], summary="every collection with its stats")
async def collections(svc: Service = Depends(service)) -> list[dict[str, Any]]:
    infos = await run_in_threadpool(svc.engine.collections)
    git = await run_in_threadpool(sources_by_name, svc.engine)  # source and staleness (gitroutes.py)
    # a damaged or busy collection is listed with its state and what recovers it (its problem), beside the others
    return [{"name": i.name, "documents": i.documents, "chunks": i.chunks, "corpus_version": i.corpus_version,
             "built_at": i.built_at, "model": i.embedding_model, "state": i.state, "snapshot": i.snapshot,
             "problem": i.problem, **git.get(i.name, {"source": None, "staleness": None})} for i in infos]


@router.get("/api/collections/{name}/documents", tags=["corpus"], summary="a collection's documents")
async def documents(name: str, svc: Service = Depends(service)) -> list[dict[str, Any]]:
    name = await resolved_async(svc, name)
    docs = await run_in_threadpool(svc.engine.documents, name)
    return [{"path": p, "chunks": n} for p, n in docs]


# The two hot routes are served by lean.py (the same functions below, without FastAPI's
# per-request machinery); these declarations document them in /openapi.json and serve them
# when the app is built with lean_routes=False.
@router.post("/api/retrieve", tags=["questions"], summary="the ranked pool with every score and cut reason",
             response_class=Response)
async def retrieve(body: RetrieveRequest, svc: Service = Depends(service)) -> Response:
    return Response(await retrieve_reply(svc, body), media_type="application/json")


@router.post("/api/ask", tags=["questions"], summary="the Answer contract as JSON (as `ragcore ask --json` prints it)",
             response_class=Response)
async def ask(body: AskRequest, svc: Service = Depends(service)) -> Response:
    return Response(await ask_reply(svc, body), media_type="application/json")


async def retrieve_reply(svc: Service, body: RetrieveRequest) -> bytes:
    """``POST /api/retrieve``'s JSON: the ranked pool."""
    s = request_settings(svc.engine.settings, body)

    def work() -> bytes:  # resolved and serialised in the worker thread: the event loop stays free
        return json_bytes(svc.engine.retrieve(body.question, s, collection=resolved(svc, s.collection)))

    try:
        return await run_blocking(svc.slots, svc.settings.deadline_s, work)
    except StoreError as exc:  # an existing collection that cannot be read (the message has no path: errors.py)
        raise ApiError(503, str(exc)) from None


async def ask_reply(svc: Service, body: AskRequest) -> bytes:
    """``POST /api/ask``'s JSON: the Answer contract, written once (wire.py; FastAPI's own encoder
    would walk a large answer several times) and in the question's worker thread: a 140 KB answer
    is 1.5-3 ms of CPU, which on the event loop held up every other request."""
    done = await _done(svc, body, _written)
    written = done.data.get(ANSWER_JSON)
    if written is None or done.data.get("status") == "cancelled":  # the runner may have changed a cancelled answer
        return json_bytes(done.data["answer"])
    return written


async def answer_of(svc: Service, body: AskRequest):
    """Run a question to its end; the final Answer (504 when the engine produced none in time)."""
    return (await _done(svc, body)).data["answer"]


async def _done(svc: Service, body: AskRequest, wrap: Callable[[Iterator[Event]], Iterator[Event]] | None = None) -> Event:
    """The question's ``done`` event, with an answer (504 when the engine produced none in time);
    ``wrap`` sees the engine's events in the worker thread."""
    kwargs = stream_kwargs(svc.engine.settings, body)

    def produce(cancel: threading.Event) -> Iterator[Event]:
        kwargs["collection"] = resolved(svc, kwargs["collection"], must_exist=kwargs["context"] != "selection")
        events = public_events(svc.engine.stream(body.question, cancel=cancel, **kwargs))
        return events if wrap is None else wrap(events)

    run = await start_question(svc.slots, svc.settings.deadline_s, produce, keep=lambda ev: ev.type == "done")
    done = None
    try:
        async for ev in run.events():
            if ev.type == "done":
                done = ev
    finally:
        run.close()  # a client that went away stops the question
    if done is None or done.data.get("answer") is None:
        raise ApiError(504, f"The question passed this service's deadline of {svc.settings.deadline_s:g} s "
                            "before any answer was ready.")
    return done


def _written(events: Generator[Event, None, None]) -> Iterator[Event]:
    """The engine's events, the final answer's JSON added to ``done`` (under ``ANSWER_JSON``)."""
    try:
        for ev in events:
            if ev.type == "done" and ev.data.get("answer") is not None:
                ev = replace(ev, data={**ev.data, ANSWER_JSON: json_bytes(ev.data["answer"])})
            yield ev
    finally:
        events.close()  # the runner's close reaches the engine's generator (and the model's stream) at once


@router.post("/api/collections/{name}/ingest", tags=["corpus"], status_code=202,
             summary="add uploaded files (multipart, field `files`) to a collection; returns a job")
async def ingest(name: str, request: Request, svc: Service = Depends(service)) -> dict[str, Any]:
    name = resolved(svc, name, must_exist=False)  # the rule only (no I/O): refused at once (422), not as a failed job
    form = await request.form(max_files=10_000, max_fields=100, max_part_size=svc.settings.max_upload_bytes)
    files: list[tuple[str, bytes]] = []
    for item in form.getlist("files"):
        if isinstance(item, str) or not getattr(item, "filename", None):
            raise ApiError(422, "files: each part must be a file upload with a file name")
        files.append((PurePosixPath(item.filename.replace("\\", "/")).name, await item.read()))
    await form.close()
    if not files:
        raise ApiError(422, "files: send at least one file (multipart/form-data, field name `files`)")
    twice = sorted(n for n, count in Counter(n for n, _ in files).items() if count > 1)
    if twice:  # one path, one text: two uploads under one name were once stored as two documents
        raise ApiError(422, f"files: each file name may appear once in a request; sent more than once: {', '.join(map(repr, twice[:5]))}")
    return svc.jobs.submit(name, files).public()


@router.get("/api/jobs/{job_id}", tags=["corpus"], summary="an ingest job's state and progress")
async def job(job_id: str, svc: Service = Depends(service)) -> dict[str, Any]:
    return _found(job_id, svc.jobs.get(job_id))


@router.delete("/api/jobs/{job_id}", tags=["corpus"], summary="cancel an ingest job")
async def cancel_job(job_id: str, svc: Service = Depends(service)) -> dict[str, Any]:
    return _found(job_id, svc.jobs.cancel(job_id))


def _found(job_id: str, state: dict[str, Any] | None) -> dict[str, Any]:
    if state is None:
        raise ApiError(404, f"There is no job {job_id!r} (finished jobs are forgotten after a while).")
    return state
