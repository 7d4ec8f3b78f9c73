"""Real-browser tests: `streamlit run app.py` + Debian's headless chromium via Playwright.

One app server is shared by the module (a fresh data directory, so the first test watches a cold
start: the app ingests the user guide). Cold start: Streamlit's automatic list of the pages/
files ("app, evaluate, library…") must never appear, and the app's own navigation must appear
within 2 s of the first response. Then: a question the guide answers, its citation read in place
(hover and the preview beside the answer) and opened in the viewer; the lab's controls not
changing the notebook until applied (also when the browser echoes the lab's older URL); a
notebook link asking its question and bringing its cell into view; the viewer marking what an
answer quoted from the lines selected in it; the lab's table fitting 1280 px with every retrieval signal on
(no sideways scroll, full text on hover); the notebook's evidence table fitting 1280 and 1400 px, full text on hover;
a background ingest that the analyst cancels while using
the app; renaming and deleting that collection; settings surviving a restart of the app; Stop
on a slow model (the answer streams inside a fragment, whose clicks Streamlit queues). All along, the browser must fetch nothing from a host other than the app's.
Screenshots are saved in the tests' tmp folder.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import pytest

from tests.conftest import REPO
from tests.support.app_support import AppServer
from tests.support.openai_server import ScriptedOpenAIServer, Text
from ui.share import SNAP_SECONDS

ROOT = REPO
CHROMIUM = "/usr/bin/chromium"
QUESTION = "What does the threshold apply to?"
NAV_TITLES = ["Notebook", "Retrieval lab", "Library", "Evaluate", "Settings"]  # ui/shell.py's PAGES
NAV_WITHIN_S = 2.0
CHAT_WITHIN_S = 5.0  # the notebook's chat box, from the first page load on a fresh data folder
LOCAL_HOSTS = {"127.0.0.1", "localhost"}
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
VIEWPORT = {"width": 1400, "height": 1000}

# Runs in the page before Streamlit's own scripts. It records every moment Streamlit's own
# sidebar navigation (the automatic pages/ list) is in the DOM, however briefly, and when the
# app's navigation links first appear, on the page's clock (performance.now()).
_WATCH_NAV_JS = """
window.__rcNav = {auto: [], navAt: null};
new MutationObserver(() => {
  const auto = document.querySelectorAll('[data-testid="stSidebarNav"], [data-testid="stSidebarNavLink"]');
  if (auto.length) window.__rcNav.auto.push([performance.now(), [...auto].map(e => e.innerText.trim()).join(" | ")]);
  if (window.__rcNav.navAt === null) {
    const links = [...document.querySelectorAll('[data-testid="stSidebar"] [data-testid="stPageLink"] a')];
    if (links.length >= %d) window.__rcNav.navAt = performance.now();
  }
}).observe(document, {subtree: true, childList: true, characterData: true});
""" % len(NAV_TITLES)

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def shots(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("browser-shots")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{CHROMIUM} is missing; CI must install Debian's chromium (apt-get install chromium)")
        pytest.skip(f"{CHROMIUM} is missing: install it with `apt-get install chromium` to run the browser test")
    pytest.importorskip("playwright.sync_api")
    d = tmp_path_factory.mktemp("browser-app")
    srv = AppServer(d / "data", d / "streamlit.log")
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport=VIEWPORT)
    requests: list[str] = []
    context.on("request", lambda r: requests.append(r.url))
    pg = context.new_page()
    pg.set_default_timeout(60_000)  # a busy machine
    yield pg
    context.close()
    remote = sorted({u for u in requests if urlsplit(u).scheme in ("http", "https", "ws", "wss")
                     and urlsplit(u).hostname not in LOCAL_HOSTS})
    assert not remote, f"the app fetched from the internet: {remote}"


def _shot(page, folder: Path, name: str) -> Path:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    print(f"screenshot: {path}")
    return path


def _idle(page, timeout_s: float = 60.0) -> None:
    """Wait until the app's script run has finished (Streamlit's running indicator is gone): on a
    loaded machine a click made mid-run is answered only after the run it interrupts."""
    page.wait_for_function("() => !document.querySelector(\"[data-testid='stStatusWidgetRunningIcon'], "
                           "[data-testid='stStatusWidgetRunningManIcon']\")", timeout=timeout_s * 1000, polling=100)
    time.sleep(0.5)  # a rerun the last event queued starts within this


def _cells_drawn(page, n: int, timeout_s: float = 120.0) -> int:
    """Wait until at least ``n`` notebook cells are drawn, then for the run to end, and return the count.
    A run draws cells top down and the running icon shows only after a delay, so on a loaded machine a
    count taken right after a click or a load can catch the run midway (CI counted 11 of 14)."""
    page.wait_for_function("n => document.querySelectorAll(\"[class*='st-key-cell_']\").length >= n",
                           arg=n, timeout=timeout_s * 1000, polling=200)
    _idle(page)
    return page.locator("[class*='st-key-cell_']").count()


def _slider_to(page, value: str, tries: int = 60) -> None:
    """Move the focused threshold slider to ``value`` with the keyboard. Under load a rerun can
    re-render the slider between key presses and drop some of them, so keep pressing until the
    slider reads ``value`` (what is tested is where the value ends up, not how many presses).
    Returns once the lab has run with it (its URL says so): the slider reads a key press at once
    but sends it to the app a moment later, and on a loaded machine a click made before then was
    seen to leave the app at the previous value (0.28 when the slider read 0.29)."""
    for _ in range(tries):
        _idle(page)
        now = page.evaluate("sel => document.querySelector(sel).getAttribute('aria-valuetext')", THRESHOLD)
        if now == value:
            _url_threshold_is(page, value)
            return
        _threshold_slider(page).focus()
        page.keyboard.press("ArrowRight" if float(now) < float(value) else "ArrowLeft")
    raise AssertionError(f"the threshold slider did not reach {value}: it reads {now}, the URL is {page.url}")


def _url_threshold_is(page, value: str, timeout_s: float = 60.0) -> None:
    """Wait until the lab's URL (ui/share.py, written by a run) carries the threshold ``value``."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function("v => Number(new URLSearchParams(location.search).get('thr')).toFixed(2) === v",
                               arg=value, timeout=timeout_s * 1000, polling=100)
    except PlaywrightTimeout:
        raise AssertionError(f"the slider reads {value} but the lab never ran with it: {page.url}") from None
    _idle(page)


def _nav(page, title: str) -> None:
    """Navigate inside the app (same session): a page load would start a new session. Returns once
    the page's own heading shows (until then the previous page's text is still on screen)."""
    page.locator("[data-testid='stSidebar'] [data-testid='stPageLink'] a", has_text=title).click()
    page.locator("[data-testid='stMainBlockContainer'] h2", has_text=title).first.wait_for()
    _idle(page)  # and the run has ended: the previous page's elements are gone


def _wait_ready(page, timeout_s: float = 600) -> None:
    """Run alone, a test meets the cold start: wait until ragcore is loaded and the demo collection built
    (the notebook's question box is usable before that, on purpose)."""
    page.wait_for_function("""() => document.querySelector("textarea[data-testid='stChatInputTextArea']")
        && !document.querySelector("[class*='st-key-nb_building'], [data-testid='stSidebar'] [data-testid='stProgress']")
        && !document.body.innerText.includes('Starting ragcore')
        && document.querySelector("[data-testid='stSidebar'] [data-testid='stSelectbox']")""", timeout=timeout_s * 1000, polling=500)
    _idle(page)


def _ask(page, question: str = QUESTION, timeout_s: float = 120.0) -> None:
    """Type ``question`` into the notebook's box and press Enter. While the question box's fragment redraws,
    the page briefly holds the old box and the new one; at load 22 that moment outlasted ``_idle`` (a strict
    locator then saw two), so wait until one box is left."""
    page.wait_for_function("() => document.querySelectorAll(\"textarea[data-testid='stChatInputTextArea']\").length === 1",
                           timeout=timeout_s * 1000, polling=100)
    box = page.locator("textarea[data-testid='stChatInputTextArea']")
    box.wait_for()
    box.fill(question)
    box.press("Enter")


def _open_citation(page, href: str, tries: int = 4) -> None:
    """Click the answer's ``href`` ([n]) and wait until its passage is the one shown. A click that lands
    while a late full-app rerun redraws the cell is undone by the redraw (seen in CI 1 in ~6 runs, and at
    load 16-24 as a 60 s wait for a passage that never showed): a known flaw, kept in issue 42's note.
    What is tested is that the click opens the passage in place once the app is at rest, so the click is
    repeated after the rerun, at most ``tries`` times, and the count is printed."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(1, tries + 1):
        _idle(page)
        page.locator(f"[data-testid='stMarkdownContainer'] a[href='{href}']").first.click()
        try:
            page.wait_for_function("id => { const t = document.getElementById(id); return t && getComputedStyle(t).display === 'block' }",
                                   arg=href[1:], timeout=30_000)
            _idle(page)
            if page.evaluate("id => { const t = document.getElementById(id); return !!t && getComputedStyle(t).display === 'block' }",
                             href[1:]):
                if attempt > 1:
                    print(f"citation {href} opened on click {attempt}: a rerun undid the earlier click")
                return
        except PlaywrightTimeout:
            pass
    raise AssertionError(f"clicking {href} never showed its passage in {tries} clicks")


def _load_factor() -> float:
    """Targets are for a machine with a core to spare; on a loaded one they scale with the run queue
    (load average per core), so a busy CI box tests the same thing instead of its load."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


CITE_LINKS = "[data-testid='stMarkdownContainer'] a[href^='#cite-']"


def test_cold_start_ask_and_read_a_citation_in_place(server, page, shots):
    # a fresh data folder: the question box is usable at once while the demo collection builds in
    # the background; a question asked meanwhile waits for it with a visible status
    nav_delay, box_after = _watch_cold_start(page, server.url, shots)
    t0 = time.monotonic()
    _ask(page)
    # the question waits for the build (or for ragcore to load), and says so
    page.get_by_text(re.compile(r"(Waiting for 'guide' to finish building|Your question is answered as soon as it is ready)"))\
        .first.wait_for(timeout=60_000)
    _shot(page, shots, "0b-question-waits-for-the-build")
    inline = page.locator(CITE_LINKS).first
    inline.wait_for(timeout=300_000)
    print(f"first answer with citations after {time.monotonic() - t0:.1f} s (demo build and cold composer)")
    page.get_by_text("composing the answer").first.wait_for(state="detached")
    # hover: the [n] carries its passage (provenance and text) as its hover text; no link to a new tab
    title = inline.get_attribute("title") or ""
    assert re.match(r"［\d+］ [\w./-]+\.md:\d+", title) and "cosine" in title and "support" in title, title
    assert page.locator("[data-testid='stMarkdownContainer'] a[href*='library?path=']").count() == 0
    # beside the answer: the first citation's passage, cited lines highlighted, with its scores.
    # Counted once the app is at rest: a full-app rerun that starts as the answer ends (the demo's
    # build finishing) draws the saved cell while Streamlit still shows the fragment's copy until
    # the run ends (seen once in CI: two panels, so two visible passages, for a moment)
    _idle(page)
    page.wait_for_function("() => document.querySelectorAll('.rc-cites').length === 1", timeout=60_000, polling=200)
    shown = page.locator(".rc-cites .rc-cite:visible")
    shown.first.wait_for()
    assert shown.count() == 1 and shown.first.locator(".rc-line.hl").count() >= 1
    assert shown.first.locator(".rc-no", has_text=re.compile(r"^\d+$")).count() >= 1  # real line numbers
    # clicking [n] in the answer opens passage n in place: no rerun, the other passages hidden
    # after the run that drew the answer has ended: that run writes the cell and question into the
    # URL, and a click that lands before it ends was seen undone once (passage 2 shown, 3 clicked)
    _idle(page)
    hrefs = page.locator(CITE_LINKS).evaluate_all("els => els.map(e => e.getAttribute('href'))")
    last = hrefs[-1]
    _open_citation(page, last)
    assert shown.count() == 1 and shown.first.get_attribute("id") == last[1:]
    n = last.rsplit("-", 1)[1]
    assert shown.first.locator(".rc-head").inner_text().startswith(f"[{n}] ")
    _shot(page, shots, "1-notebook-citation-in-place")
    # 'open in viewer' stays: same tab, the Library's viewer at the cited lines
    pages_before = len(page.context.pages)
    shown.first.get_by_role("link", name="Open in the source viewer").click()
    hl = page.locator(".rc-src .rc-line.hl")
    page.get_by_text(re.compile(r"Cited lines? \d+")).first.wait_for()
    assert hl.count() >= 1 and len(page.context.pages) == pages_before
    assert re.search(r"/library\?", page.url), page.url

    # the same question again, now warm: well under 3 s to citations
    _nav(page, "Notebook")
    before = page.locator(CITE_LINKS).count()
    t0 = time.monotonic()
    _ask(page)
    page.wait_for_function("n => document.querySelectorAll(\"" + CITE_LINKS + "\").length > n", arg=before)
    warm = time.monotonic() - t0
    print(f"warm answer with citations after {warm:.2f} s")
    assert warm < 3.0 * _load_factor(), warm
    allowed = NAV_WITHIN_S * _load_factor()
    print(f"navigation {nav_delay:.2f} s after the first response (allowed {allowed:.2f} s at this load)")
    assert nav_delay <= allowed, f"the navigation took {nav_delay:.2f} s after the first response (allowed {allowed:.2f} s)"
    allowed_box = CHAT_WITHIN_S * _load_factor()
    print(f"chat box usable {box_after:.2f} s after the first page load (allowed {allowed_box:.2f} s at this load)")
    assert box_after <= allowed_box, f"the chat box took {box_after:.2f} s (allowed {allowed_box:.2f} s)"


def test_code_in_an_answer_renders_as_code(server, page, shots):
    page.goto(server.url + "/")
    _wait_ready(page)
    code = page.locator("[data-testid='stMarkdownContainer'] pre code")
    before = code.count()
    _ask(page, "How do I ingest a folder?")
    page.wait_for_function("n => document.querySelectorAll(\"[data-testid='stMarkdownContainer'] pre code\").length > n",
                           arg=before)
    page.get_by_text("composing the answer").first.wait_for(state="detached")
    texts = code.all_inner_texts()
    assert "ragcore ingest PATH... --collection NAME" in [t.strip() for t in texts], texts
    # no literal fence anywhere, and no [n] inside a code block (markers stay outside, as links)
    md = page.locator("[data-testid='stMarkdownContainer']").all_inner_texts()
    assert not any("```" in t for t in md), [t for t in md if "```" in t][:2]
    assert not any(re.search(r"\[\d+\]", t) for t in texts), texts
    _shot(page, shots, "1b-notebook-code-block")


THRESHOLD = "[data-testid='stMain'] input[type='range'][aria-label='Threshold (cosine)']"  # Streamlit 1.67's slider


def _threshold_slider(page):
    return page.locator(THRESHOLD)


def _lab_ask(page, question: str = QUESTION, tries: int = 3) -> None:
    """Ask in the lab and wait for its table. On a loaded machine a question typed while a rerun is
    redrawing the page can be lost with the input it was typed into (the run replaces the element):
    wait until the app is idle before typing, and type it again if no table comes."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for attempt in range(tries):
        _idle(page)
        q = page.get_by_role("textbox", name="Question")
        q.fill(question)
        q.press("Enter")
        try:
            page.locator(".rc-lab table").first.wait_for(timeout=120_000)
            return
        except PlaywrightTimeout:
            print(f"the lab showed no table after try {attempt + 1}")
    raise AssertionError(f"the lab showed no table after {tries} tries")


def test_the_lab_does_not_change_the_notebook_until_applied(server, page, shots):
    page.goto(server.url + "/")
    # run alone, this test meets the demo ingest of a cold start: the notebook shows once it is done
    _wait_ready(page)
    _nav(page, "Retrieval lab")
    _lab_ask(page)
    thumb = _threshold_slider(page)
    thumb.focus()
    for _ in range(29):  # fast keyboard moves, as in the report
        page.keyboard.press("ArrowRight")
    _slider_to(page, "0.29")
    # the lab ran with what its slider shows: it now differs from the notebook (0.00)
    page.get_by_role("button", name="Use these settings in the notebook").and_(page.locator(":enabled")).wait_for()
    _idle(page)
    _shot(page, shots, "2-retrieval-lab")
    assert not page.locator("[data-testid='stSidebar'] [data-testid='stSlider']").count(), "no retrieval slider in the sidebar"
    _nav(page, "Notebook")
    caption = page.get_by_text(re.compile(r"^Asking .* threshold"))
    caption.first.wait_for()
    assert "threshold 0.00" in caption.first.inner_text()
    # explicitly: the lab's settings into the notebook. What the lab's slider shows is what it used
    # and what is applied: a key press dropped on a busy machine must not leave it showing 0.29
    # while using 0.28 (ui.state.bound adopts the widget's value)
    _nav(page, "Retrieval lab")
    _idle(page)
    # back in the lab it still reads 0.29: the URL is adopted when a session opens, never from a
    # browser that echoes the lab's earlier URL (thr=0.0) later in it (ui/share.py, adopt_url)
    assert page.locator(THRESHOLD).get_attribute("aria-valuetext") == "0.29"
    apply = page.get_by_role("button", name="Use these settings in the notebook").and_(page.locator(":enabled"))
    apply.wait_for(timeout=90_000)
    apply.click()
    toast = page.get_by_text("The notebook now uses").first
    toast.wait_for()
    assert "threshold 0.29" in toast.inner_text(), toast.inner_text()
    _idle(page)
    _nav(page, "Notebook")
    page.get_by_text(re.compile(r"^Asking .* threshold 0\.29")).first.wait_for()


_IN_VIEW_JS = """sel => { const el = document.querySelector(sel); if (!el) return null; const r = el.getBoundingClientRect();
  return {top: r.top, bottom: r.bottom, height: innerHeight, outline: getComputedStyle(el).outlineStyle,
          scrolled: document.querySelector("[data-testid='stMain']").scrollTop || document.scrollingElement.scrollTop}; }"""


def _url_cell_changes(page, old: str | None) -> str:
    """Waits until the URL names a selected cell other than ``old`` (the newest answer's); returns it."""
    page.wait_for_function("old => { const c = new URLSearchParams(location.search).get('cell'); return c && c !== old }",
                           arg=old, timeout=120_000)
    return parse_qs(urlsplit(page.url).query)["cell"][0]


def test_a_notebook_link_asks_its_question_and_a_cell_link_scrolls_to_it(server, page, shots):
    page.set_viewport_size({"width": 1400, "height": 700})
    # a link with a question the notebook has no cell for: asked, and the URL then names its cell and question
    first = "How do I delete a collection?"
    page.goto(server.url + "/?q=" + quote(first))
    _wait_ready(page)
    first_id = _url_cell_changes(page, None)
    assert parse_qs(urlsplit(page.url).query)["q"] == [first]
    page.locator(f".st-key-cell_{first_id}_sel").wait_for()
    # two more questions: the second's cell is then below the fold of a fresh load
    second = "How do I ingest a folder?"
    _idle(page)  # the fragment's redraw is over (for a moment it shows the old and the new chat box)
    _ask(page, second)
    second_id = _url_cell_changes(page, first_id)
    link = page.url
    assert parse_qs(urlsplit(link).query)["q"] == [second]
    _idle(page)
    _ask(page, "What is the retrieval lab for?")
    _url_cell_changes(page, second_id)
    _idle(page)
    n_cells = page.locator("[class*='st-key-cell_']").count()
    # the link to the second cell, opened anew: scrolled to it, outlined, nothing asked again
    page.goto(link)
    box = f".st-key-cell_{second_id}_sel"
    page.locator(box).wait_for(timeout=120_000)
    page.wait_for_function("sel => { const r = document.querySelector(sel).getBoundingClientRect(); "
                           "return r.top >= 0 && r.top < innerHeight / 2 }", arg=box, timeout=90_000)
    _idle(page)
    got = page.evaluate(_IN_VIEW_JS, box)
    print(f"the linked cell after the load: {got}")
    assert got["outline"] == "solid" and 0 <= got["top"] < got["height"] / 2 and got["scrolled"] > 0, got
    assert _cells_drawn(page, n_cells) == n_cells, "opening the link again asked nothing new"
    _shot(page, shots, "2c-notebook-cell-link")
    # the view is the analyst's again: scrolling up stays up (the snap to the cell has ended)
    time.sleep(SNAP_SECONDS)
    page.mouse.move(800, 300)
    page.mouse.wheel(0, -5000)
    time.sleep(1.0)
    assert page.evaluate(_IN_VIEW_JS, box)["scrolled"] < got["scrolled"] - 200, "the page snapped back to the cell"


# the lab's chunk table (ui/labtable.py, in st.html): overflow of its box, and where the score headers end
_LAB_FIT_JS = """() => {
  const box = document.querySelector("[data-testid='stMainBlockContainer'] .rc-lab");
  const heads = Object.fromEntries([...box.querySelectorAll("th")].map(th => [th.innerText.trim(), th.getBoundingClientRect().right]));
  return {overflow: box.scrollWidth - box.clientWidth, heads: heads, viewport: window.innerWidth,
          pageOverflow: document.documentElement.scrollWidth - document.documentElement.clientWidth};
}"""


def test_the_lab_table_fits_1280_px_with_every_signal_on_and_shows_full_text_on_hover(server, page, shots):
    page.set_viewport_size({"width": 1280, "height": 1000})
    page.goto(server.url + "/")
    _wait_ready(page)
    _nav(page, "Retrieval lab")
    _lab_ask(page)
    page.get_by_role("button", name="Signals").click()
    for label, value in (("Field weight (titles, sections, anchors, file names)", "2"), ("Expansion terms (0 = off)", "5")):
        _idle(page)
        box = page.get_by_role("spinbutton", name=label)
        box.fill(value)
        box.press("Enter")
        page.get_by_text(re.compile(r"^Signals: .*" + ("field weight 2" if value == "2" else "5 expansion terms"))).first.wait_for()
    page.keyboard.press("Escape")
    expanded = page.get_by_text("expanded with:").first
    expanded.wait_for()
    # the signals on by default stay on, and the expansion terms carry their weights (the best at
    # the default 0.30): the popover's other controls are not reset to their minimum when it opens
    summary = page.get_by_text(re.compile(r"^Signals: ")).first.inner_text()
    assert "document decay 1" in summary and "named pages 0.6" in summary, summary
    assert "(0.30)" in expanded.inner_text(), expanded.inner_text()
    page.mouse.move(5, 990)  # no popover or tooltip over the table
    _idle(page)
    _shot(page, shots, "2b-retrieval-lab-signals-1280")
    fit = page.evaluate(_LAB_FIT_JS)
    # every signal column on (field, doc, doc #): locator, section and passage give way, the scores stay in view
    assert fit["overflow"] == 0 and fit["pageOverflow"] <= 0, fit
    for head in ("rank", "kept / cut", "cosine", "BM25", "fused", "field", "doc", "doc #"):
        assert head in fit["heads"] and fit["heads"][head] <= fit["viewport"], (head, fit)
    # a shortened cell shows its full text on hover (the browser's title tooltip)
    table = page.locator(".rc-lab table")
    cell = table.locator("td.loc", has_text="…").first
    cell.hover()
    shown, title = cell.inner_text(), cell.get_attribute("title") or ""
    head, tail = shown.split("…")
    assert re.fullmatch(r"[\w./-]+\.md:\d+-\d+", title) and title.startswith(head) and title.endswith(tail), (shown, title)
    assert table.locator("td.txt").first.get_attribute("title"), "the passage on hover"
    assert (table.locator("tr.cut td.st").first.get_attribute("title") or "").startswith("Cut: ")


# the notebook's evidence table (ui/cells.py evidence_table_html, in st.html): its box, its table and
# the header cells, measured as laid out
_EVIDENCE_FIT_JS = """() => {
  const box = document.querySelector("[data-testid='stMainBlockContainer'] .rc-ev");
  const r = e => e.getBoundingClientRect();
  const heads = Object.fromEntries([...box.querySelectorAll("th")].map(th => [th.innerText.trim(), r(th).right]));
  return {overflow: box.scrollWidth - box.clientWidth, tableRight: r(box.querySelector("table")).right,
          boxRight: r(box).right, heads: heads, viewport: window.innerWidth,
          pageOverflow: document.documentElement.scrollWidth - document.documentElement.clientWidth};
}"""


def test_the_evidence_table_fits_and_shows_full_text_on_hover(server, page, shots):
    page.goto(server.url + "/")
    # run alone, this test meets the demo ingest of a cold start: the notebook shows once it is done
    _wait_ready(page)
    before = page.locator("[data-testid='stMarkdownContainer'] a[href^='#cite-']").count()
    _ask(page)
    page.wait_for_function(
        "n => document.querySelectorAll(\"[data-testid='stMarkdownContainer'] a[href^='#cite-']\").length > n", arg=before)
    page.get_by_text("composing the answer").first.wait_for(state="detached")
    time.sleep(1.0)  # the last rerun settles: a click during it is lost with the element it hit
    page.get_by_text("Evidence and checks").last.click()
    table = page.locator("[data-testid='stMainBlockContainer'] .rc-ev table")
    table.wait_for()
    for width in (1400, 1280):
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_function("w => window.innerWidth === w", arg=width)
        fit = page.evaluate(_EVIDENCE_FIT_JS)
        assert fit["overflow"] == 0 and fit["tableRight"] <= fit["boxRight"] + 0.5, (width, fit)
        for head in ("rank", "kept / cut", "cosine", "BM25", "fused"):  # in view, no sideways scroll
            assert head in fit["heads"] and fit["heads"][head] <= fit["viewport"], (width, head, fit)
    assert table.locator("td.st", has_text=re.compile(r"^(cited|used) \[\d+\]$")).count() >= 1
    assert table.locator("td.st", has_text=re.compile(r"^cut: ")).count() >= 1
    # a shortened locator: the cell shows its start and end, its title (the browser's hover) all of it
    cell = table.locator("td.loc", has_text="…").first
    cell.hover()
    shown, title = cell.inner_text(), cell.get_attribute("title") or ""
    head, tail = shown.split("…")
    assert re.fullmatch(r"[\w./-]+\.md:\d+-\d+", title) and len(title) > len(shown), (shown, title)
    assert title.startswith(head) and title.endswith(tail), (shown, title)
    passage = table.locator("td.txt").first.get_attribute("title") or ""
    assert len(passage) > len(table.locator("td.txt").first.inner_text()), "the whole passage on hover"
    _shot(page, shots, "2c-notebook-evidence-1280")


# what is cut at a width: a main container or table box wider inside than its box, a button label wider
# than its button, the page scrolling sideways (only what is displayed counts)
_CUT_JS = """() => {
  const out = [];
  const seen = el => el.offsetParent !== null;
  const boxes = document.querySelectorAll("[data-testid='stMainBlockContainer'], [data-testid='stSidebarContent'], "
    + ".rc-lab, .rc-ev, .rc-cites, .rc-src, [data-testid='stHorizontalBlock']");
  for (const b of boxes) if (seen(b) && b.scrollWidth > b.clientWidth + 1)
    out.push(['box', b.getAttribute('data-testid') || b.className, b.scrollWidth, b.clientWidth]);
  for (const p of document.querySelectorAll("button p, [data-testid='stPageLink'] p, [data-testid='stMetricLabel'] p, [data-testid='stMetricValue'] > div")) if (seen(p) && p.scrollWidth > p.clientWidth + 1)
    out.push(['label', p.innerText, p.scrollWidth, p.clientWidth]);
  const de = document.documentElement;
  if (de.scrollWidth > de.clientWidth) out.push(['page', de.scrollWidth, de.clientWidth]);
  return out;
}"""
SIZES = ({"width": 1024, "height": 768}, {"width": 1400, "height": 1000})


def _fits(page, shots: Path, name: str) -> None:
    for size in SIZES:
        page.set_viewport_size(size)
        page.wait_for_function("w => window.innerWidth === w", arg=size["width"])
        time.sleep(0.4)  # layout settles
        cut = page.evaluate(_CUT_JS)
        _shot(page, shots, f"8-fit-{name}-{size['width']}")
        assert not cut, (name, size, cut)


def test_every_page_fits_1024_and_1400_px_and_a_link_reproduces_a_lab_setup(server, page, shots):
    page.goto(server.url + "/")
    _wait_ready(page)
    if not page.locator(CITE_LINKS).count():  # run alone: one answer to measure
        _ask(page)
        page.locator(CITE_LINKS).first.wait_for()
        page.get_by_text("composing the answer").first.wait_for(state="detached")
        _idle(page)
    page.get_by_text("Evidence and checks").last.click()
    page.locator(".rc-ev table").first.wait_for()
    _fits(page, shots, "notebook")
    # the lab from a link: its question, cuts and signals come from the URL
    page.goto(server.url + "/retrieval_lab?collection=guide&q=What+is+top-K%3F&k=9&thr=0.12&fw=2&prf=5")
    page.locator(".rc-lab table").first.wait_for(timeout=120_000)
    page.wait_for_function("() => [...document.querySelectorAll('input')].some(e => e.getAttribute('aria-label') === 'Question' "
                           "&& e.value === 'What is top-K?')")
    assert page.locator(THRESHOLD).get_attribute("aria-valuetext") == "0.12"
    page.get_by_text(re.compile(r"^Signals: .*field weight 2.*5 expansion terms")).first.wait_for()
    _fits(page, shots, "lab")
    page.get_by_role("tab", name="A/B comparison").click()  # configuration A is the lab's own setup
    page.get_by_text(re.compile(r"^Mode \w+ · top-K 9 · threshold 0\.12")).first.wait_for()
    _fits(page, shots, "lab-ab")
    for title, name in (("Library", "library"), ("Evaluate", "evaluate"), ("Settings", "settings")):
        _nav(page, title)
        _fits(page, shots, name)
    _nav(page, "Library")
    for tab in ("Collections", "Ingest"):
        page.get_by_role("tab", name=tab).click()
        _idle(page)
        _fits(page, shots, f"library-{tab.lower()}")


def test_the_viewer_marks_what_an_answer_quoted_from_its_selection(server, page, shots):
    doc = "05-scores-top-k-and-threshold.md"
    page.goto(server.url + "/")
    _wait_ready(page)  # run alone, this test meets the cold start
    page.goto(server.url + f"/library?collection=guide&path={doc}&lines=49-59")
    page.locator(".rc-src .rc-line.sel").first.wait_for(timeout=120_000)
    _idle(page)
    q = page.get_by_role("textbox", name="Question about these lines")
    q.fill(QUESTION)
    q.press("Enter")
    _idle(page)
    page.get_by_role("button", name="Ask").click()
    page.locator(".rc-cites").first.wait_for(timeout=120_000)
    _idle(page)
    # the viewer marks the lines the answer quoted, all of them inside the selection
    quoted = page.locator(".rc-src[data-path='%s'] .rc-line.q" % doc)  # the viewer's, not the cited-passages panel's
    quoted.first.wait_for()
    rows = quoted.evaluate_all("els => els.filter(e => !e.closest('.rc-cites')).map(e => [e.getAttribute('data-line'), e.className])")
    numbers = [int(n) for n, _ in rows]
    assert numbers and all(49 <= n <= 59 for n in numbers), numbers
    assert all("sel" in c.split() for _, c in rows), rows  # quoted lines are selected lines
    # beside the answer: the passage's support and whether it answers the question
    head = page.locator(".rc-cites .rc-cite:visible .rc-head").first.inner_text()
    assert re.search(r"from your selection · support \d\.\d\d · answers the question \d\.\d\d", head), head
    _shot(page, shots, "3b-viewer-quoted-selection")


def _big_folder(root: Path, files: int = 80, words: int = 2500) -> Path:
    folder = root / "field-notes"
    folder.mkdir()
    for i in range(files):
        para = " ".join(f"observation{i} item{j % 97} measured value {j} near station {j % 13}." for j in range(words // 8))
        (folder / f"note-{i:03d}.md").write_text(f"# Field note {i}\n\n## Readings\n\n{para}\n")
    return folder


def test_background_ingest_cancel_then_rename_and_delete(server, page, shots, tmp_path):
    folder = _big_folder(tmp_path)
    page.goto(server.url + "/")
    _wait_ready(page)  # run alone: one ingest at a time, and the demo collection is the first
    page.goto(server.url + "/library")
    page.get_by_role("tab", name="Ingest").click()
    page.get_by_role("textbox", name="Folder path").fill(str(folder))
    page.get_by_role("textbox", name="Folder path").press("Enter")
    page.get_by_text("Creates the collection field-notes").first.wait_for()  # new by default, named after the folder
    page.get_by_role("button", name="Ingest folder").click()
    t_start = time.monotonic()
    status = page.get_by_text(re.compile(r"\d+/80 files"))
    status.first.wait_for(timeout=60_000)
    # the counter moves with chunks embedded (the work that takes the time) and an ETA follows the first batches
    moved = re.compile(r"[1-9][\d,]* of ~?[\d,]+ chunks embedded .*about .* left")
    page.get_by_text(moved).first.wait_for(timeout=60_000)
    first_eta = time.monotonic() - t_start
    print(f"ingest: chunks counter and ETA {first_eta:.1f} s after the start")
    assert first_eta <= 10 * _load_factor(), first_eta
    # the rest of the app is usable meanwhile: the notebook answers, the sidebar shows the progress
    _nav(page, "Notebook")
    page.locator("[data-testid='stSidebar'] [data-testid='stProgress']").first.wait_for()
    before = page.locator("[data-testid='stMarkdownContainer'] a[href^='#cite-']").count()
    _ask(page, "What is top-K?")
    page.wait_for_function(
        "n => document.querySelectorAll(\"[data-testid='stMarkdownContainer'] a[href^='#cite-']\").length > n",
        arg=before, timeout=90_000)
    _nav(page, "Library")
    page.get_by_role("tab", name="Ingest").click()
    page.get_by_text(re.compile(r"(about .* left|estimating time left)")).first.wait_for(timeout=60_000)
    page.wait_for_function("() => /[1-9]\\d*\\/80 files/.test(document.body.innerText)", timeout=120_000)
    _shot(page, shots, "3-library-ingest-running")
    page.get_by_role("button", name="Cancel").click()
    msg = page.get_by_text(re.compile(r"cancelled after .*: the collection keeps \d+ documents? \([\d,]+ chunks\)")).first
    msg.wait_for(timeout=120_000)
    kept = re.search(r"keeps (\d+) documents? \(([\d,]+) chunks\)", msg.inner_text())
    # no warning that the collection being created "already exists"
    assert not page.get_by_text("already exists").count()
    _shot(page, shots, "4-library-ingest-cancelled")
    # what the message says was kept is what the collection holds; a reload keeps the collection (the URL names it)
    _idle(page)
    page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").click()
    page.get_by_role("option", name="field-notes").click()
    counts = f"{kept.group(1)} documents · {kept.group(2).replace(',', '')} chunks"
    page.locator("[data-testid='stSidebar']").get_by_text(re.compile("^" + re.escape(counts))).first.wait_for(timeout=60_000)
    page.wait_for_function("() => new URLSearchParams(location.search).get('collection') === 'field-notes'")
    page.reload()
    # the sidebar shows field-notes again (its own counts; a selectbox's value is not its text)
    page.locator("[data-testid='stSidebar']").get_by_text(re.compile("^" + re.escape(counts))).first.wait_for(timeout=60_000)
    assert "collection=field-notes" in page.url
    _idle(page)

    # the collection lists as incomplete; rename it, then delete it
    page.get_by_role("tab", name="Collections").click()
    page.get_by_text("Manage collection").first.wait_for()
    page.locator("[data-testid='stSelectbox']", has_text="Manage collection").click()
    page.get_by_role("option", name="field-notes").click()
    page.get_by_role("button", name="Delete 'field-notes'…").wait_for()  # the page shows field-notes now
    page.get_by_role("textbox", name="New name").fill("field-notes-2")
    page.get_by_role("textbox", name="New name").press("Enter")
    page.get_by_role("button", name="Rename").click()
    page.get_by_text("Renamed 'field-notes' to 'field-notes-2'").first.wait_for(timeout=60_000)
    _shot(page, shots, "5-library-collections")
    page.get_by_role("button", name="Delete 'field-notes-2'…").click()
    page.get_by_role("button", name="Delete permanently").click()
    page.get_by_text("Deleted the collection 'field-notes-2'").first.wait_for(timeout=60_000)
    page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").click()
    names = page.get_by_role("option").all_inner_texts()
    assert "guide" in names and not any("field-notes" in n for n in names), names


def test_settings_survive_a_restart(server, page, shots):
    page.goto(server.url + "/settings")
    topk = page.get_by_role("spinbutton", name="Top-K")
    topk.fill("9")
    page.get_by_role("button", name="Save defaults").click()
    page.get_by_text("Answering and retrieval defaults: saved in").first.wait_for()
    server.restart()
    page.goto(server.url + "/settings")
    page.get_by_role("spinbutton", name="Top-K").wait_for(timeout=120_000)
    assert page.get_by_role("spinbutton", name="Top-K").input_value() == "9"
    page.get_by_text("Where each value comes from").first.wait_for()
    _shot(page, shots, "6-settings")
    _nav(page, "Notebook")
    page.get_by_text(re.compile(r"top-K 9 · threshold")).first.wait_for()
    _stop_a_slow_answer(page, server.url, shots)


def _watch_cold_start(page, url: str, tmp_path: Path) -> tuple[float, float]:
    """From the first response until the chat box is usable: never Streamlit's automatic pages/ list;
    returns when the app's navigation appeared after the first response and the chat box after the load."""
    page.add_init_script(_WATCH_NAV_JS)
    t0 = time.monotonic()
    page.goto(url, wait_until="commit")
    box = page.locator("textarea[data-testid='stChatInputTextArea']:enabled")
    deadline, i = t0 + 300, 0  # ~10-20 s quiet; a loaded machine stretches a cold start
    while not box.count():  # a screenshot every ~200 ms, one in five kept
        assert time.monotonic() < deadline, "the chat box did not appear within 5 minutes of a cold start"
        shot = tmp_path / f"0-cold-{i // 5:03d}.png"
        page.screenshot(path=str(shot))
        auto = page.evaluate("(window.__rcNav || {auto: []}).auto")
        assert not auto, f"Streamlit's automatic pages/ navigation showed ({shot.name}): {auto[:3]}"
        i += 1
        time.sleep(0.2)
    box_after = time.monotonic() - t0
    links = page.locator("[data-testid='stSidebar'] [data-testid='stPageLink'] a")
    assert [t.split("\n")[-1].strip() for t in links.all_inner_texts()] == NAV_TITLES
    nav_at, auto = page.evaluate("[window.__rcNav.navAt, window.__rcNav.auto]")
    assert not auto, f"Streamlit's automatic pages/ navigation showed: {auto[:3]}"
    assert nav_at is not None, "the app's navigation never appeared"
    response_start = page.evaluate("performance.getEntriesByType('navigation')[0].responseStart")
    delay = (nav_at - response_start) / 1000
    print(f"cold start: the app's navigation appeared {delay:.2f} s after the first response; the chat box {box_after:.1f} s "
          "after the page load")
    return delay, box_after


def _stop_a_slow_answer(page, base: str, tmp_path: Path) -> None:
    """Connect a slow model on the Settings page, start an answer, press Stop."""
    server = ScriptedOpenAIServer()
    server.start()
    try:
        server.script([Text([f"token{i} " for i in range(200)], delay=0.1)])
        page.goto(base + "/settings")
        page.get_by_role("textbox", name="Base URL").fill(server.base_url)
        page.get_by_role("textbox", name="Model").fill(server.model)
        page.get_by_role("textbox", name="API key").fill("sk-browser-secret")
        page.get_by_role("button", name="Save endpoint").click()
        page.get_by_text("a key is set").first.wait_for()
        assert "sk-browser-secret" not in page.content()
        _shot(page, tmp_path, "6b-settings-endpoint")
        # navigate inside the app: a page load would start a new session without the endpoint
        page.locator("[data-testid='stSidebar'] [data-testid='stPageLink'] a", has_text="Notebook").click()
        box = page.locator("textarea[data-testid='stChatInputTextArea']")
        box.wait_for()
        # the restart may rebuild the demo collection in the background: ask once it is built (a
        # question asked during the build waits for it; Stop during that wait is not what this tests)
        page.locator(".st-key-nb_building").wait_for(state="detached", timeout=240_000)
        box.fill(QUESTION)  # its evidence is warm: the model's tokens start at once
        box.press("Enter")
        page.get_by_text("token5").first.wait_for(timeout=120_000)
        # the answer streams inside the notebook's fragment, whose clicks Streamlit queues until the
        # run ends: Stop must still end it within seconds (ui/streaming.py, pressed_since_run_began)
        page.get_by_role("button", name="Stop").click()
        page.get_by_text("Stopped by the analyst").first.wait_for(timeout=60_000)
        req = server.generation_requests()[-1]
        assert req.disconnected.wait(10), "Stop closed the model's HTTP stream"
        assert "token199" not in page.content()
        page.get_by_text("cancelled").first.wait_for()
        page.get_by_role("button", name="Stop").wait_for(state="detached")
        _shot(page, tmp_path, "7-stopped")
        # back to the extractive composer: the endpoint is saved in the settings file
        page.goto(base + "/settings")
        page.get_by_role("button", name="Switch back to extractive").click()
        page.get_by_text("Switched to the extractive composer").first.wait_for()
    finally:
        server.stop()


def test_a_long_notebook_draws_its_newest_cells_and_the_rest_on_request(server, page, shots):
    """A notebook of 14 cells draws the newest 10 (ui/cells.py SHOWN_CELLS: every answer's deltas make the
    browser redraw what is drawn); "Show all" draws the rest; a link to the oldest cell draws it, outlined."""
    page.goto(server.url + "/?collection=guide")
    _wait_ready(page)
    path = server.data_dir / "notebooks" / "guide.json"
    if not path.exists() or not json.loads(path.read_text())["cells"]:
        _ask(page)
        page.wait_for_function("() => [...document.querySelectorAll('button')].some(b => b.innerText.includes('Re-run'))",
                               timeout=180_000)
        _idle(page)
    data = json.loads(path.read_text())
    one = next(c for c in data["cells"] if c["runs"])
    data["cells"] = [{**one, "id": f"long{i:04d}", "question": f"{one['question']} ({i})"} for i in range(14)]
    path.write_text(json.dumps(data))
    page.goto(server.url + "/?collection=guide")  # a new session reads the file
    _wait_ready(page)
    assert _cells_drawn(page, 10) == 10
    page.get_by_text("4 earlier cells not drawn").wait_for()
    page.get_by_role("button", name="Show all 4").click()
    page.locator(".st-key-cell_long0000").wait_for()
    assert _cells_drawn(page, 14) == 14
    _shot(page, shots, "2d-long-notebook-all")
    # a link to the oldest cell, opened anew: drawn (with those after it), outlined, nothing asked
    page.goto(server.url + "/?collection=guide&cell=long0000&q=" + quote(f"{one['question']} (0)"))
    page.locator(".st-key-cell_long0000_sel").wait_for(timeout=120_000)
    assert _cells_drawn(page, 14) == 14 and not page.get_by_text("earlier cells not drawn").count()
    assert len(json.loads(path.read_text())["cells"]) == 14
