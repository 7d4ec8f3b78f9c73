"""Notebook exports carry the cited passages: each [n] is followed by the lines it points to.

Real parts: a small corpus (Markdown with hostile text, an HTML page with a list) ingested into an
embedded Qdrant in a temp folder with the real ONNX encoder; the answers are streamed by the
engine and recorded by the app's RunRecorder, then exported. The checks:

* every cited passage is in both exports verbatim (HTML: escaped), and it is the cited lines of
  the source (Markdown: the file's lines start..end; HTML: the loader's text of those lines);
* hostile passages (``<script>``, a ``javascript:`` Markdown link, a ``` fence) stay data: in
  Markdown they only occur inside a fence that no line of theirs closes, in HTML only escaped;
* a notebook saved before passages were kept still loads and exports (from its stored evidence,
  or saying the passage was not recorded).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from ragcore.ingest.chunking import text_of_lines
from ragcore.ingest.read.loaders import load_file
from ragcore.engine.engine import Engine
from ragcore.types import Answer
from tests.conftest import write_corpus
from ui.notebook import Cell, Notebook, NotebookStore, Run, RunRecorder, export_html, export_json, export_markdown
from ui.notebook.export import NOT_RECORDED
from ui.notebook.model import cited_passages

HOSTILE = """\
# Deploying the widget server

To deploy the widget server, run the deploy script with the target host:

```sh
./deploy.sh --host prod --banner '<script>alert(1)</script>'
```

The deploy script copies the build to the host and restarts the widget service.
Rollbacks are described in [the runbook](javascript:alert(1)) and take a minute.
The banner option prints <script>alert("banner")</script> on the login page of the widget server.

## Ports

The widget server listens on port 8080 by default.
Set WIDGET_PORT to change the port the widget server listens on.
"""
PAGE = """\
<html><head><title>Widget sensors</title></head><body><main>
<h1 id="sensors">Widget sensors</h1>
<p>The sensor daemon does the following:</p>
<ul>
<li>It reads every sensor once per second and keeps
the last hour of readings in memory.</li>
<li>It writes a <code>&lt;reading&gt;</code> record to the report file.</li>
</ul>
<p>Sensors are attached to serial ports.</p>
</main></body></html>
"""
QUESTIONS = [
    "How do I deploy the widget server?",
    "What does the banner option print on the login page of the widget server?",
    "How long does a rollback of the widget server take?",
    "How do I change the port of the widget server?",
    "What does the sensor daemon do?",
]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, encoder) -> tuple[Path, Notebook]:
    from ragcore.settings.config import RagcoreSettings

    root = write_corpus(tmp_path_factory.mktemp("exp") / "c", {"deploy.md": HOSTILE, "sensors.html": PAGE})
    engine = Engine(RagcoreSettings(data_dir=tmp_path_factory.mktemp("exp-data"), threshold=-1.0), encoder=encoder)
    try:
        engine.ingest([root], "exp", calibrate=False)
        nb = Notebook("exp")
        for q in QUESTIONS:
            rec = RunRecorder(q, context_mode="corpus", collection="exp", config={})
            for ev in engine.stream(q, collection="exp"):
                rec.feed(ev)
            nb.cells.append(Cell(question=q, runs=[rec.finish()]))
    finally:
        engine.close()
    return root, nb


def _source(root: Path, path: str, start: int, end: int) -> str:
    p = root / path
    if p.suffix == ".html":
        return text_of_lines(load_file(p, root, max_bytes=10_000_000), start, end)
    return "\n".join(p.read_text(encoding="utf-8").split("\n")[start - 1 : end])


def _fenced_regions(md: str) -> list[tuple[int, int]]:
    """Character ranges of fenced code blocks, as CommonMark reads them: a fence opens with 3+
    backticks (up to 3 spaces in, also inside a blockquote: an answer is quoted with "> ") and is
    closed only by a line of at least as many backticks under the same quote marker."""
    out, pos, opened = [], 0, None
    for line in md.split("\n"):
        m = re.match(r"(> ?)? {0,3}(`{3,})", line)
        if opened is None and m:
            opened = (pos, len(m.group(2)), re.escape(m.group(1) or ""))
        elif opened is not None and re.fullmatch(r"%s {0,3}`{%d,}\s*" % (opened[2], opened[1]), line):
            out.append((opened[0], pos + len(line)))
            opened = None
        pos += len(line) + 1
    assert opened is None, "an export leaves a fence open"
    return out


def test_exports_contain_every_cited_passage_verbatim(recorded: tuple[Path, Notebook]) -> None:
    root, nb = recorded
    md, page = export_markdown(nb), export_html(nb)
    data = json.loads(export_json(nb))
    cited = 0
    for cell, exported in zip(nb.cells, data["cells"]):
        run = cell.current
        assert run is not None and run.passages is not None
        for cit in run.citations:
            passage = run.passages[str(cit["n"])]
            assert passage.strip() and passage == _source(root, cit["path"], cit["start_line"], cit["end_line"]) or (
                cit["path"].endswith(".html")  # HTML: the chunk's text, whitespace as the loader gives it
                and " ".join(passage.split()) in " ".join(_source(root, cit["path"], cit["start_line"], cit["end_line"]).split())
            ), (cit, passage)
            assert passage in md and html.escape(passage) in page
            assert exported["passages"][str(cit["n"])] == passage
            cited += 1
    assert cited >= 4
    answered = [c for c in nb.cells if c.current and c.current.citations]
    assert len(answered) >= 3, [c.current.text for c in nb.cells if c.current]
    # the HTML list came with its intro, and its passage shows the list as a list
    sensors = next(c.current for c in nb.cells if c.question.startswith("What does the sensor"))
    assert "- It reads every sensor once per second" in sensors.text, sensors.text
    assert any("- It writes a <reading> record" in p for p in sensors.passages.values())


def test_hostile_passages_stay_inert(recorded: tuple[Path, Notebook]) -> None:
    _, nb = recorded
    md, page = export_markdown(nb), export_html(nb)
    hostile = [p for c in nb.cells for p in (c.current.passages or {}).values() if "<script>" in p or "javascript:" in p]
    assert hostile, "no cited passage carries the hostile text: the test would prove nothing"
    assert any("```" in p for p in hostile), "a cited passage with its own fence"
    # Markdown: each hostile passage stands inside a fence that it does not close itself, and
    # outside fences there is no raw <script> nor a live javascript: link (answers quote links)
    regions = _fenced_regions(md)
    for p in hostile:
        for m in re.finditer(re.escape(p), md):
            assert any(a <= m.start() and m.end() <= b for a, b in regions), p
    # an answer quotes the sentence with the link, the link shown as text (safety/injection.py defang_links),
    # so the check below bites on what an answer carries
    assert any("javascript:" in c.current.text for c in nb.cells), "an answer quotes the link"
    assert not any(re.search(r"(?<!\\)\[[^\]\n]*\]\(javascript:", c.current.text) for c in nb.cells)
    for needle in (r"<script", r"(?<!\\)\[[^\]\n]*\]\(javascript:"):
        for m in re.finditer(needle, md):
            assert any(a <= m.start() < b for a, b in regions), md[max(0, m.start() - 200) : m.start() + 50]
    # HTML: no active element, no live link; the passage's text is there, escaped
    assert "<script" not in page and 'href="javascript' not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "[the runbook](javascript:alert(1))" in page


def test_an_old_notebook_without_passages_still_loads_and_exports(recorded: tuple[Path, Notebook], tmp_path: Path) -> None:
    _, nb = recorded
    run = next(c.current for c in nb.cells if c.current and c.current.citations)
    old = run.to_dict()
    old.pop("passages")  # as saved before passages were kept
    stripped = json.loads(json.dumps(old))
    for e in stripped["answer"]["evidence"]:
        e["chunk"].pop("text")  # and, worse, without the evidence's text
    doc = {"format": "ragcore-notebook/1", "collection": "exp", "cells": [
        {"id": "a", "question": "From evidence?", "runs": [old]},
        {"id": "b", "question": "Nothing kept?", "runs": [stripped]},
    ]}
    store = NotebookStore(tmp_path)
    store.path_for("exp").write_text(json.dumps(doc), encoding="utf-8")
    loaded = store.load("exp")
    a, b = (c.current for c in loaded.cells)
    assert a.passages is None and b.passages is None
    first = run.citations[0]["n"]
    # the old run's own stored evidence still gives the cited lines
    assert a.passage(first) == run.passages[str(first)] == cited_passages(old["answer"])[str(first)]
    assert b.passage(first) is None
    md, page = export_markdown(loaded), export_html(loaded)
    assert run.passages[str(first)] in md and md.count(NOT_RECORDED) == len(b.citations)
    assert page.count(NOT_RECORDED) == len(b.citations)
    assert json.loads(export_json(loaded))["cells"][1]["passages"][str(first)] is None


def test_a_fence_in_the_passage_cannot_close_the_exports_fence() -> None:
    text = "Before.\n````\nnot code\n`````py\n[x](javascript:alert(1)) <script>x</script>"
    ans = Answer(question="Q?", answer="Before. [1]", status="ok").to_dict()
    ans["citations"] = [{"n": 1, "chunk_id": "c", "path": "a.md", "start_line": 1, "end_line": 5, "section": []}]
    run = Run(answer=ans, outcome="ok", passages={"1": text})
    md = export_markdown(Notebook("x", [Cell(question="Q?", runs=[run])]))
    regions = _fenced_regions(md)
    start = md.index(text)
    assert any(a < start and start + len(text) < b for a, b in regions), md
    assert "``````text" in md  # one backtick longer than the passage's longest run (5)
