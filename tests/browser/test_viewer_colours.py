"""Issue 42, item 7: the lines selected in the viewer stay visible where they fall inside a cited
(yellow) range. Headless chromium computes the rows' styles from the viewer's own HTML."""

from __future__ import annotations

import os

import pytest

from ui.viewer import Row, SourceView, viewer_html

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium (.ci/run installs it)")]


def _look(page, selector: str) -> tuple[str, str, str]:
    return page.eval_on_selector(
        selector, "e => { const s = getComputedStyle(e), t = getComputedStyle(e.querySelector('.rc-txt'));"
                  " return [s.backgroundColor + ' ' + s.backgroundImage, t.boxShadow, t.backgroundColor]; }")


def test_a_selection_inside_a_cited_range_looks_different_from_the_cited_lines() -> None:
    from playwright.sync_api import sync_playwright

    view = SourceView("a.md", "markdown", [Row(i, i, f"Line {i} of the page.") for i in range(1, 7)], "disk")
    html = viewer_html(view, page=None, highlight=(2, 5), selection=(3, 4), window=None)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_page()
            page.set_content(f"<html><body>{html}</body></html>")
            rows = page.query_selector_all(".rc-line")
            classes = [r.get_attribute("class") for r in rows]
            both = classes.index(next(c for c in classes if "sel" in c and "hl" in c)) + 1
            cited = classes.index(next(c for c in classes if "hl" in c and "sel" not in c)) + 1
            plain = classes.index(next(c for c in classes if c.strip() == "rc-line")) + 1
            looks = {name: _look(page, f".rc-line:nth-of-type({i})") for name, i in
                     (("both", both), ("cited", cited), ("plain", plain))}
        finally:
            browser.close()
    assert looks["both"] != looks["cited"] and looks["cited"] != looks["plain"], looks
