"""Issue 42, item 7: the notebook's smaller things and the pages' layouts, in headless chromium on the
real app (``streamlit run app.py``, the real engine and ONNX model, embedded Qdrant in a temp folder).

- the toolbar's cell count (and its exports) follow a question answered in the notebook's fragment;
- a cell keeps the number it is first drawn with (asked in the fragment, asked by a ``?q=`` link, after a
  reload). The report's "17 on first draw, 18 after" was not reproduced on this machine: this test passes
  on the code before issue 42's fixes too, and guards the flows it covers;
- every row of the source viewer carries its source line number (an HTML ``<pre>`` line that shares its
  source line with the paragraph before it sat on an unnumbered row);
- at 1024×768 and 1400×900 no page wraps a button label or an option group, cuts a label, a table
  cell or an option at its box's edge, or draws an empty box; a cell's buttons stay one row.

The app starts on a copy of the prebuilt demo collection ("guide", tests/conftest.py ``copy_guide``)
plus a one-page HTML collection ("pages"), so no test waits for a cold start. The retrieval lab is
another helper's page (issue 42's lab items) and is not measured here. Screenshots are saved in the
tests' tmp folder.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.browser.test_browser import ARGS, CHROMIUM, _ask, _idle, _nav, _shot, _wait_ready  # noqa: F401
from tests.browser.test_browser import browser, page, shots  # noqa: F401  (fixtures: the browser, a page, the screenshots folder)
from tests.conftest import ENCODER, copy_guide, write_corpus
from tests.support.app_support import AppServer

pytestmark = pytest.mark.browser

# line 3 holds a paragraph and the first line of a <pre> block: two viewer rows from one source line
SETUP_HTML = """<html><head><title>Setup</title></head><body>
<h1>Setting up the gateway</h1>
<p>Install the gateway with pip, then start it.</p><pre><code>pip install gateway-kit
gateway-kit serve --port 8080</code></pre><p>The gateway forwards requests to the upstream service and retries a failed request three times before it gives up.</p>
<p>Stop it with Ctrl-C.</p>
</body></html>
"""
SIZES = ({"width": 1024, "height": 768}, {"width": 1400, "height": 900})
RERUN_BUTTONS = "() => [...document.querySelectorAll('button')].filter(b => b.innerText.includes('Re-run')).length"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from ragcore.engine.engine import Engine
    from ragcore.settings.config import RagcoreSettings

    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} is missing: install it with `apt-get install chromium` to run the browser test")
    pytest.importorskip("playwright.sync_api")
    d = tmp_path_factory.mktemp("nb-layout-app")
    data = copy_guide(d / "data")
    engine = Engine(RagcoreSettings(data_dir=data), encoder=ENCODER)
    try:
        engine.ingest([write_corpus(d / "pages", {"setup.html": SETUP_HTML})], "pages", calibrate=False)
    finally:
        engine.close()
    srv = AppServer(data, d / "streamlit.log")
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def _toolbar_text(page) -> str:
    return page.get_by_text(re.compile(r"saved automatically")).first.inner_text()


def _answered(page, question: str) -> None:
    """Ask ``question`` and return once its cell is drawn with its buttons and the run has ended."""
    n = page.evaluate(RERUN_BUTTONS)
    _idle(page)
    _ask(page, question)
    page.wait_for_function(f"n => ({RERUN_BUTTONS})() > n", arg=n, timeout=180_000)
    _idle(page)


def test_the_cell_count_and_the_exports_follow_an_answer(server, page, shots):
    page.goto(server.url + "/?collection=guide")
    _wait_ready(page)
    if not page.get_by_text(re.compile(r"· 0 cells ·")).count():  # after another test of this module: from an empty notebook
        page.get_by_role("button", name="Clear").click()
        page.get_by_role("button", name="Delete all cells").click()
        page.get_by_text(re.compile(r"· 0 cells ·")).first.wait_for()
        _idle(page)
    assert page.get_by_role("button", name="Markdown").is_disabled()
    assert page.get_by_text("Ask a question below, for example").count() == 1
    _answered(page, "What is top-K?")
    try:  # where the count ends up: the answer is drawn by the fragment, the toolbar above it
        page.wait_for_function("() => [...document.querySelectorAll('[data-testid=stCaptionContainer]')]"
                               ".some(e => /· 1 cell ·/.test(e.innerText))", timeout=60_000, polling=200)
    except Exception:  # noqa: BLE001 - say what it shows instead
        _shot(page, shots, "nb-count-stale")
        raise AssertionError(f"one cell answered, the toolbar says: {_toolbar_text(page)!r}") from None
    assert page.get_by_role("button", name="Markdown").is_enabled()  # the exports follow too
    assert not page.get_by_text("Ask a question below, for example").count(), "the first-question hint stays"
    _answered(page, "How do I delete a collection?")
    page.get_by_text(re.compile(r"· 2 cells ·")).first.wait_for(timeout=60_000)
    assert page.get_by_text(re.compile(r"saved automatically")).count() == 1, "one toolbar"
    _shot(page, shots, "nb-count-follows")


# every "**n.** question" title the page draws, however briefly, by question: the numbers it showed
_WATCH_NUMBERS_JS = """
window.__rcNums = {};
new MutationObserver(() => {
  for (const p of document.querySelectorAll("[data-testid='stMain'] [data-testid='stMarkdownContainer'] p")) {
    const m = p.innerText.match(/^(\\d+)\\.\\s+(.+)$/);
    if (m && p.firstElementChild && p.firstElementChild.tagName === 'STRONG') {
      const seen = window.__rcNums[m[2]] = window.__rcNums[m[2]] || [];
      if (!seen.includes(m[1])) seen.push(m[1]);
    }
  }
}).observe(document, {subtree: true, childList: true, characterData: true});
"""


def _numbers_seen(page, seen: dict[str, set[str]]) -> dict[str, set[str]]:
    """``seen`` plus the numbers this page load drew (each load starts its own record)."""
    for q, nums in page.evaluate("window.__rcNums || {}").items():
        seen.setdefault(q, set()).update(nums)
    return seen


def test_a_new_cell_keeps_the_number_it_is_first_drawn_with(server, page, shots):
    page.add_init_script(_WATCH_NUMBERS_JS)
    page.goto(server.url + "/?collection=guide")
    _wait_ready(page)
    asked = ["What is dedupe?", "How do I ingest a folder?"]
    for q in asked:  # answered in the fragment
        _answered(page, q)
    seen = _numbers_seen(page, {})
    link_q = "What is the retrieval lab for?"
    page.goto(server.url + "/?collection=guide&q=" + quote(link_q))  # asked by a link: a full run hands it to the fragment
    _wait_ready(page)
    page.wait_for_function("() => new URLSearchParams(location.search).get('cell')", timeout=180_000)  # answered
    _idle(page)
    seen = _numbers_seen(page, seen)
    page.reload()
    _wait_ready(page)
    page.get_by_text(link_q).first.wait_for()
    time.sleep(1.0)
    seen = _numbers_seen(page, seen)
    print(f"numbers drawn per question: {seen}")
    for q in [*asked, link_q]:
        assert len(seen.get(q, ())) == 1, (q, seen)
    numbers = [int(next(iter(seen[q]))) for q in [*asked, link_q]]
    assert numbers == list(range(numbers[0], numbers[0] + 3)), numbers
    _shot(page, shots, "nb-numbers")


def test_every_viewer_row_shows_its_source_line_number(server, page, shots):
    page.goto(server.url + "/?collection=guide")
    _wait_ready(page)
    page.goto(server.url + "/library?collection=pages&path=setup.html")
    page.locator(".rc-src[data-path='setup.html'] .rc-line").first.wait_for(timeout=120_000)
    _idle(page)
    rows = page.locator(".rc-src[data-path='setup.html'] .rc-line").evaluate_all(
        "els => els.map(e => [e.querySelector('.rc-no').innerText.trim(), e.querySelector('.rc-txt').innerText.trim()])")
    print(f"viewer rows: {rows}")
    assert ["3", "pip install gateway-kit"] in rows, rows  # the code line after its paragraph, on line 3
    assert all(re.fullmatch(r"\d+(–\d+)?", no) for no, _ in rows), [r for r in rows if not r[0]]
    _shot(page, shots, "viewer-html-numbers")


# What is wrong with a page's layout at the current width (each a list of what was found): a button or
# tab label on more than one line; a segmented control or radio group on more than one row; a button,
# label or option group that sticks out of a box that hides its overflow; a label, a Collections cell or
# a button label whose text is cut (wider inside than its box); a bordered box with nothing in it; a
# cell's buttons not on one row; the page scrolling sideways. Only what is displayed counts.
_LAYOUT_JS = """() => {
  const out = [];
  const main = document.querySelector("[data-testid='stMain']");
  const shown = e => { if (e.closest('details:not([open])')) return false; const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden' && e.offsetParent !== null; };
  const text = e => (e.innerText || '').trim().replace(/\\s+/g, ' ').slice(0, 60);
  const lineH = e => { const cs = getComputedStyle(e); const lh = parseFloat(cs.lineHeight);
    return isNaN(lh) ? parseFloat(cs.fontSize) * 1.6 : lh; };
  for (const b of main.querySelectorAll("button, [role='tab']")) {
    if (!shown(b) || !text(b)) continue;
    const p = b.querySelector("p, [data-testid='stMarkdownContainer']");
    if (p && p.getBoundingClientRect().height > 1.5 * lineH(p)) out.push(['wraps', text(b), Math.round(p.getBoundingClientRect().height)]);
  }
  for (const g of main.querySelectorAll("[data-testid='stButtonGroup'], [role='radiogroup']")) {
    const opts = [...g.querySelectorAll("[role='radio'], label:has(input[type='radio'])")].filter(shown);
    if (new Set(opts.map(o => Math.round(o.getBoundingClientRect().top))).size > 1) out.push(['options on two rows', text(g)]);
  }
  for (const e of main.querySelectorAll("button, label, [data-testid='stWidgetLabel'], [data-testid='stButtonGroup']")) {
    if (!shown(e)) continue;
    const r = e.getBoundingClientRect();
    for (let a = e.parentElement; a && a !== main; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (cs.overflowX === 'visible' && cs.overflow !== 'hidden') continue;
      const ar = a.getBoundingClientRect();
      if (r.right > ar.right + 1 || r.left < ar.left - 1) out.push(['sticks out', text(e), Math.round(r.right), Math.round(ar.right)]);
      break;
    }
  }
  for (const e of main.querySelectorAll("[data-testid='stWidgetLabel'] p, [data-testid='stCheckbox'] [data-testid='stMarkdownContainer'], "
      + "[data-testid='stWidgetLabel'] [data-testid='stMarkdownContainer'], .rc-cols td, .rc-cols th, button p")) {
    if (shown(e) && e.scrollWidth > e.clientWidth + 1) out.push(['cut', text(e), e.scrollWidth, e.clientWidth]);
  }
  for (const box of main.querySelectorAll(".rc-cols")) if (shown(box) && box.scrollWidth > box.clientWidth + 1)
    out.push(['table wider than its box', box.scrollWidth, box.clientWidth]);
  for (const e of main.querySelectorAll("div")) {
    if (!shown(e) || e.getBoundingClientRect().height <= 24 || text(e)) continue;
    const cs = getComputedStyle(e);
    const bordered = ['Top', 'Bottom', 'Left', 'Right'].every(s => cs['border' + s + 'Style'] !== 'none' && parseFloat(cs['border' + s + 'Width']) > 0);
    if (bordered && !e.querySelector('canvas, img, svg, input, textarea, iframe, video, [role="slider"]'))
      out.push(['empty box', e.getAttribute('data-testid') || e.className.toString().slice(0, 50)]);
  }
  for (const row of main.querySelectorAll("[class*='st-key-btns_']")) {
    const tops = [...row.querySelectorAll('button')].filter(shown).map(b => Math.round(b.getBoundingClientRect().top));
    if (new Set(tops).size > 1) out.push(["a cell's buttons on two rows", text(row)]);
  }
  const de = document.documentElement;
  if (de.scrollWidth > de.clientWidth) out.push(['page scrolls sideways', de.scrollWidth, de.clientWidth]);
  return out;
}"""


# the first cell's title row: where its number and question are, and its Re-run / Lab / Delete buttons
_CELL_HEAD_JS = """() => { const c = document.querySelector("[class*='st-key-cell_']"); if (!c) return null;
  const r = e => e.getBoundingClientRect();
  const title = [...c.querySelectorAll('p')].find(p => p.firstElementChild && p.firstElementChild.tagName === 'STRONG'
    && /^\\d+\\.$/.test(p.firstElementChild.innerText.trim()));
  const b = [...c.querySelectorAll('button')].filter(x => /^(replay|science|delete)?\\s*(Re-run|Lab|Delete)$/.test(x.innerText.trim()))
    .map(r).filter(x => x.width > 0);  // drawn buttons only
  if (!title || !b.length) return null; const t = r(title);
  return {titleTop: t.top, titleBottom: t.bottom, tops: b.map(x => Math.round(x.top)), bottoms: b.map(x => Math.round(x.bottom))}; }"""


def _layout_problems(page, shots: Path, name: str) -> list:
    found = []
    for size in SIZES:
        page.set_viewport_size(size)
        page.wait_for_function("w => window.innerWidth === w", arg=size["width"])
        time.sleep(0.5)  # the layout settles (no script run is involved)
        _shot(page, shots, f"layout-{name}-{size['width']}")
        found += [(name, size["width"], *p) for p in page.evaluate(_LAYOUT_JS)]
    return found


def test_every_page_lays_out_at_1024_and_1400_px(server, page, shots):
    page.goto(server.url + "/?collection=guide")
    _wait_ready(page)
    if not page.evaluate(RERUN_BUTTONS):  # run alone: a cell to measure
        _answered(page, "What does the threshold apply to?")
    problems = _layout_problems(page, shots, "notebook")
    # a cell's title and its buttons: at 1400 px on one line; at 1024 px the buttons are one row
    # beside or below the title, never around it
    for size in SIZES:
        page.set_viewport_size(size)
        page.wait_for_function("w => window.innerWidth === w", arg=size["width"])
        time.sleep(0.5)
        head = page.evaluate(_CELL_HEAD_JS)
        if head is None:
            problems.append(("notebook", size["width"], "no cell with a numbered title and its buttons"))
            continue
        beside = head["tops"][0] < head["titleBottom"] and head["bottoms"][0] > head["titleTop"]
        below = head["tops"][0] >= head["titleBottom"] - 1
        if len(set(head["tops"])) != 1 or not (beside or below) or (size["width"] == 1400 and not beside):
            problems.append(("notebook", size["width"], "a cell's buttons around its title", head))
    _nav(page, "Library")
    problems += _layout_problems(page, shots, "library-viewer")
    for tab in ("Collections", "Ingest"):
        page.get_by_role("tab", name=tab).click()
        _idle(page)
        if tab == "Collections":
            page.locator(".rc-cols table:visible, [data-testid='stDataFrame']:visible").first.wait_for()
            if not page.locator(".rc-cols table").count():  # a canvas grid: its text is cut, and not measurable
                problems.append(("library-collections", "the Collections table is an st.dataframe (columns cut at 1400 px)"))
        problems += _layout_problems(page, shots, f"library-{tab.lower()}")
    for title in ("Evaluate", "Settings"):
        _nav(page, title)
        problems += _layout_problems(page, shots, title.lower())
    assert not problems, "\n".join(map(str, problems))
