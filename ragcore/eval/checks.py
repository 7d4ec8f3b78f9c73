"""Checks a run makes before it measures: does the collection hold the data set's relevant
documents, and were its chunks written by the index settings this code would use."""

from __future__ import annotations

from typing import Any

from ragcore.eval.dataset import EvalDataset
from ragcore.eval.runner import mapper_for
from ragcore.settings.config import RagcoreSettings


def missing_relevant(engine: Any, collection: str, dataset: EvalDataset) -> tuple[set[str], int] | None:
    """(relevant documents of the data set that the collection does not hold, number of
    distinct relevant documents), or ``None`` when all are there."""
    relevant = {d for q in dataset.questions for d in q.relevant_docs}
    if not relevant:
        return None
    mapper = mapper_for(engine, collection, dataset)
    held = {mapper(p) for p, _ in engine.documents(collection)}
    gone = relevant - held
    return (gone, len(relevant)) if gone else None


def stale_chunks(engine: Any, collection: str, settings: RagcoreSettings) -> tuple[int, int] | None:
    """(chunks written under another index fingerprint, all chunks) when the collection's
    points carry fingerprints that differ from what this code would write; ``None`` when they
    all match (or the store keeps no fingerprints)."""
    try:
        from ragcore.ingest.run import index_fingerprint

        want = index_fingerprint(settings)
        fps = [getattr(r, "fp", "") for r in engine.store.point_refs(collection)]
    except Exception:  # noqa: BLE001 - a check, never a failure
        return None
    if not fps or not any(fps):
        return None
    n = sum(1 for f in fps if f != want)
    return (n, len(fps)) if n else None
