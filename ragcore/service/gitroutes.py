"""Collections from git over HTTP: projects (repositories → refs → collections) and ingest jobs
that read a ref.

A client never names a folder of the server: it names a project by the id ``GET /api/projects``
lists, i.e. a repository that was first ingested on this machine (``ragcore ingest REPO --ref``, or
the app's Library). Repositories go out by folder name only; no server path leaves the service.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from fastapi import APIRouter, Depends
from fastapi.concurrency import run_in_threadpool
from pydantic import BaseModel, Field

from ragcore.ingest.gitrepo import GitError
from ragcore.service.errors import ApiError
from ragcore.service.state import Service, service
from ragcore.storage.names import CollectionRefused, checked_name

router = APIRouter()


class RefIngestRequest(BaseModel):
    ref: str = Field(min_length=1, max_length=250, description="a branch, tag or commit id of the project's repository")
    collection: str | None = Field(None, description="the collection to build (default: the project's collection "
                                                     "already built from this ref, else `<repository>-<ref>`)")
    full: bool = Field(False, description="read every file, not only those changed since the collection's commit")


def public_source(source: dict[str, Any] | None) -> dict[str, Any] | None:
    """A source record as the API shows it: the repository by its folder name, no internal keys."""
    if not source:
        return None
    out = {k: v for k, v in source.items() if k not in ("fingerprint", "repository")}
    out["repository"] = PurePath(str(source["repository"])).name if source.get("repository") else None
    return out


def sources_by_name(engine: Any) -> dict[str, dict[str, Any]]:
    """{collection: {source, staleness}} with public sources (for ``GET /api/collections``)."""
    from ragcore.engine.gitingest import collection_sources

    return {r["name"]: {"source": public_source(r["source"]), "staleness": r["staleness"]}
            for r in collection_sources(engine)}


@router.get("/api/projects", tags=["corpus"], summary="git repositories → refs → collections, with staleness")
async def projects(svc: Service = Depends(service)) -> list[dict[str, Any]]:
    from ragcore.engine.gitingest import projects as list_projects

    rows = await run_in_threadpool(list_projects, svc.engine)
    return [_public_project(p) for p in rows]


def _public_project(p: dict[str, Any]) -> dict[str, Any]:
    name = PurePath(str(p["repository"])).name if p.get("repository") else None
    return {"id": p["id"], "repository": name, "remote": p.get("remote"), "refs": p["refs"]}


@router.post("/api/projects/{project}/ingest", tags=["corpus"], status_code=202,
             summary="ingest a ref of a known repository into a collection (only changed files are read again); a job")
async def ingest_ref(project: str, body: RefIngestRequest, svc: Service = Depends(service)) -> dict[str, Any]:
    from ragcore.engine.gitingest import project_repository

    try:
        found = await run_in_threadpool(project_repository, svc.engine, project, body.ref)
    except GitError as exc:
        raise ApiError(422, f"ref: {exc}") from None
    if found is None:
        raise ApiError(404, f"There is no project {project!r}; GET /api/projects lists them (a repository is "
                            "added by a first ingest on the server: ragcore ingest REPO --ref REF).")
    repository, default_name = found
    name = body.collection or default_name
    try:
        checked_name(name)  # the service's one name rule (storage/names.py): a new collection may not exist yet
    except CollectionRefused as exc:
        raise ApiError(exc.status, exc.reason) from None
    engine = svc.engine
    return svc.jobs.submit_call(name, lambda progress: engine.ingest_ref(
        repository, body.ref, name, progress=progress, full=body.full)).public()
