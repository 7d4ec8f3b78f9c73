"""README.md is an entry that stays true: it starts with the two set-up commands, stays short, its
one-minute tour prints what README shows, and its Python examples run as written (the real model,
Qdrant Edge in a temp folder, the demo corpus)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_starts_with_the_two_commands_and_stays_short() -> None:
    first = re.search(r"```bash\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert first == [
        'python3 -m venv .venv && .venv/bin/pip install -e ".[app]" && .venv/bin/streamlit run app.py',
        'python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]" && .venv/bin/python -m pytest -q',
    ]
    assert README.index("```bash") < README.index("## ")  # nothing comes before them but the title
    assert len(README) <= 7000


def test_ci_runs_the_readme_test_command() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert 'python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]" && .venv/bin/python -m pytest -q' in ci


# README's elisions: "…" stands for any text (a line's tail, or whole lines), a timestamp for any timestamp
_ANY = re.escape("…")
_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00")


def tour_steps() -> list[tuple[str, str]]:
    """(command, the output README shows for it) for each ``$ ragcore …`` line of the console block."""
    block = re.search(r"```console\n(.*?)```", README, re.S).group(1)
    parts = re.split(r"^\$ (.*)\n", block, flags=re.M)[1:]
    return list(zip(parts[::2], parts[1::2]))


def shown_matches(shown: str, printed: str) -> bool:
    """Whether ``printed`` is what README shows: the same words in the same order (README wraps long
    lines), with "…" matching anything and a timestamp any timestamp."""
    pattern = re.escape(_STAMP.sub("\0", " ".join(shown.split())))
    pattern = pattern.replace(_ANY, ".*?").replace("\x00", _STAMP.pattern).replace(r"\ ", r"\s+")
    return re.fullmatch(pattern, " ".join(printed.split()), re.S) is not None


@pytest.fixture(scope="module")
def demo_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("readme") / "data"


@pytest.mark.slow
def test_the_tour_prints_what_readme_shows(demo_data: Path) -> None:
    steps = tour_steps()
    assert [shlex.split(cmd)[:2] for cmd, _ in steps] == [["ragcore", "ingest"], ["ragcore", "ask"], ["ragcore", "collections"]]
    env = {**os.environ, "RAGCORE_DATA_DIR": str(demo_data)}
    for cmd, shown in steps:
        done = subprocess.run([sys.executable, "-m", "ragcore.cli.main", *shlex.split(cmd)[1:]], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (cmd, done.stderr[-2000:])
        assert shown_matches(shown, done.stdout), f"README shows for `{cmd}`:\n{shown}\nbut it printed:\n{done.stdout}"


def test_the_tour_check_can_fail() -> None:
    printed = "status ok · extractive · corpus · collection guide v1 · 7 of 73 chunks used · 250 ms\n"
    assert shown_matches("status ok · extractive · corpus · collection guide v1 · 7 of 73 chunks used · …", printed)
    assert not shown_matches("status ok · extractive · corpus · collection guide v1 · 6 of 73 chunks used · …", printed)
    assert shown_matches("guide 18 232 7ee0 2026-11-27T05:32:03+00:00", "guide  18  232  7ee0  2025-01-02T03:04:05+00:00")


@pytest.mark.slow
def test_python_examples_run(demo_data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) == 2 and "engine.ask(" in blocks[0] and "RetrieverQueryEngine" in blocks[1]
    # the tour's data folder when it ran first: the example's ingest then finds every file unchanged
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(demo_data))
    monkeypatch.chdir(REPO)  # the example names the demo folder relatively, as a reader in the checkout would
    scope: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(blocks[0], "README.md[python 1]", "exec"), scope)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("ok ") and "cosine similarity" in lines[0]
    assert re.fullmatch(r"\d+ 05-scores-top-k-and-threshold\.md:\d+-\d+", lines[1])
    exec(compile(blocks[1], "README.md[python 2]", "exec"), scope)
    try:
        assert type(scope["query_engine"]).__name__ == "RetrieverQueryEngine"
    finally:
        scope["engine"].close()
