"""The ASGI app: routes by concern (rest, stream, openai_compat), middleware for keys, limits,
the access log and (only when origins are configured) CORS, JSON errors, and the lean layer that
serves the two hot routes without FastAPI's per-request machinery (lean.py)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware

from ragcore.service import gitroutes, openai_compat, rest, stream
from ragcore.service.auth import BearerAuth
from ragcore.service.errors import install_error_handlers
from ragcore.service.mcp.http import mount_mcp
from ragcore.service.guard import BrowserGuard
from ragcore.service.jobs import Jobs
from ragcore.service.lean import LeanRoutes
from ragcore.service.limits import AccessLog, BodyLimit, Slots, keep_query_strings_out_of_logs
from ragcore.service.state import Service
from ragcore.settings.config import RagcoreSettings
from ragcore.settings.service import ServiceSettings

DESCRIPTION = """ragcore's engine over HTTP: grounded answers with citations (the Answer contract),
the event contract as Server-Sent Events and over a WebSocket, and an OpenAI-compatible chat
endpoint whose models are the collections. See docs/18-using-the-http-api.md."""


def create_app(engine: Any, settings: ServiceSettings, *, close_engine: bool = False, lean_routes: bool = True) -> FastAPI:
    """The app over ``engine`` (one per process; the caller keeps ownership unless ``close_engine``).
    ``lean_routes=False`` serves the two hot routes through FastAPI too (lean.py): the reference
    a test compares the lean layer's replies with."""
    jobs = Jobs(lambda files, name, progress: engine.ingest_uploads(files, name, progress=progress), keep=settings.max_jobs,
                folder=Path(engine.settings.data_dir) / "serve-jobs")

    @asynccontextmanager
    async def lifespan(_: FastAPI):
        threading.Thread(target=_warm, args=(engine,), name="ragcore-serve-warm", daemon=True).start()
        try:
            async with mcp_running():
                yield
        finally:
            jobs.close()
            app.state.service.slots.close()
            if close_engine:
                engine.close()

    keep_query_strings_out_of_logs()  # uvicorn's own lines print them (a key sent in a URL)
    app = FastAPI(title="ragcore", description=DESCRIPTION, version=_version(), lifespan=lifespan,
                  docs_url="/docs", redoc_url=None, openapi_url="/openapi.json")
    app.state.service = Service(engine=engine, settings=settings, jobs=jobs,
                                slots=Slots(settings.max_concurrent, settings.max_queued, settings.retry_after_s))
    install_error_handlers(app)
    for module in (rest, stream, openai_compat, gitroutes):
        app.include_router(module.router)
    mcp_running = mount_mcp(app, app.state.service)  # /mcp (ragcore/service/mcp/http.py); a no-op without the mcp extra
    # added innermost first: the access log sees every refusal (401, 403, 413) with its status
    if lean_routes:
        app.add_middleware(LeanRoutes, service=app.state.service)
    app.add_middleware(BearerAuth, keys=settings.api_keys)
    app.add_middleware(BodyLimit, max_body=settings.max_body_bytes, max_upload=settings.max_upload_bytes)
    app.add_middleware(BrowserGuard, settings=settings)  # Host and Origin, with or without keys (guard.py)
    app.add_middleware(AccessLog)
    if settings.cors_origins:  # off unless configured: no Access-Control-* header is ever sent otherwise
        app.add_middleware(CORSMiddleware, allow_origins=list(settings.cors_origins), allow_methods=["GET", "POST", "DELETE"],
                           allow_headers=["Authorization", "Content-Type"])
    return app


def app_from_env() -> FastAPI:
    """The app of one uvicorn worker (``ragcore serve --workers N``): settings and engine from the
    environment the parent process validated and completed."""
    from ragcore.engine.engine import Engine

    return create_app(Engine(worker_settings()), ServiceSettings.from_env(os.environ), close_engine=True)


def worker_settings() -> RagcoreSettings:
    """A worker's settings: the one resolver (ragcore/settings/resolve.py) over the environment the parent
    wrote its options into, so every worker reads the files and variables the parent read."""
    return RagcoreSettings.from_env()


def _warm(engine: Any) -> None:
    """A head start for the first question: the default collection's indexes, and the OpenAI SDK
    when an LLM is configured (importing it takes seconds on a busy machine)."""
    engine.warm(engine.settings.collection)
    if engine.settings.llm.configured:
        import openai  # noqa: F401


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("ragcore")
    except Exception:  # noqa: BLE001 - a checkout that was never installed
        return "0"
