"""Collections from git: ingest a ref (full, or only what changed since the recorded commit), record
the source, report staleness, and group collections by repository and ref.

The engine's ``ingest_ref`` is this module's :func:`ingest_ref`; the CLI, the HTTP ingest job and
the Library page call it. A re-ingest reads only the files ``git diff -M`` names between the
collection's recorded commit and the ref's commit now, and every ingest of a repository's refs
shares one content-hash vector cache (storage/vector_cache.py): a chunk that another ref or
commit already embedded is never embedded again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ragcore.ingest import gitrepo
from ragcore.ingest.gitsource import ChangePlan, SourceRecord, TreeFiles, change_plan, folder_record, ref_record, \
    staleness, tree_files
from ragcore.ingest.run import ChunkProgress, Progress, ingest, index_fingerprint, model_key
from ragcore.settings.config import RagcoreSettings
from ragcore.storage.schema import check_collection_name
from ragcore.storage.vector_cache import VectorCache
from ragcore.types import FileOutcome, IngestReport

Engine = Any  # the Engine (engine.py), which calls this module: named, not imported (no cycle)


@dataclass(frozen=True)
class RefIngest:
    """What an ingest of a ref will do, decided before anything is written."""

    record: SourceRecord
    files: TreeFiles
    plan: ChangePlan | None  # None: a full ingest (new collection, other repository, settings changed)
    fingerprint: str
    previous: dict[str, Any] | None = None  # the collection's source record before this ingest


def ingest_ref(
    engine: Engine, repository: str | Path, ref: str, collection: str | None = None, *,
    settings: RagcoreSettings | None = None, progress: Progress | None = None, calibrate: bool = True,
    rebuild: bool = False, full: bool = False, chunk_progress: ChunkProgress | None = None,
) -> IngestReport:
    """Ingest the tree of ``ref`` (branch, tag or commit) of ``repository`` into ``collection``,
    reading git objects only. ``full``: read every file even when the collection holds an
    earlier commit of the same repository (otherwise only the changed files are read)."""
    s = settings or engine.settings
    name = collection or s.collection
    check_collection_name(name)
    repo = gitrepo.open_repo(repository)
    if rebuild and engine.store.exists(name):
        engine.drop(name)
    encoder = engine._ingest_encoder(name, s)
    key = model_key(encoder.record())
    work = plan_ref_ingest(engine, repo, ref, name, s, key, full=full)
    cache = VectorCache.for_repository(Path(s.data_dir), work.record.repo_id or "none", key)
    remove = work.plan.remove | _gone(work) if work.plan else frozenset()
    try:
        with engine.store.session():
            if work.previous:  # until this ingest ends, the stored files are no commit's: the next one reads all
                engine.store.write_meta(name, {"source": {**work.previous, "pending": work.record.commit}})
            report = ingest(work.files.sources, root=str(repo.location), collection=name, store=engine.store,
                            encoder=encoder, settings=s, prune=work.plan is None, remove=remove, cache=cache,
                            progress=progress, chunk_progress=chunk_progress)
            engine.store.write_meta(name, {"source": {**work.record.as_meta(), "fingerprint": work.fingerprint}})
            report = engine._after_write(name, s, calibrate, report, progress, len(work.files.sources))
    finally:
        cache.close()
    skipped = tuple(FileOutcome(k.path, "skipped", reason=k.reason) for k in work.files.skipped)
    return replace(report, skipped=skipped, source=work.record.as_meta(), incremental=work.plan is not None)


def plan_ref_ingest(engine: Engine, repo: gitrepo.Repo, ref: str, name: str, s: RagcoreSettings, key: str, *,
                    full: bool = False) -> RefIngest:
    """Full or incremental: incremental when the collection was built from this repository under
    the same settings and model, and its commit is still in the repository."""
    record = ref_record(repo, ref)
    fingerprint = index_fingerprint(s, key)
    meta = engine.store.read_meta(name) if engine.store.exists(name) else {}
    old = SourceRecord.from_meta(meta.get("source"))
    previous = dict(meta.get("source") or {})
    same = (old.repo_id == record.repo_id and old.mode in ("ref", "commit") and old.commit
            and previous.get("fingerprint") == fingerprint and not previous.get("pending"))
    plan = None
    if same and not full and gitrepo.has_commit(repo, str(old.commit)):
        plan = change_plan(repo, str(old.commit), str(record.commit))
    files = tree_files(repo, str(record.commit), max_bytes=s.max_file_bytes,
                       only=set(plan.read) if plan is not None else None)
    return RefIngest(record, files, plan, fingerprint, previous or None)


def _gone(work: RefIngest) -> frozenset[str]:
    """Changed paths that are not read any more (now binary, an LFS pointer, another type, too
    large): their old chunks go, as a full ingest would not have them."""
    assert work.plan is not None
    kept = {src.rel for src in work.files.sources if src.problem is None}
    return frozenset(work.plan.read - kept)


def record_folder_source(engine: Engine, name: str, root: Path) -> dict[str, Any]:
    """After a folder ingest: the folder's work tree HEAD and dirty state, when it is inside one."""
    source = folder_record(root).as_meta()
    engine.store.write_meta(name, {"source": source})
    return source


# ------------------------------------------------------------------ listing


def collection_sources(engine: Engine, *, check: bool = True) -> list[dict[str, Any]]:
    """Each collection with its source record and staleness (None: not built from git, or not
    ``check``ed: a few git commands per collection)."""
    out = []
    for info in engine.collections():
        record = SourceRecord.from_meta(info.source)
        stale = staleness(record) if check else None
        out.append({"name": info.name, "source": _public(info.source), "staleness": stale.as_dict() if stale else None})
    return out


def _public(source: Any) -> dict[str, Any]:
    return {k: v for k, v in dict(source or {}).items() if k != "fingerprint"}


def projects(engine: Engine, *, check: bool = True) -> list[dict[str, Any]]:
    """Repositories → refs → collections, from the collections' source records (``id``: the
    repository's id, which names its vector cache; ``check``: with each collection's staleness)."""
    repos: dict[str, dict[str, Any]] = {}
    for row in collection_sources(engine, check=check):
        src = row["source"]
        if not src.get("repo_id"):
            continue
        repo = repos.setdefault(src["repo_id"], {"id": src["repo_id"], "repository": src.get("repository"),
                                                 "remote": src.get("remote"), "refs": {}})
        ref = repo["refs"].setdefault(src.get("ref") or src.get("commit"), {"ref": src.get("ref"), "collections": []})
        ref["collections"].append({"name": row["name"], "mode": src.get("mode"), "commit": src.get("commit"),
                                   "commit_time": src.get("commit_time"), "dirty": src.get("dirty"),
                                   "staleness": row["staleness"]})
    return [{**r, "refs": list(r["refs"].values())} for r in repos.values()]


def project_repository(engine: Engine, project: str, ref: str) -> tuple[str, str] | None:
    """(the repository's folder, the collection a ref of it goes to by default) of a known project;
    None when no collection was built from it. GitError when ``ref`` names nothing in it."""
    for p in projects(engine, check=False):
        if p["id"] != project or not p.get("repository"):
            continue
        gitrepo.resolve(gitrepo.open_repo(p["repository"]), ref)  # a clear message now, not a failed job later
        same = [c["name"] for r in p["refs"] if r["ref"] == ref for c in r["collections"] if c["mode"] != "path"]
        return p["repository"], same[0] if same else default_collection_name(p["repository"], ref)
    return None


def default_collection_name(repository: str, ref: str) -> str:
    """``<repository>-<ref>`` with what a collection name may not hold replaced by ``-``."""
    import re

    raw = f"{Path(repository).name.removesuffix('.git')}-{ref}"
    return re.sub(r"[^A-Za-z0-9_-]+", "-", raw).strip("-")[:60] or "repository"
