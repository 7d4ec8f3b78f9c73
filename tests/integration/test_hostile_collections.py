"""An empty or half-written collection (issue 26, case 1) is listed as such and never breaks
the others: before, `ragcore collections` and every `ask` failed with "could not broadcast
input array from shape (0,) into shape (0,384)". Embedded Qdrant Edge in a temp folder, the
real ONNX model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcore.cli.main import main
from tests.conftest import write_corpus

OK = {"a.md": "# Sessions\n\nSessions are stored in the database by default. They expire after two weeks.\n"}


@pytest.fixture
def data(tmp_path: Path, make_engine):
    engine = make_engine(data_dir=tmp_path / "data")
    engine.ingest([write_corpus(tmp_path / "ok", OK)], "healthy", calibrate=False)
    return engine, tmp_path


def _cli(capsys, tmp_path: Path, *argv: str) -> tuple[int, str]:
    code = main(["--data-dir", str(tmp_path / "data"), *argv])
    return code, capsys.readouterr().out


def _check_others_work(engine, capsys, tmp_path: Path, state_of: dict[str, str]) -> None:
    names = {i.name: i for i in engine.collections()}
    assert set(state_of) <= set(names)
    code, out = _cli(capsys, tmp_path, "collections", "--json")
    assert code == 0
    listed = {c["name"]: c for c in json.loads(out)}
    for name, state in state_of.items():
        assert listed[name]["state"] == state, listed[name]
    answer = engine.ask("Where are sessions stored?", collection="healthy")
    assert answer.status != "error" and "database" in answer.answer


def test_an_empty_folder_makes_an_empty_collection_that_breaks_nothing(data, capsys) -> None:
    engine, tmp = data
    (tmp / "empty").mkdir()
    engine.ingest([tmp / "empty"], "empty", calibrate=False)
    engine.close()  # a new process: the listing and questions read the snapshots
    _check_others_work(engine, capsys, tmp, {"healthy": "ready", "empty": "empty"})
    code, out = _cli(capsys, tmp, "collections")
    assert code == 0 and "empty: the last ingest found no supported files" in out
    asked = engine.ask("Where are sessions stored?", collection="empty")
    assert asked.status == "error" and "empty or does not exist" in asked.error_message


def test_a_folder_whose_files_were_all_deleted(data, capsys) -> None:
    engine, tmp = data
    gone = write_corpus(tmp / "gone", {"b.md": "# B\n\nCaching keeps pages in memory for a while.\n"})
    engine.ingest([gone], "gone", calibrate=False)
    (gone / "b.md").unlink()
    engine.ingest([gone], "gone", calibrate=False)
    _check_others_work(engine, capsys, tmp, {"healthy": "ready", "gone": "empty"})


def test_a_collection_created_but_never_written(data, capsys) -> None:
    """What a SIGKILL during the first embedding batch leaves: the collection exists, with no
    points and no metadata."""
    engine, tmp = data
    with engine.store.session():
        engine.store.ensure_collection("killed")
    engine.close()
    _check_others_work(engine, capsys, tmp, {"healthy": "ready", "killed": "incomplete"})
    code, out = _cli(capsys, tmp, "collections")
    assert code == 0 and "incomplete: an ingest did not finish" in out
