"""The source viewer's selection (issue 28 point 2): selected lines reach the engine with their own
line numbers for every kind of source, and the viewer marks the lines the answer quoted from it.

An HTML page numbers several text lines alike (a paragraph's last line and the blank after it):
building the selection one line per number dropped the last line of each paragraph and a
definition's "Default: None". The page here is written for the test (a definition list like
Flask's config.html); the HTML goes through the ingest's own reader."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import pytest

from ragcore.engine.stages import SelectionInput, selection_evidence
from ragcore.ingest.read.loaders import load_bytes
from tests.support.app_support import app_env, ok, started  # noqa: F401
from ui.viewer import Row, SourceView, quoted_selection_lines, viewer_html

LIB = "pages/library.py"
PAGE = """<html><head><title>Config</title></head><body>
<h1 id="config">Configuration</h1>
<dl>
<dt id="MAX_CONTENT_LENGTH">MAX_CONTENT_LENGTH</dt>
<dd><p>Don't read more than this many bytes from the incoming request data.
If this value is not set and the request does not specify a content length,
no data will be read for security.</p>
<p>Default: <code>None</code></p></dd>
<dt id="SECRET_KEY">SECRET_KEY</dt>
<dd><p>A secret key that will be used for securely signing the session cookie &lt;script&gt;alert(1)&lt;/script&gt;.</p>
<p>Default: <code>None</code></p></dd>
</dl>
</body></html>
"""


def _view() -> SourceView:
    doc = load_bytes(PAGE.encode(), "config.html")
    return SourceView("config.html", "html", [Row(ln.no, ln.no, ln.text) for ln in doc.lines], "disk")


def test_a_selection_keeps_every_line_with_its_own_number():
    text, numbers = _view().selected(4, 8, None)
    lines = text.split("\n")
    assert "no data will be read for security." in lines and "Default: None" in lines  # the lines text_between dropped
    assert len(numbers) == len(lines) and numbers[lines.index("Default: None")] == 8
    assert numbers[lines.index("no data will be read for security.")] == 7
    # the engine's evidence from it names the viewer's line numbers: the default's entry ends on line 8
    ev = selection_evidence(SelectionInput(text, "config.html", 4, line_numbers=numbers))
    entry = next(e.chunk for e in ev if "Default: None" in e.chunk.text)
    assert entry.end_line == 8 and entry.start_line >= 4


def test_the_viewer_marks_the_quoted_lines_and_escapes_them():
    cits = [{"origin": "selection", "path": "config.html", "start_line": 10, "end_line": 10, "page": None},
            {"origin": "corpus", "path": "config.html", "start_line": 4, "end_line": 4},  # not from the selection
            {"origin": "selection", "path": "other.html", "start_line": 5, "end_line": 5}]
    quoted = quoted_selection_lines(cits, "config.html", None)
    assert quoted == {10}
    html = viewer_html(_view(), page=None, highlight=None, selection=(9, 11), window=None, quoted_lines=quoted)
    marked = re.findall(r'<div class="rc-line([^"]*)" data-line="(\d+)">', html)
    assert {no for cls, no in marked if " q" in cls} == {"10"}
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script" not in html


def test_asking_about_selected_html_lines_quotes_them_and_the_viewer_marks_them(app_env, tmp_path):
    from tests.support.app_support import shared_runtime

    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "config.html").write_text(PAGE)
    name = f"html-{uuid.uuid4().hex[:6]}"
    rt = shared_runtime()
    rt.engine.ingest([folder], name)
    rt.invalidate_collections()
    try:
        at = started(LIB, cfg_collection=name)
        at.query_params.update({"path": "config.html", "lines": "4-8", "collection": name})
        at.run()
        ok(at)
        assert at.button_group(key="lib_context").value == "selection"
        at.text_input(key="lib_question").set_value("What is the default value of this setting?").run()
        at.button(key="lib_ask").click().run()
        ok(at)
        cell = json.loads((Path(app_env) / "notebooks" / f"{name}.json").read_text())["cells"][-1]
        sel = cell["selection"]
        assert sel["line_numbers"] and "Default: None" in sel["text"] and 8 in sel["line_numbers"]
        ans = cell["runs"][-1]["answer"]
        assert ans["status"] in ("ok", "partial") and "Default: None" in ans["answer"], ans["answer"]
        cited = {n for c in ans["citations"] if c["origin"] == "selection" for n in range(c["start_line"], c["end_line"] + 1)}
        assert 8 in cited and cited <= set(range(4, 9))
        viewer = next(h.value for h in at.html if 'class="rc-src" data-path="config.html"' in h.value)
        marked = {int(no) for cls, no in re.findall(r'<div class="rc-line([^"]*)" data-line="(\d+)">', viewer) if " q" in cls}
        assert 8 in marked and marked <= cited
        # the citation's header says how well the quoted evidence answers the question, beside its support
        assert all(c.get("answers") is not None for c in ans["citations"])
        panel = next(h.value for h in at.html if 'class="rc-cites"' in h.value)
        assert re.search(r"support \d\.\d\d · answers the question \d\.\d\d", panel), panel[:2000]
    finally:
        rt.engine.drop(name)
        rt.invalidate_collections()


def test_the_passage_header_shows_answers_beside_support():
    from ui.cells import passage_header

    c = {"n": 2, "path": "config.html", "start_line": 8, "end_line": 8, "origin": "selection", "support": 0.61, "answers": 0.734}
    assert passage_header(c, None).endswith("support 0.61 · answers the question 0.73")
    assert "answers the question" not in passage_header({**c, "answers": None}, None)
