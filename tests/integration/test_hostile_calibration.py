"""A stored abstain bar is data (issue 26, case 7): calibration refuses a data set whose relevant
documents are not in the collection, asks before replacing a stored bar, and keeps the earlier
bars so that one can be restored; from Python and from the CLI (`ragcore eval --calibrate`,
`ragcore bars`). Embedded Qdrant Edge in a temp folder, the real ONNX model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcore.cli.main import main
from ragcore.eval.calibration import BarExists, CalibrationError, calibrate, restore_bar, stored_bars
from ragcore.eval.dataset import load_dataset
from tests.conftest import write_corpus

CORPUS = {
    "garden.md": "# Watering tomatoes\n\nWater tomato plants deeply twice a week, more often in hot weather.\n\n"
                 "# Pruning roses\n\nPrune roses in late winter, just before the buds break.\n\n"
                 "# Bread\n\nKnead bread dough for about ten minutes until it is smooth and elastic.\n",
}
ANSWERABLE = ["How often should I water tomato plants?", "When do I prune roses?", "How long do I knead bread dough?"]
UNANSWERABLE = ["Who won the 1998 World Cup?", "What is the capital of Australia?", "How do I change a car tyre?"]


def _dataset(root: Path, relevant: str = "garden.md", answerable=ANSWERABLE) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "questions.jsonl").write_text("".join(
        json.dumps({"id": f"a{i}", "question": q, "relevant": [relevant]}) + "\n" for i, q in enumerate(answerable)))
    (root / "unanswerable.jsonl").write_text("".join(
        json.dumps({"id": f"u{i}", "question": q, "answerable": False}) + "\n" for i, q in enumerate(UNANSWERABLE)))
    return root


@pytest.fixture
def garden(tmp_path: Path, make_engine):
    engine = make_engine(data_dir=tmp_path / "data")
    engine.ingest([write_corpus(tmp_path / "corpus", CORPUS)], "garden", calibrate=False)
    return engine


def test_a_data_set_of_another_corpus_is_refused(garden, tmp_path: Path) -> None:
    other = load_dataset(_dataset(tmp_path / "guide-qa", relevant="09-evaluation.md"))
    with pytest.raises(CalibrationError, match="not in the collection 'garden'"):
        calibrate(garden, other, "garden")
    assert stored_bars(garden, "garden") == (None, [])


def test_replacing_a_bar_is_asked_for_and_the_old_one_can_be_restored(garden, tmp_path: Path) -> None:
    first = calibrate(garden, load_dataset(_dataset(tmp_path / "qa1")), "garden")
    harder = _dataset(tmp_path / "qa2", answerable=ANSWERABLE[:2] + ["Why do tomatoes split after rain?"])
    with pytest.raises(BarExists) as info:
        calibrate(garden, load_dataset(harder), "garden")
    assert info.value.current["bar"] == first.bar and "qa1" in str(info.value)
    assert stored_bars(garden, "garden")[0]["dataset"] == "qa1"  # unchanged

    second = calibrate(garden, load_dataset(harder), "garden", replace=True)
    current, history = stored_bars(garden, "garden")
    assert current["dataset"] == "qa2" and [h["dataset"] for h in history] == ["qa1"]
    assert garden.abstain_bar(garden.settings, "garden")[0] == second.bar

    restored = restore_bar(garden, "garden", 0)
    current, history = stored_bars(garden, "garden")
    assert restored["dataset"] == current["dataset"] == "qa1" and [h["dataset"] for h in history] == ["qa2"]
    assert garden.abstain_bar(garden.settings, "garden") == (first.bar, "calibrated on qa1")
    with pytest.raises(CalibrationError, match="no number 5"):
        restore_bar(garden, "garden", 4)


def test_the_cli_asks_before_replacing_and_lists_and_restores_bars(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(tmp_path / "data"))
    assert main(["ingest", str(write_corpus(tmp_path / "corpus", CORPUS)), "-c", "g", "--no-calibrate", "-q"]) == 0
    run = ["--baselines", "none", "--no-charts", "--no-save", "-q", "--limit", "1"]
    wrong = _dataset(tmp_path / "guide-qa", relevant="09-evaluation.md")
    assert main(["eval", str(wrong), "-c", "g", "--calibrate", *run]) == 2
    assert "not in the collection 'g'" in capsys.readouterr().err

    assert main(["eval", str(_dataset(tmp_path / "qa1")), "-c", "g", "--calibrate", *run]) == 0
    capsys.readouterr()
    qa2 = _dataset(tmp_path / "qa2", answerable=ANSWERABLE[:2] + ["Why do tomatoes split after rain?"])
    assert main(["eval", str(qa2), "-c", "g", "--calibrate", *run]) == 2  # no terminal to ask on: refused
    err = capsys.readouterr().err
    assert "already has a calibrated abstain bar" in err and "--replace" in err
    assert main(["eval", str(qa2), "-c", "g", "--calibrate", "--replace", *run]) == 0
    capsys.readouterr()

    assert main(["bars", "-c", "g"]) == 0
    out = capsys.readouterr().out
    assert "from qa2" in out.splitlines()[0] and "1. " in out and "from qa1" in out
    assert main(["bars", "-c", "g", "--restore", "1"]) == 0
    out = capsys.readouterr().out
    assert "restored" in out and "from qa1" in out.splitlines()[1]
    assert main(["bars", "-c", "g", "--restore", "7"]) == 2
