"""README.md is an entry that stays true: it starts with the two set-up commands, stays short, and
its Python examples run as written (the real model, Qdrant Edge in a temp folder, the demo corpus)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def test_starts_with_the_two_commands_and_stays_short() -> None:
    first = re.search(r"```bash\n(.*?)```", README, re.S).group(1).strip().splitlines()
    assert first == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/streamlit run app.py",
        'python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]" && .venv/bin/python -m pytest -q',
    ]
    assert README.index("```bash") < README.index("## ")  # nothing comes before them but the title
    assert len(README) <= 7000


def test_ci_runs_the_readme_test_command() -> None:
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert 'python3 -m venv .venv && .venv/bin/pip install -q -e ".[test]" && .venv/bin/python -m pytest -q' in ci


@pytest.mark.slow
def test_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert len(blocks) == 2 and "engine.ask(" in blocks[0] and "RetrieverQueryEngine" in blocks[1]
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(tmp_path / "data"))
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
