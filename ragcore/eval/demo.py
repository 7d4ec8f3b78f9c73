"""First-start helpers shared by the app and the tests: the bundled demo corpus, ingested and calibrated.

It lives in eval/ because preparing the demo calibrates its abstain bar on labelled questions
(eval/calibration.py), which runs the engine: the engine's floor cannot call it."""

from __future__ import annotations

from pathlib import Path

from ragcore.engine.engine import Engine
from ragcore.ingest.run import ChunkProgress, Progress
from ragcore.types import IngestReport

DEMO_COLLECTION = "guide"


def demo_corpus_dir() -> Path:
    """The bundled demo corpus (demo/): a frozen copy of the user guide, kept apart from docs/ so the
    guide can change without changing the demo's answers or its calibration."""
    return _checkout_root() / "demo"


def demo_calibration_dir() -> Path:
    """Questions about the guide, answerable and not, that calibrate its abstain bar."""
    return _checkout_root() / "bench" / "data" / "guide-qa"


def _checkout_root() -> Path:
    return Path(__file__).resolve().parents[2]


def ensure_demo_collection(engine: Engine, collection: str = DEMO_COLLECTION, *, progress: Progress | None = None,
                           chunk_progress: ChunkProgress | None = None) -> IngestReport | None:
    """Ingest demo/ into ``collection`` when the collection does not exist yet or is empty,
    and calibrate its abstain bar on bench/data/guide-qa when it has no labelled bar (about two
    seconds). The ingest also stores a label-free bar (``autocalibrate.py``), as for any
    collection; the labelled one takes precedence (``Engine.abstain_bar_info``).

    ``progress`` hears the ingest as ``Engine.ingest`` reports it (the app shows it while the page is usable).
    Returns the ingest report, or None when there was nothing to ingest.
    """
    report = None
    if not (engine.store.exists(collection) and engine.store.count(collection) > 0):
        docs = demo_corpus_dir()
        if not docs.is_dir():
            return None
        report = engine.ingest([docs], collection, progress=progress, chunk_progress=chunk_progress)
    if "calibration" not in engine.store.read_meta(collection) and demo_calibration_dir().is_dir():
        from ragcore.eval.calibration import calibrate
        from ragcore.eval.dataset import load_dataset

        calibrate(engine, load_dataset(demo_calibration_dir()), collection)
    return report
