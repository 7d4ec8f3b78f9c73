"""ARCHITECTURE.md's rules, held by the suite: calls go one way between ragcore's floors, the app's
modules form no import cycle, and no two classes share a name.

The floors are import-linter's ``layers`` contract in pyproject.toml ([tool.importlinter]): a
declarative list a reader can check against the document, kept by a maintained tool that reads every
import, also the ones inside functions and under ``TYPE_CHECKING``, which is where upward calls hide
here (a lazy import is still a call upward).
"""

from __future__ import annotations

import ast
from collections import defaultdict
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

importlinter = pytest.importorskip("importlinter", reason="import-linter is in the test extra (pip install -e '.[test]')")


def test_ragcore_floors_import_only_downward():
    # in a process of its own: import-linter configures logging with dictConfig, which disables every logger
    # that exists already (ragcore's), and later tests in this worker then saw no log lines
    script = ("import sys; from importlinter.cli import lint_imports; "
              f"sys.exit(lint_imports(config_filename={str(REPO / 'pyproject.toml')!r}, no_cache=True, no_logo=True))")
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    out = done.stdout
    assert done.returncode == 0, out[out.find("Broken contracts"):] or out + done.stderr


def _module_imports(package: str) -> dict[str, set[str]]:
    """Each module of ``package`` (a folder of the checkout) → the modules of the same package it imports."""
    root = REPO / package
    names = {".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__"): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = defaultdict(set)
    for mod, path in names.items():
        pkg = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1] if node.level else []
                target = ".".join([*base, *([node.module] if node.module else [])])
                wanted = [target] + [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                wanted = [a.name for a in node.names]
            else:
                continue
            graph[mod].update(w for w in wanted if w in names and w != mod)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1 on the path, 2 done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph.get(m, ())):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state and (found := visit(n)):
                return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


@pytest.mark.parametrize("package", ["ui", "bench"])
def test_no_import_cycle_between_modules(package):
    """ragcore's cycles are the floors' business (above) and structure_check's; the app's ui/ and the
    benchmarks are checked here, every import counted (inside functions and TYPE_CHECKING too)."""
    assert _cycle(_module_imports(package)) is None


def test_no_two_classes_share_a_name():
    """One name, one class, across ragcore and the app's ui/: a reader who greps a class finds it."""
    where: dict[str, list[str]] = defaultdict(list)
    for folder in ("ragcore", "ui"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.ClassDef):
                    where[node.name].append(str(path.relative_to(REPO)))
    shared = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert shared == {}
