"""Calibrate a collection's abstain bar from a labelled data set.

The support score (``answerability.py``) ranks questions the same way on every corpus, but its
level does not transfer: cosines run lower on a small, terse corpus than on a large one. On
the bundled guide the bar that separates answerable from unanswerable questions is ~0.43, on
the Django docs ~0.50. So the bar belongs to the collection: this module scores every question
of a data set (retrieval and the support score only, no answer is composed: ~50 ms a
question), picks the bar with ``recommend_bar_for_scores`` and stores it in the collection's
metadata, where the engine finds it (``Engine.abstain_bar``). An ingest keeps it.
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


def calibrate(
    engine: Engine, dataset: EvalDataset, collection: str, settings: RagcoreSettings | None = None, *,
    save: bool = True, progress: Callable[[int, int], None] | None = None,
) -> Calibration:
    """Score every question, choose the bar, and (``save``) store it with the collection."""
    if not dataset.answerable or not dataset.unanswerable:
        raise CalibrationError(
            f"Calibrating needs answerable and unanswerable questions; {dataset.name} has "
            f"{len(dataset.answerable)} and {len(dataset.unanswerable)}."
        )
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
        engine.store.write_meta(collection, {"calibration": cal.as_meta()})
    return cal
