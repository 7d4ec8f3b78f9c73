"""The suite's schedule (tests/conftest.py SLOWEST_FIRST): the longest files go out first, so the two
pytest-xdist workers end together. A file renamed or removed would silently lose its place."""

from __future__ import annotations

import tomllib

from tests.conftest import REPO, SLOWEST_FIRST


def test_every_file_named_first_exists_once() -> None:
    assert len(set(SLOWEST_FIRST)) == len(SLOWEST_FIRST)
    assert [p for p in SLOWEST_FIRST if not (REPO / p).is_file()] == []


def test_xdist_keeps_the_collection_order() -> None:
    """xdist's default reorders files by number of tests, which ran a two-test file of minutes last."""
    opts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"].split()
    assert "--dist" in opts and opts[opts.index("--dist") + 1] == "loadfile" and "--no-loadscope-reorder" in opts
