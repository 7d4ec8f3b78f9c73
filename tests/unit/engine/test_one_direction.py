"""The engine and the answerer call one way (engine → view → retrieval / abstain / storage): the
answerer reads a per-collection view, the query vector travels in the retrieval result, answers
and calibration share one support function, and a question never publishes a snapshot.
Real embedded Qdrant in temp folders, the real ONNX model."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from ragcore.abstain import answerability
from ragcore.engine.answerer import Resources
from ragcore.engine.view import CollectionView
from ragcore.storage.snapshot import MANIFEST
from ragcore.storage.store import Store
from ragcore.settings.config import RagcoreSettings
from ragcore.types import to_jsonable
from tests.conftest import write_corpus

FILES = {
    "garden/roses.md": "# Roses\n\n## Pruning roses\n\nPrune roses in late winter, just before the buds swell.\n\n"
                       "## Feeding roses\n\nFeed roses with compost in spring and again in early summer.\n",
    "kitchen/bread.md": "# Bread\n\n## Proving dough\n\nLet the dough prove for two hours in a warm place until doubled.\n",
}


@pytest.fixture
def engine(tmp_path: Path, make_engine):
    e = make_engine(data_dir=tmp_path / "data")
    e.ingest([write_corpus(tmp_path / "corpus", FILES)], "g", calibrate=False)
    return e


def _snapshot_state(data: Path) -> tuple:
    m = data / "snapshots" / "g" / MANIFEST
    return m.stat().st_mtime_ns, json.loads(m.read_text())["version"], sorted(p.name for p in m.parent.iterdir())


def test_the_answerer_gets_parts_not_callbacks_into_the_engine() -> None:
    fields = {f.name: f.type for f in dataclasses.fields(Resources)}
    assert fields == {"view": "CollectionView", "encoder": "OnnxMiniLM", "scorer": "SupportScorer",
                      "generators": "Generators"}
    assert "engine" not in {f.name for f in dataclasses.fields(CollectionView)}


def test_the_query_vector_travels_in_the_retrieval_result(engine, monkeypatch: pytest.MonkeyPatch) -> None:
    q = "When should I prune roses?"
    seen: list[list[str]] = []
    real = engine.encoder.encode
    monkeypatch.setattr(engine.encoder, "encode", lambda texts, *a, **k: seen.append(list(texts)) or real(texts, *a, **k))
    result = engine.retrieve(q, collection="g")
    assert result.query_vector is not None and result.query_vector.shape == (384,)
    support = engine.view("g").support(q, engine.settings, result)
    assert support.topic is not None and support.topic.heading == "Pruning roses"
    assert sum(texts.count(q) for texts in seen) == 1  # embedded once: by retrieval, not again for the topic
    # the vector is not part of the result's JSON form
    out = to_jsonable(result)
    assert "query_vector" not in out and json.dumps(out)


def test_calibration_and_answers_score_support_with_one_function(engine, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = answerability.question_support

    def spy(mode, question, *a, **k):
        calls.append(question)
        return real(mode, question, *a, **k)

    monkeypatch.setattr("ragcore.engine.view.question_support", spy)
    monkeypatch.setattr("ragcore.engine.answerer.question_support", spy)
    s = engine.settings.with_(collection="g")
    for q in ("When should I prune roses?", "Does the bread need xylophonics?"):
        calls.clear()
        calibrated = engine.support(q, s, "g")  # what autocalibrate.py and eval/calibration.py score
        answer = engine.ask(q, collection="g", settings=s)
        assert calls == [q, q]
        assert answer.metadata["support"] == calibrated.as_dict()  # unseen words included on both sides
    assert calibrated.unseen == ("xylophonics",) and answer.status == "abstained"


def test_a_question_never_publishes_a_snapshot(tmp_path: Path, engine) -> None:
    data = tmp_path / "data"
    before = _snapshot_state(data)
    reader = type(engine)(engine.settings, encoder=engine.encoder)
    try:
        assert reader.ask("When should I prune roses?", collection="g").status == "ok"
        reader.collections(), reader.documents("g"), reader.abstain_bar_info("g")
        assert _snapshot_state(data) == before and reader.store._conn.opens == 0
    finally:
        reader.close()
    # stale (a writer died before publishing): answered from the store, still nothing published
    raw = Store(RagcoreSettings(data_dir=data, snapshots=False))
    raw.delete_points("g", [r.id for r in raw.point_refs("g") if r.path == "kitchen/bread.md"])
    raw.close()
    reader = type(engine)(engine.settings, encoder=engine.encoder)
    try:
        answer = reader.ask("How long does the dough prove?", collection="g")
        assert all(c.chunk.path != "kitchen/bread.md" for c in answer.candidates)
        reader.collections(), reader.documents("g")
        assert _snapshot_state(data) == before and not reader.store.opened
        assert reader.repair_snapshots() == ["g"] and _snapshot_state(data) != before
    finally:
        reader.close()


def test_one_abstain_bar_with_the_old_pair_form(engine) -> None:
    info = engine.abstain_bar_info("g")
    assert engine.abstain_bar(collection="g") == (info.value, info.description)
    assert engine.view("g").abstain_bar(engine.settings) == info
