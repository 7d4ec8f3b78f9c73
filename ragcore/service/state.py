"""What every route shares: the engine, the service settings, the question slots and the ingest
jobs. One per app (``app.state.service``); a route gets it with ``Depends(service)``."""

from __future__ import annotations

from dataclasses import dataclass

from fastapi import Request

from ragcore.service.jobs import Jobs
from ragcore.service.limits import Slots
from ragcore.settings.service import ServiceSettings


@dataclass
class Service:
    engine: object  # ragcore.engine.engine.Engine (typed loosely: FastAPI inspects annotations)
    settings: ServiceSettings
    slots: Slots
    jobs: Jobs


async def service(request: Request) -> Service:
    # async on purpose: FastAPI runs a plain-function dependency in its thread pool, a thread hop
    # (and a wait for a free thread under load) on every request for one attribute lookup
    return request.app.state.service
