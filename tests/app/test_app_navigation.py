"""AppTest: the app's own navigation (ui/shell.py) with no patch of Streamlit.

AppTest runs every script through Streamlit's pages/-folder fallback (it resets
``PagesManager.uses_pages_directory`` before each run, and pages/ exists), which runs a
switched-to page without app.py — the same path a live server takes on the first request of a
fresh process. These tests check that the page then draws the app's frame around itself, once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.app_support import app_env, nav_links, ok, started  # noqa: F401
from ui.shell import PAGES
from tests.conftest import REPO

TITLES = [p.title for p in PAGES]
URLS = ["" if p.default else p.url_path for p in PAGES]  # the default page lives at "/"


def test_first_run_shows_the_apps_navigation_and_the_notebook(app_env):
    at = started()
    ok(at)
    assert [lnk.proto.label for lnk in nav_links(at)] == TITLES
    assert [lnk.proto.page for lnk in nav_links(at)] == URLS
    assert any(m.value.startswith("## Notebook") for m in at.markdown)
    assert len(at.sidebar.selectbox) == 1  # the shared sidebar, drawn once


@pytest.mark.parametrize("spec", [p for p in PAGES if not p.default], ids=lambda p: p.url_path)
def test_a_page_run_without_app_py_gets_the_frame_once(app_env, spec):
    at = started(spec.path)
    ok(at)
    assert [lnk.proto.page for lnk in nav_links(at)] == URLS
    assert len(at.sidebar.selectbox) == 1, "the sidebar is drawn once, not once per frame"
    heading = f"## {spec.title}"
    assert sum(m.value.startswith(heading) for m in at.markdown) == 1, [m.value[:40] for m in at.markdown]


def test_config_hides_streamlits_own_navigation():
    config = (REPO / ".streamlit" / "config.toml").read_text()
    import tomllib

    assert tomllib.loads(config)["client"]["showSidebarNavigation"] is False
