"""Calibrate a collection's abstain bar from a labelled data set.

The support score (``answerability.py``) ranks questions the same way on every corpus, but its
level does not transfer: cosines run lower on a small, terse corpus than on a large one. On
the bundled guide the bar that separates answerable from unanswerable questions is ~0.43, on
the Django docs ~0.50. So the bar belongs to the collection: this module scores every question
of a data set (retrieval and the support score only, no answer is composed: ~50 ms a
question), picks the bar with ``recommend_bar_for_scores`` and stores it in the collection's
metadata, where the engine finds it (``Engine.abstain_bar``). An ingest keeps it.

A stored bar is data, so a run is refused when the data set does not belong to the collection
(some of its relevant documents are not in it: a bar from the guide's questions is no bar for
another corpus), replacing a stored bar must be asked for (``replace=True``; the CLI and the app
ask first), and every replaced bar is kept in ``meta["calibration_history"]`` (newest first,
``MAX_HISTORY`` of them) so that :func:`restore_bar` can bring one back.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Callable

from ragcore.settings.config import RagcoreSettings
from ragcore.engine.engine import Engine
from ragcore.storage.store import utc_now
from ragcore.eval.dataset import EvalDataset
from ragcore.eval.runner import recommend_bar_for_scores


@dataclass(frozen=True)
class Calibration:
    bar: float
    answer_rate: float  # on the data set's answerable questions, at this bar
    abstain_rate: float  # on its unanswerable questions
    answerable: int
    unanswerable: int
    dataset: str
    corpus_version: str | None
    when: str

    def as_meta(self) -> dict[str, Any]:
        return asdict(self)


class CalibrationError(ValueError):
    pass


class BarExists(CalibrationError):
    """The collection has a calibrated bar already; calibrating again would replace it."""

    def __init__(self, collection: str, current: dict[str, Any]) -> None:
        self.collection, self.current = collection, current
        super().__init__(
            f"The collection {collection!r} already has a calibrated abstain bar: {describe_bar(current)}. "
            "Calibrating again replaces it (the old bar is kept and can be restored)."
        )


HISTORY_KEY = "calibration_history"
MAX_HISTORY = 10


def describe_bar(cal: dict[str, Any]) -> str:
    """``0.431 from guide-qa (2026-11-27T05:10:00+00:00, corpus 7ee007f4)``."""
    version = f", corpus {str(cal['corpus_version'])[:8]}" if cal.get("corpus_version") else ""
    return f"{float(cal.get('bar', 0.0)):.3f} from {cal.get('dataset', '?')} ({cal.get('when', '?')}{version})"


def stored_bars(engine: Engine, collection: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """(the calibrated bar in force, or None; the earlier bars, newest first)."""
    meta = engine.store.read_meta(collection)
    return meta.get("calibration") or None, [dict(h) for h in meta.get(HISTORY_KEY) or []]


def check_dataset_fits(engine: Engine, dataset: EvalDataset, collection: str) -> None:
    """CalibrationError when some of the data set's relevant documents are not in the collection
    (the evaluation only warns; a stored bar from another corpus's questions would be wrong)."""
    from ragcore.eval.checks import missing_relevant

    missing = missing_relevant(engine, collection, dataset)
    if missing:
        gone, total = missing
        raise CalibrationError(
            f"{len(gone)} of {total} relevant documents of the data set {dataset.name!r} are not in the collection "
            f"{collection!r} (e.g. {', '.join(sorted(gone)[:3])}): it is not this collection's data set, and a bar "
            "calibrated on it would be wrong. Choose the data set of this collection's corpus, or ingest the data "
            "set's corpus/ into the collection first."
        )


def calibrate(
    engine: Engine, dataset: EvalDataset, collection: str, settings: RagcoreSettings | None = None, *,
    save: bool = True, replace: bool = False, progress: Callable[[int, int], None] | None = None,
) -> Calibration:
    """Score every question, choose the bar, and (``save``) store it with the collection.

    Raises CalibrationError for a data set that cannot calibrate this collection, and BarExists
    (before any scoring) when saving would replace a stored bar and ``replace`` is False."""
    if not dataset.answerable or not dataset.unanswerable:
        raise CalibrationError(
            f"Calibrating needs answerable and unanswerable questions; {dataset.name} has "
            f"{len(dataset.answerable)} and {len(dataset.unanswerable)}."
        )
    check_dataset_fits(engine, dataset, collection)
    current, _ = stored_bars(engine, collection)
    if save and current and not replace:
        raise BarExists(collection, current)
    s = (settings or engine.settings).with_(collection=collection)
    scores: list[tuple[bool, float | None]] = []
    for i, q in enumerate(dataset.questions):
        scores.append((q.answerable, engine.support(q.question, s, collection).score))
        if progress:
            progress(i + 1, len(dataset.questions))
    choice = recommend_bar_for_scores(scores)
    assert choice is not None  # every question has a score
    cal = Calibration(
        bar=round(choice.bar, 4), answer_rate=choice.answer_rate, abstain_rate=choice.abstain_rate,
        answerable=len(dataset.answerable), unanswerable=len(dataset.unanswerable), dataset=dataset.name,
        corpus_version=engine.store.read_meta(collection).get("corpus_version"), when=utc_now(),
    )
    if save:
        _store(engine, collection, cal.as_meta())
    return cal


def _store(engine: Engine, collection: str, new: dict[str, Any], history: list[dict[str, Any]] | None = None) -> None:
    """Make ``new`` the bar in force; the one it replaces goes first in the history."""
    current, old = stored_bars(engine, collection)
    history = old if history is None else history
    if current:
        history = [current, *history]
    engine.store.write_meta(collection, {"calibration": new, HISTORY_KEY: history[:MAX_HISTORY]})


def restore_bar(engine: Engine, collection: str, index: int) -> dict[str, Any]:
    """Put back the bar ``index`` of the history (0: the one replaced last); the bar in force
    takes its place at the top of the history. Returns the restored bar."""
    _, history = stored_bars(engine, collection)
    if not 0 <= index < len(history):
        raise CalibrationError(f"The collection {collection!r} has {len(history)} earlier bar(s); "
                               f"there is no number {index + 1} to restore.")
    chosen = history.pop(index)
    _store(engine, collection, chosen, history)
    return chosen
