"""AppTest: the Library — citation links open the viewer highlighted, ask about lines, ingest, collections."""

from __future__ import annotations

import json
import re
import uuid

import pytest

from ui.library_admin import slug
from tests.support.app_support import app_env, captions, html_table, markdown_text, ok, started, wait_for_job  # noqa: F401

pytestmark = pytest.mark.slow
LIB = "pages/library.py"
DOC = "05-scores-top-k-and-threshold.md"


def _viewer(at) -> str:
    return next(h.value for h in at.html if 'class="rc-src"' in h.value)


def _highlighted(html: str) -> list[int]:
    return [int(n) for n in re.findall(r'<div class="rc-line hl[^"]*" data-line="(\d+)"', html)]


def test_citation_link_opens_the_viewer_at_the_cited_lines(app_env):
    at = started(LIB)
    at.query_params.update({"path": DOC, "lines": "51-52", "collection": "guide"})
    at.run()
    ok(at)
    html = _viewer(at)
    assert _highlighted(html) == [51, 52]
    assert 'data-line="50"' in html and 'data-line="53"' in html  # context around the cited lines
    md = markdown_text(at)
    assert "**Cited lines 51–52**" in md and "What the threshold applies to" in md
    assert at.selectbox(key="lib_doc_w").value == DOC
    assert "from the file on disk" in captions(at)
    # the viewer's text is the file's own lines
    src = open("demo/" + DOC, encoding="utf-8").read().split("\n")
    assert re.search(r'data-line="51"><span class="rc-no">51</span><span class="rc-txt">' + re.escape(
        src[50].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;").replace("'", "&#x27;")), html)


def test_ask_about_selected_lines_in_selection_mode(app_env):
    at = started(LIB)
    at.query_params.update({"path": DOC, "lines": "49-59", "collection": "guide"})
    at.run()
    assert at.number_input(key="lib_from").value == 49 and at.number_input(key="lib_to").value == 59
    assert at.button_group(key="lib_context").value == "selection"
    assert at.session_state["cfg_context"] == "corpus"  # the notebook's context mode is not touched
    at.text_input(key="lib_question").set_value("What does the threshold apply to?").run()
    at.button(key="lib_ask").click().run()
    ok(at)
    cells = json.loads((app_env / "notebooks" / "guide.json").read_text())["cells"]
    cell = cells[-1]
    assert cell["context_mode"] == "selection" and cell["selection"]["source"] == DOC and cell["selection"]["start_line"] == 49
    ans = cell["runs"][-1]["answer"]
    assert ans["status"] == "ok" and ans["citations"]
    for c in ans["citations"]:
        assert c["origin"] == "selection" and c["path"] == DOC and 49 <= c["start_line"] <= c["end_line"] <= 59
    # the answer is shown under the viewer, its [n] showing the cited lines on hover and beside the answer
    assert any("](#cite-" in m.value and "05-scores-top-k-and-threshold.md:" in m.value for m in at.markdown)
    panel = next(h.proto.body for h in at.main.get("html") if 'class="rc-cites"' in h.proto.body)
    assert 'href="library?path=05-scores-top-k-and-threshold.md&amp;lines=' in panel  # "Open in the source viewer"
    # a one-line selection (line 2 is blank) is refused with ragcore's message, nothing asked
    at.number_input(key="lib_from").set_value(2).run()
    at.number_input(key="lib_to").set_value(2).run()
    at.button(key="lib_ask").click().run()
    assert any("No passage is selected" in e.value or "too short" in e.value for e in at.error), [e.value for e in at.error]
    assert len(json.loads((app_env / "notebooks" / "guide.json").read_text())["cells"]) == len(cells)


def test_ingest_folder_and_uploads_report_and_collections(app_env, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "alpha.md").write_text("# Alpha\n\nThe alpha widget stores its state in a bucket.\nIt is blue.\n")
    (folder / "notes.txt").write_text("Beta notes: the beta service restarts nightly at two.\n")
    (folder / "page.html").write_text(
        "<html><head><title>Gamma</title></head><body>\n<nav>menu</nav>\n<h1 id='g'>Gamma</h1>\n\n"
        "<p>The gamma gateway\nforwards requests.</p>\n</body></html>\n")
    (folder / "empty.md").write_text("")
    (folder / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1") + b"\xff\xfe\x00")
    name = f"libtest-{uuid.uuid4().hex[:6]}"
    at = started(LIB)
    at.text_input(key="ing_folder").set_value(str(folder)).run()
    # the target is explicit: a new collection by default, named after the folder, or after the folder
    # above it when its own name is generic ("corpus", "docs", "html": ui/library_admin.py)
    assert at.button_group(key="ing_target_kind").value == "A new collection"
    assert at.text_input(key="ing_new_name").placeholder == slug(str(folder.parent)) != "corpus"
    at.text_input(key="ing_new_name").set_value(name).run()
    at.button(key="ing_go_folder").click().run()
    wait_for_job(at)
    ok(at)
    assert any("finished" in s.value for s in at.success), [s.value for s in at.success]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["added"] == "3" and metrics["failed"] == "2", metrics
    skipped = next(d.value for d in at.dataframe if list(d.value.columns) == ["file", "reason"])
    assert set(skipped["file"]) == {"empty.md", "latin1.txt"} and all(skipped["reason"].str.len() > 3)
    # the session now points at the new collection; the collections tab lists it with its stats
    assert at.session_state["cfg_collection"] == name
    cols = html_table(at, "rc-cols")
    row = cols[cols["collection"] == name].iloc[0]
    assert row["documents"] == 3 and row["chunks"] >= 3 and row["version"] != "–" and row["built"] != "–"
    assert row["state"] == "up to date" and row["folder"] == str(folder)
    # the HTML page shows its visible text with the original line numbers
    at.selectbox(key="lib_doc_w").set_value("page.html").run()
    ok(at)
    html = _viewer(at)
    assert "menu" not in html and "forwards requests" in html
    assert re.search(r'data-line="(\d+)"><span class="rc-no">\d+</span><span class="rc-txt">[^<]*gamma gateway', html)
    docs = next(d.value for d in at.dataframe if list(d.value.columns) == ["path", "type", "chunks"])
    assert set(docs["type"]) == {"markdown", "text", "html"}

    # uploads: added to the collection, viewed from the stored chunks
    at.file_uploader(key="ing_files").set_value([("upload.md", b"# Upload\n\nThe delta depot opens at nine.\n", "text/markdown")]).run()
    at.button_group(key="ing_target_kind").set_value("An existing collection").run()
    at.selectbox(key="ing_existing").set_value(name).run()
    at.button(key="ing_go_upload").click().run()
    wait_for_job(at)
    ok(at)
    assert {m.label: m.value for m in at.metric}["added"] == "1"
    at.selectbox(key="lib_doc_w").set_value("upload.md").run()
    assert "delta depot" in _viewer(at) and "rebuilt from stored chunks" in captions(at)


def test_unknown_path_and_bad_folder_are_reported(app_env):
    at = started(LIB)
    at.query_params.update({"path": "nope/missing.md", "lines": "3-4", "collection": "guide"})
    at.run()
    assert any("not in the collection" in w.value for w in at.warning)
    at.text_input(key="ing_folder").set_value("/no/such/folder").run()
    at.button(key="ing_go_folder").click().run()
    assert any("No such file or folder" in e.value for e in at.error)
    assert not at.exception


def test_pdf_opens_on_the_cited_page(app_env, tmp_path):
    pytest.importorskip("reportlab")
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    from tests.support.app_support import shared_runtime

    folder = tmp_path / "pdfs"
    folder.mkdir()
    c = canvas.Canvas(str(folder / "manual.pdf"), pagesize=A4)
    for page in (["Page one talks about apples.", "Apples are red."], ["Page two talks about the pump.", "The pump runs at night.", "It is quiet."]):
        for i, text in enumerate(page):
            c.drawString(40, 810 - 14 * i, text)
        c.showPage()
    c.save()
    name = f"pdf-{uuid.uuid4().hex[:6]}"
    rt = shared_runtime()
    rt.engine.ingest([folder], name)
    rt.invalidate_collections()
    chunks = rt.engine.document_chunks("manual.pdf", collection=name)
    page2 = next(ch for ch in chunks if ch.page == 2)
    at = started(LIB, cfg_collection=name)
    at.query_params.update({"path": "manual.pdf", "lines": f"{page2.start_line}-{page2.end_line}", "page": "2", "collection": name})
    at.run()
    ok(at)
    html = _viewer(at)
    assert "pump runs at night" in html and "apples" not in html.lower()  # page 2 only
    assert _highlighted(html)
    assert "page 2" in markdown_text(at)
