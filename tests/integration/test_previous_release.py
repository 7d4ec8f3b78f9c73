"""An existing data folder opens and answers as before: the folder written by the previous release
(tests/data/previous-release, made by commit 662772a) is read by today's code — from its query
snapshot, and from Qdrant Edge itself with snapshots off — and answers exactly as a folder that
today's code writes from the same files, with the same chunks, corpus version and abstain bar as
that release recorded."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from ragcore import Engine, RagcoreSettings
from tests.conftest import REPO

HERE = REPO / "tests" / "data" / "previous-release"
QUESTIONS = json.loads((HERE / "questions.json").read_text(encoding="utf-8"))
EXPECTED = json.loads((HERE / "expected-662772a.json").read_text(encoding="utf-8"))


def _answers(engine: Engine) -> list[dict]:
    out = []
    for q in QUESTIONS:
        a = engine.ask(q, collection="prev")
        out.append({"question": q, "status": a.status, "answer": a.answer,
                    "citations": [[c.n, c.path, c.start_line, c.end_line] for c in a.citations],
                    # the top-K as that release chose it: a seat (passage_seats.py, default 1 since) is added after it
                    "evidence": [ev.chunk.chunk_id for ev in a.evidence if not ev.seated][:10]})
    return out


@pytest.fixture(scope="module")
def old_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    dest = tmp_path_factory.mktemp("previous-release")
    with tarfile.open(HERE / "data-662772a.tar.gz") as tar:
        tar.extractall(dest, filter="data")
    return dest


@pytest.fixture(scope="module")
def today(tmp_path_factory: pytest.TempPathFactory, encoder) -> list[dict]:
    """The same files ingested by today's code (calibrated the same label-free way)."""
    engine = Engine(RagcoreSettings(data_dir=tmp_path_factory.mktemp("today")), encoder=encoder)
    try:
        engine.ingest([HERE / "corpus"], "prev")
        return _answers(engine)
    finally:
        engine.close()


@pytest.mark.parametrize("snapshots", [True, False], ids=["from-snapshot", "from-qdrant-edge"])
def test_the_previous_release_folder_answers_as_a_folder_written_today(
    old_folder: Path, today: list[dict], snapshots: bool, encoder,
) -> None:
    engine = Engine(RagcoreSettings(data_dir=old_folder, snapshots=snapshots), encoder=encoder)
    try:
        [info] = engine.collections()
        assert (info.name, info.documents, info.chunks) == ("prev", 4, 52)
        assert info.corpus_version == EXPECTED["corpus_version"]
        got = _answers(engine)
    finally:
        engine.close()
    assert got == today
    # the content the previous release stored is what today's code reads back
    for mine, theirs in zip(got, EXPECTED["answers"]):
        assert set(mine["evidence"]) == set(theirs["evidence"]), mine["question"]
        assert mine["status"] == theirs["status"], mine["question"]
