"""Copy a data folder's local-mode collections into Qdrant Edge, once.

Versions before Edge kept the embedded store in qdrant-client's local mode (``<data dir>/qdrant``).
The first time a Store opens Edge on such a folder it copies every collection there (chunks, the
collections' metadata, the shared heading vectors) point for point, vectors and payloads as they
are, then writes ``migrated-from-local.json``; the local folder is left untouched (delete it when
you no longer want to go back: ``RAGCORE_EMBEDDED_ENGINE=local`` still reads it).

Safe to interrupt: the marker is written last, and a collection found half-copied on the next open
is copied again from the start (point ids are the same, so nothing is duplicated).
"""

from __future__ import annotations

import json
import logging
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from ragcore.storage.edge_client import EdgeClient

MARKER = "migrated-from-local.json"
BATCH = 512

# (collection, points copied so far, points in the collection): after each batch, so a caller
# can show a copy that takes minutes at a million points
CopyProgress = Callable[[str, int, int], None]

log = logging.getLogger(__name__)


def _local_collections(local: Path) -> list[str]:
    try:
        meta = json.loads((local / "meta.json").read_text("utf-8"))
    except (OSError, ValueError):
        return []
    return sorted(meta.get("collections") or {}) if isinstance(meta, dict) else []


def migration_pending(local: Path, edge_root: Path) -> bool:
    """Whether ``local`` has collections that were never copied to ``edge_root``."""
    return not (edge_root / MARKER).exists() and bool(_local_collections(local))


def migrate_local(local: Path, edge: EdgeClient, progress: CopyProgress | None = None) -> dict[str, int]:
    """Copy every local-mode collection under ``local`` into ``edge`` (a no-op once done); returns
    the number of points copied per collection. ``progress`` hears of each batch."""
    marker = edge.root / MARKER
    if marker.exists():
        return {}
    names = _local_collections(local)
    copied: dict[str, int] = {}
    if names:
        from qdrant_client import QdrantClient

        log.info("copying %d collection(s) from %s into Qdrant Edge (%s), once", len(names), local, edge.root)
        source = QdrantClient(path=str(local))
        try:
            for name in names:
                copied[name] = _copy(source, edge, name, progress)
        finally:
            source.close()
    marker.write_text(json.dumps({
        "from": str(local), "collections": copied,
        "at": datetime.now(timezone.utc).replace(microsecond=0).isoformat(),
    }, indent=1), "utf-8")
    return copied


def _copy(source, edge: EdgeClient, name: str, progress: CopyProgress | None) -> int:
    params = source.get_collection(name).config.params
    total = source.count(name, exact=True).count
    if edge.collection_exists(name):  # a copy an earlier open did not finish
        edge.delete_collection(name)
    edge.create_collection(name, vectors_config=params.vectors, sparse_vectors_config=params.sparse_vectors)
    offset = None
    n = 0
    while True:
        points, offset = source.scroll(name, limit=BATCH, offset=offset, with_payload=True, with_vectors=True)
        edge.upsert(name, points)
        n += len(points)
        if progress is not None:
            progress(name, n, total)
        if offset is None:
            return n
