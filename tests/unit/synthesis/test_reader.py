"""The learned reader (synthesis/extractive/reader.py): its features, the shipped model file, and
the composer using it: the unit the model ranks first leads, and an answer below the confidence
bar says it may not answer and quotes the closest passages of several pages."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.synthesis.extractive.composer import UNSURE_LEAD, ExtractiveComposer
from ragcore.synthesis.extractive.reader import (CONF_FEATURES, FEATURES, MODEL_PATH, ReaderModel, confidence_features,
                                                 features, load_model, model_from_dict)
from ragcore.types import Chunk, Evidence


def ev(n: int, text: str, path: str, section: tuple[str, ...] = ("Tasks",)) -> Evidence:
    chunk = Chunk(chunk_id=f"c{n}", text=text, path=path, doc_hash="h", kind="markdown", start_line=1,
                  end_line=text.count("\n") + 1, section=section)
    return Evidence(n=n, chunk=chunk, origin="corpus", score=1.0 / n, score_kind="fused", dense_score=0.6 - 0.05 * n)


EVIDENCE = (
    ev(1, "A task can be aborted with abort() while it runs. Aborting needs a result backend that supports it.",
       "docs/abort.md"),
    ev(2, "To cancel a task that has not started, call revoke() with the task id. Revoked tasks are skipped by workers.",
       "docs/revoke.md"),
)
QUESTION = "Can I cancel the execution of a task?"


SURE, UNSURE = (0.0, 0.0, 0.0, 5.0), (0.0, 0.0, 0.0, -5.0)  # confidence weights over CONF_FEATURES, then the bias


def one_hot(name: str, weight: float = 4.0, calib: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0), bar: float = 0.5) -> ReaderModel:
    """A model that looks at one feature only (standardised with mean 0, scale 1)."""
    w = np.array([weight if f == name else 0.0 for f in FEATURES])
    return ReaderModel(FEATURES, np.zeros(len(FEATURES)), np.ones(len(FEATURES)), w, 0.0, calib, bar, 0.75)


def test_the_shipped_model_is_small_reads_with_numpy_and_names_the_features_it_was_trained_on() -> None:
    assert MODEL_PATH.is_file() and MODEL_PATH.stat().st_size <= 1_000_000
    m = load_model()
    assert m is not None and m.names == FEATURES and m.weights.shape == (len(FEATURES),)
    assert 0.0 < m.bar < 1.0 and m.bar <= m.high


def test_a_model_trained_on_other_features_is_refused_with_a_message() -> None:
    d = json.loads(MODEL_PATH.read_text())
    with pytest.raises(ValueError, match="retrain"):
        model_from_dict(d | {"features": d["features"][:-1]})
    with pytest.raises(ValueError, match="retrain"):  # a file whose confidence read other signals
        model_from_dict({k: v for k, v in d.items() if k != "confidence_features"})


def test_the_confidence_reads_the_lead_of_the_best_unit_the_pages_of_the_first_five_and_a_factoid_question(
        encoder: OnnxMiniLM) -> None:
    c = ExtractiveComposer(encoder, reader=None)
    c.score_sentences(QUESTION, EVIDENCE)
    gap, pages, factoid = confidence_features(QUESTION, c.scored, EVIDENCE)
    top = sorted((s.score for s in c.scored), reverse=True)
    assert gap == pytest.approx(top[0] - top[1]) and pages == 2.0 and factoid == 0.0
    assert confidence_features("What cancels a task?", c.scored, EVIDENCE)[2] == 1.0
    m = replace(one_hot("chunk_rank"), calib=(10.0, 0.0, 2.0, -1.0))  # raw-scale weights, then the bias
    assert m.confidence((0.0, 2.0, 0.0)) == pytest.approx(1 / (1 + np.exp(1.0)))
    assert m.confidence((0.1, 2.0, 1.0)) == pytest.approx(1 / (1 + np.exp(-2.0)))
    assert len(CONF_FEATURES) == 3


def test_features_are_one_row_per_candidate_with_gaps_relative_to_the_best(encoder: OnnxMiniLM) -> None:
    c = ExtractiveComposer(encoder, reader=None)
    c.score_sentences(QUESTION, EVIDENCE)
    x = features(QUESTION, c.scored)
    assert x.shape == (len(c.scored), len(FEATURES)) and np.isfinite(x).all()
    gap = x[:, FEATURES.index("score_gap")]
    assert gap.max() == 0.0 and (gap <= 0).all()
    assert set(x[:, FEATURES.index("chunk_rank")]) == {1.0, 0.5}


def test_the_unit_the_model_ranks_first_leads_the_answer(encoder: OnnxMiniLM) -> None:
    # a model that prefers the second evidence's units (lower 1/n) quotes revoke(), not abort()
    later = one_hot("chunk_rank", weight=-4.0, calib=SURE)  # sure of it: no unsure lead
    got = ExtractiveComposer(encoder, reader=later).compose(QUESTION, EVIDENCE)
    assert got.text.startswith("To cancel a task that has not started, call revoke()")
    first = ExtractiveComposer(encoder, reader=one_hot("chunk_rank", calib=SURE)).compose(QUESTION, EVIDENCE)
    assert first.text.startswith("A task can be aborted")


def test_a_calibrated_confidence_below_the_bar_leads_with_the_unsure_line(encoder: OnnxMiniLM) -> None:
    sure = ExtractiveComposer(encoder, reader=one_hot("chunk_rank", calib=SURE)).compose(QUESTION, EVIDENCE)
    assert sure.confidence is not None and sure.confidence > 0.9 and sure.level == "high"
    assert not sure.text.startswith(UNSURE_LEAD) and {p.n for p in sure.picked} == {1}
    unsure = ExtractiveComposer(encoder, reader=one_hot("chunk_rank", calib=UNSURE)).compose(QUESTION, EVIDENCE)
    assert unsure.level == "low" and unsure.confidence < 0.5
    assert unsure.text.startswith(UNSURE_LEAD + "\n\n")
    assert {p.n for p in unsure.picked} == {1, 2}  # the closest passages of more than one page


def test_a_model_that_does_not_rank_or_gate_leaves_the_answer_as_it_was(encoder: OnnxMiniLM) -> None:
    # the shipped model when leave-one-corpus-out did not show its ranking or its bar to be better
    plain = ExtractiveComposer(encoder, reader=None).compose(QUESTION, EVIDENCE)
    hint = replace(one_hot("chunk_rank", weight=-4.0, calib=UNSURE), rank=False, gate=False)
    got = ExtractiveComposer(encoder, reader=hint).compose(QUESTION, EVIDENCE)
    assert got.text == plain.text and got.level == "low" and not got.unsure


def test_without_a_model_the_composer_keeps_its_hand_made_score_and_says_no_confidence(encoder: OnnxMiniLM) -> None:
    got = ExtractiveComposer(encoder, reader=None).compose(QUESTION, EVIDENCE)
    assert got.confidence is None and got.level is None and got.status == "ok"


def test_abstention_inputs_stay_the_hand_made_score(encoder: OnnxMiniLM) -> None:
    # best_score feeds the selection-mode abstention rules; the reader must not change its scale
    plain = ExtractiveComposer(encoder, reader=None).compose(QUESTION, EVIDENCE)
    learned = ExtractiveComposer(encoder, reader=one_hot("chunk_rank", weight=-4.0)).compose(QUESTION, EVIDENCE)
    assert learned.best_score == pytest.approx(plain.best_score)
    assert replace(learned, text="").best_probability is not None


def test_a_confident_level_decides_nothing_while_the_model_does_not_gate(encoder: OnnxMiniLM) -> None:
    """With gate off the level is a hint in the JSON only, high as well as low (the CLI and the app
    show a level only when it decides); with gate on it decides at every level."""
    from types import SimpleNamespace

    from ragcore.synthesis.extractive.composer import ExtractiveSynthesizer

    def run(model: ReaderModel):
        job = SimpleNamespace(question=QUESTION, evidence=EVIDENCE)  # the two fields the composer reads
        gen = ExtractiveSynthesizer(ExtractiveComposer(encoder, reader=model)).stream(job)
        while True:
            try:
                next(gen)
            except StopIteration as stop:
                return stop.value.confidence

    hint = run(replace(one_hot("chunk_rank", calib=SURE), gate=False))
    assert hint is not None and hint.level == "high" and not hint.decides
    assert run(one_hot("chunk_rank", calib=SURE)).decides
