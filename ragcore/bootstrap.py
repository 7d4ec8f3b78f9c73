"""First-start helpers shared by the app and the CLI: the bundled demo corpus."""

from __future__ import annotations

from pathlib import Path

from .pipeline import Engine
from .types import IngestReport

DEMO_COLLECTION = "guide"


def demo_corpus_dir() -> Path:
    """The project's own user guide (docs/), the bundled demo corpus."""
    return Path(__file__).resolve().parent.parent / "docs"


def ensure_demo_collection(engine: Engine, collection: str = DEMO_COLLECTION) -> IngestReport | None:
    """Ingest docs/ into ``collection`` when the collection does not exist yet or is empty.

    Returns the ingest report, or None when there was nothing to do.
    """
    if engine.store.exists(collection) and engine.store.count(collection) > 0:
        return None
    docs = demo_corpus_dir()
    if not docs.is_dir():
        return None
    return engine.ingest([docs], collection)
