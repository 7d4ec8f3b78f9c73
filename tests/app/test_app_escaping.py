"""AppTest: document text is shown literally everywhere — never rendered as HTML, Markdown or a link."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import streamlit as st

from tests.support.app_support import app_env, ask, ok, shared_runtime, started  # noqa: F401
from tests.conftest import REPO

pytestmark = pytest.mark.slow
ROOT = REPO

EVIL = """# Zebra protocol

The zebra protocol greets visitors with <script>alert(1)</script> tags on every page.
The zebra protocol shows <img src=x onerror=alert(2)> images to every visitor.
The zebra protocol makes **bold claims** about [safety](javascript:alert(3)) and :red[colour] and $x^2$.
"""


@pytest.fixture
def evil_collection(app_env, tmp_path):
    folder = tmp_path / "evil"
    folder.mkdir()
    (folder / "zebra.md").write_text(EVIL)
    rt = shared_runtime()
    rt.engine.ingest([folder], "xss")
    rt.invalidate_collections()
    return "xss"


def _all_markdown(at) -> list[str]:
    return [m.value for m in at.markdown] + [c.value for c in at.caption] + [e.value for e in at.error] + \
        [w.value for w in at.warning] + [lnk.proto.label for lnk in at.get("page_link")] + [x.label for x in at.expander]


def test_no_page_passes_unsafe_html():
    for f in [ROOT / "app.py", *(ROOT / "pages").glob("*.py"), *(ROOT / "ui").rglob("*.py")]:
        text = f.read_text()
        assert "unsafe_allow_html=True" not in text, f
        assert "unsafe_allow_javascript=True" not in text, f


def test_document_markup_shows_literally_in_answers_viewer_and_exports(evil_collection, monkeypatch):
    captured: dict[str, object] = {}
    orig = st.download_button

    def recording(label, data=None, *a, **k):
        captured[label] = data
        return orig(label, data, *a, **k)

    monkeypatch.setattr(st, "download_button", recording)
    at = started(cfg_collection=evil_collection)
    at.slider(key="nb_threshold").set_value(0.0).run()
    ask(at, "How does the zebra protocol greet visitors and what images does it show?")
    texts = _all_markdown(at)
    # the answer quotes the document: every markup character arrives escaped
    answer = next(t for t in texts if "zebra protocol" in t and "](#cited-" in t)
    assert "\\<script\\>alert\\(1\\)\\<\\/script\\>" in answer
    for t in texts:  # no raw tags, no live markdown link to javascript:, no live :red[] directive
        assert not re.search(r"(?<!\\)<(script|img)", t), t
        assert "](javascript" not in t and "(javascript:" not in t.replace("\\(javascript\\:", ""), t
    cells = json.loads((Path(at.session_state["rc_base"].data_dir) / "notebooks" / "xss.json").read_text())["cells"]
    assert "<script>alert(1)</script>" in cells[0]["runs"][-1]["answer"]["answer"]  # the data itself is untouched

    # the evidence table (st.html, for its per-cell hover): the chunk text html.escape'd, in the cell and its title
    at.session_state[f"ev_{cells[0]['id']}_1"] = True
    at.run()
    ok(at)
    table = next(h.proto.body for h in at.main.get("html") if 'class="rc-ev"' in h.proto.body)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in table and "&lt;img src=x onerror=alert(2)&gt;" in table
    assert "<script" not in table and "<img" not in table and "<a " not in table
    assert 'title="# Zebra protocol' in table  # the whole passage on hover

    # HTML export: escaped, no active content
    html = captured["HTML"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script" not in html and "<img" not in html
    md_export = captured["Markdown"]
    # the answer is escaped; a cited passage is quoted verbatim, inside a code fence (inert text)
    assert "&lt;script&gt;" in md_export and "<script>" not in _outside_fences(md_export)

    # the source viewer: html.escape'd text inside st.html
    at.query_params.update({"path": "zebra.md", "lines": "3-4", "collection": "xss"})
    at.switch_page("pages/library.py").run()
    ok(at)
    viewer = next(h.value for h in at.html if 'class="rc-src"' in h.value)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in viewer
    assert "&lt;img src=x onerror=alert(2)&gt;" in viewer
    assert "<script" not in viewer and "<img" not in viewer
    assert "**bold claims** about [safety](javascript:alert(3))" in viewer  # plain text, not rendered

    # the lab: its table is escaped HTML (text and hover); a picked chunk's text opens in st.code
    at.switch_page("pages/retrieval_lab.py").run()
    at.text_input(key="lab_q").set_value("zebra protocol images").run()
    lab = next(h.value for h in at.html if 'class="rc-lab' in h.value)
    assert "<script" not in lab and "<img" not in lab and "&lt;script&gt;alert(1)&lt;/script&gt;" in lab
    at.selectbox(key="lab_pick").set_value(1).run()
    ok(at)
    assert any("<script>alert(1)</script>" in c.value for c in at.code)
    for t in _all_markdown(at):
        assert not re.search(r"(?<!\\)<(script|img)", t), t


def test_answer_markdown_escapes_text_and_links_only_known_markers():
    from ui.render import answer_markdown, md_escape, md_inline

    md = answer_markdown("Use <b>x</b> and **y** [1]. Ranges [2-3], unknown [9]. :red[z] $a$", {1: "library?path=a.md&lines=1-2", 2: "u2"})
    assert "[\\[1\\]](library?path=a.md&lines=1-2)" in md
    assert "[\\[2\\]](u2)\\[3\\]" in md and "\\[9\\]" in md
    assert "\\<b\\>x\\<\\/b\\>" in md and "\\*\\*y\\*\\*" in md and "\\:red\\[z\\]" in md and "\\$a\\$" in md
    assert md_escape("a\n\n    indented\n# not a heading") == "a\n\nindented  \n\\# not a heading"
    assert md_inline("[t](javascript:alert(1))") == "\\[t\\]\\(javascript\\:alert\\(1\\)\\)"


def _outside_fences(md: str) -> str:
    """The Markdown text outside fenced code blocks (a fence closes on its own opening run)."""
    out, fence = [], None
    for line in md.split("\n"):
        m = re.match(r"^(`{3,}|~{3,})", line)
        if fence is None and m:
            fence = m.group(1)
        elif fence is not None and line.strip() == fence:
            fence = None
        elif fence is None:
            out.append(line)
    return "\n".join(out)
