"""The installed package is the core only: a wheel built from the project holds ragcore's modules
and data files, and no benchmark, test server or test."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.mark.slow  # a setuptools build: ~10 s
def test_the_wheel_holds_no_benchmark_or_test_code(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(REPO),
                    "-w", str(tmp_path)], check=True, capture_output=True, cwd=tmp_path)
    [wheel] = tmp_path.glob("ragcore-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    modules = [n for n in names if n.endswith(".py")]
    assert modules and all(n.startswith("ragcore/") for n in modules), [n for n in modules if not n.startswith("ragcore/")]
    assert not [n for n in modules if "bench" in n or "/testing/" in n or "scripted_openai" in n or "/test_" in n]
    assert "ragcore/data/offtopic_questions.txt" in names
    assert "ragcore/cli/main.py" in names and "ragcore/storage/store.py" in names
