"""Starting a background ingest from the app: a folder into a collection, or a collection brought up to
date from its own folder (ui/jobs.py runs it)."""

from __future__ import annotations

from pathlib import Path

from ragcore.settings.config import RagcoreSettings
from ragcore.types import IngestReport

from .jobs import STARTING, IngestJob
from .runtime import Runtime
from .session_settings import settings


def start_folder_ingest(
    rt: Runtime, folder: Path, collection: str, s: RagcoreSettings, *, rebuild: bool = False, label: str | None = None,
) -> IngestJob:
    """Ingest a folder into ``collection`` in the background (see ui/jobs.py), in a child process below the
    app's priority: the app's answers keep their speed meanwhile (bench/results/browser-ingest.md)."""
    from ragcore.engine.ingest_process import ingest_in_process
    from ragcore.ingest.run import discover

    root, files = discover([folder])
    sizes: dict[str, int] = {}
    for f in files:
        try:
            sizes[f.rel] = f.path.stat().st_size if f.path is not None else 0
        except OSError:
            sizes[f.rel] = 0
    job = IngestJob(collection=collection, label=label or f"Ingest of {folder}", root=str(root), sizes=sizes,
                    current=STARTING)

    def work(job: IngestJob) -> IngestReport:
        return ingest_in_process(rt.engine, [folder], collection, settings=s, rebuild=rebuild, progress=job.progress,
                                 chunk_progress=job.chunk_progress, started=job.worker_started, cancel=job.cancel_event)

    return rt.start_ingest(job, work)


def start_refresh(rt: Runtime, collection: str, root: str | None) -> IngestJob | None:
    """'Bring up to date': re-ingest the collection's own folder (unchanged files are skipped)."""
    if not root or not Path(root).is_dir():
        return None
    s = settings().with_(collection=collection)
    info = rt.info(collection)
    built = dict(info.settings or {}) if info is not None else {}
    if built.get("chunk_size") and built.get("chunk_overlap") is not None:  # keep the collection's own chunking
        s = s.with_(chunk_size=int(built["chunk_size"]), chunk_overlap=int(built["chunk_overlap"]))
    return start_folder_ingest(rt, Path(root), collection, s, label=f"Update from {root}")
