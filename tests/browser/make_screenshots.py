"""Take the user guide's screenshots: every page of the app at 1400×1000 in headless chromium.

    .venv/bin/python tests/browser/make_screenshots.py            # a fresh data dir (ingests the guide)
    .venv/bin/python tests/browser/make_screenshots.py --data-dir ~/.local/share/ragcore

Starts `streamlit run app.py` on a free port (tests/app_support.py's AppServer), asks the demo
question, and saves notebook.png, retrieval-lab.png, library-viewer.png, library-collections.png,
library-ingest.png, evaluate.png and settings.png next to this script.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "docs" / "screenshots"  # where the guide's pages show them from (kept out of the demo corpus: no code there)
sys.path.insert(0, str(ROOT))

from tests.support.app_support import AppServer  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
QUESTION = "What does the threshold apply to?"


def _nav(page, title: str) -> None:
    page.locator("[data-testid='stSidebar'] [data-testid='stPageLink'] a", has_text=title).click()
    time.sleep(0.5)


def _settle(page, seconds: float = 1.5) -> None:
    """Wait until Streamlit is idle (no running script), then a little longer for charts."""
    try:
        page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=30_000)
    except Exception:  # noqa: BLE001 - a status widget that stays: take the picture anyway
        pass
    time.sleep(seconds)


def _save(page, name: str) -> None:
    page.screenshot(path=str(HERE / f"{name}.png"))
    print("saved", HERE / f"{name}.png")


def take(url: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.set_default_timeout(240_000)
        page.goto(url + "/")
        box = page.locator("textarea[data-testid='stChatInputTextArea']")
        box.wait_for()
        box.fill(QUESTION)
        box.press("Enter")
        # the answer's first cited passage, shown beside it once the app is at rest
        page.locator(".rc-cites .rc-cite:visible").first.wait_for()
        _settle(page)
        page.locator("[data-testid='stMarkdownContainer'] a[href^='#cite-']").last.scroll_into_view_if_needed()
        _save(page, "notebook")

        page.locator(".rc-cites .rc-cite:visible a.rc-open").first.click()
        page.get_by_text(re.compile(r"Cited lines? \d+")).first.wait_for()
        _settle(page)
        _save(page, "library-viewer")

        _nav(page, "Retrieval lab")
        q = page.get_by_role("textbox", name="Question")
        q.fill(QUESTION)
        q.press("Enter")
        page.locator(".rc-lab table").first.wait_for()
        _settle(page)
        page.locator(".rc-lab table").first.scroll_into_view_if_needed()
        _save(page, "retrieval-lab")

        _nav(page, "Library")
        page.get_by_role("tab", name="Collections").click()
        _settle(page)
        _save(page, "library-collections")
        page.get_by_role("tab", name="Ingest").click()
        _settle(page, 0.5)
        _save(page, "library-ingest")

        _nav(page, "Evaluate")
        _settle(page)
        _save(page, "evaluate")

        _nav(page, "Settings")
        _settle(page)
        _save(page, "settings")
        browser.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, help="an existing data directory (default: a fresh temporary one)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="ragcore-shots-"))
    server = AppServer(args.data_dir or tmp / "data", tmp / "streamlit.log")
    server.start()
    try:
        take(server.url)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
