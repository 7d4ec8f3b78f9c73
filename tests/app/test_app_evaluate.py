"""AppTest: the Evaluate page suggests the bundled data set."""

from __future__ import annotations

import pytest

from tests.support.app_support import ROOT, app_env, ok, started  # noqa: F401

pytestmark = pytest.mark.slow


def test_folder_box_suggests_the_bundled_set(app_env):
    at = started("pages/evaluate.py")
    ok(at)
    assert at.text_input(key="ev_folder").value == str(ROOT / "bench" / "data" / "guide-qa")
    assert any("answerable" in c.value for c in at.caption), "the suggested set is loaded"
