"""Answers that quote code, lists and tables render as such in the app, the exports and the diff;
every other character of document text stays escaped (chunk text is data, never markup)."""

from __future__ import annotations

import re

from ui.blocks import split_blocks
from ui.notebook import Cell, Notebook, Run, export_html, export_markdown
from ui.notebook.diff import _sentences
from ui.render import answer_markdown

CODE_ANSWER = """To render a form, write: [1]

```python
def view(request):
    if request.method == "POST":
        return "<form>done</form>"  # [2] is not a citation here
```

[1]

The steps are: [2]

- install it. [2]
    - with <b>pip</b> [2]
1. then run **it** [1]

| option | meaning |
|---|--:|
| `-q` | quiet <i>x</i> [1] |
"""


def test_blocks_are_read_as_code_lists_and_tables():
    kinds = [b.kind for b in split_blocks(CODE_ANSWER)]
    assert kinds == ["para", "code", "para", "para", "list", "table"]
    code = split_blocks(CODE_ANSWER)[1]
    assert code.lang == "python" and code.closed
    assert code.text.split("\n")[1] == '    if request.method == "POST":'  # indentation kept
    # a fence still open (a streaming answer) runs to the end
    assert split_blocks("run:\n\n```bash\nragcore ingest")[-1].closed is False


def test_answer_markdown_renders_code_verbatim_and_escapes_the_rest():
    md = answer_markdown(CODE_ANSWER, {1: "#cite-a-1", 2: "#cite-a-2"})
    fence = re.search(r"^(`{3,})python$", md, re.M)
    assert fence, md
    body = md[fence.end():md.index(fence.group(1), fence.end())]
    assert '        return "<form>done</form>"  # [2] is not a citation here' in body  # verbatim, no link inside code
    outside = md.replace(body, "")
    assert "<b>" not in outside and "\\<b\\>pip\\<\\/b\\>" in outside and "\\*\\*it\\*\\*" in outside
    assert "<i>" not in outside and "\\<i\\>x\\<\\/i\\>" in outside
    assert re.search(r"^- install it\\\. \[\\\[2\\\]\]\(#cite-a-2\)$", md, re.M), md
    assert re.search(r"^    - with ", md, re.M)  # nested item
    assert "| --- | ---: |" in md
    # the block's repeated source marker is not drawn as a stray [1] on its own line
    assert not re.search(r"^\[\\\[1\\\]\]\(#cite-a-1\)$", md, re.M), md


def test_a_fence_inside_code_cannot_close_the_block():
    md = answer_markdown("x:\n\n````\n```\n<script>alert(1)</script>\n```\n````", {})
    assert md == "x\\:\n\n````\n```\n<script>alert(1)</script>\n```\n````", md  # the inner ``` lines stay inside
    md = answer_markdown("x:\n\n```\na ```` b\n```", {})
    assert md.endswith("`````\na ```` b\n`````"), md  # the fence outgrows the longest run in the body


def _nb() -> Notebook:
    answer = {"answer": CODE_ANSWER, "status": "ok", "citations": [
        {"n": 1, "path": "a.md", "start_line": 1, "end_line": 3, "support": 0.9},
        {"n": 2, "path": "b.md", "start_line": 2, "end_line": 4, "support": 0.8}], "evidence": [], "metadata": {}}
    cell = Cell(question="How do I render a <form>?")
    cell.add_run(Run(answer=answer, outcome="ok", passages={"1": "x", "2": "y"}))
    return Notebook("c", [cell])


def test_markdown_export_keeps_code_verbatim():
    md = export_markdown(_nb())
    assert '>         return "<form>done</form>"  # [2] is not a citation here' in md  # not &lt;form&gt;
    assert "> ```python" in md
    assert "&lt;b&gt;pip&lt;/b&gt;" in md  # HTML outside code is still neutralised


def test_html_export_renders_pre_code_lists_and_tables():
    page = export_html(_nb())
    assert '<pre><code class="language-python">def view(request):\n    if request.method' in page
    assert "&lt;form&gt;done&lt;/form&gt;" in page and "<form>" not in page
    assert "```" not in page
    assert "<ul><li>install it. <sup>" in page and "<ol>" in page
    assert "<table><thead><tr><th>option</th>" in page
    assert "<b>pip</b>" not in page and "<i>x</i>" not in page


def test_diff_keeps_markers_with_their_sentence_and_blocks_whole():
    units = _sentences("The bar applies to cosine. [1] Next one! [2][3] More\n\n```py\nx = 1.\ny = 2\n```")
    assert units[:2] == ["The bar applies to cosine. [1]", "Next one! [2][3]"]
    assert units[-1] == "```py\nx = 1.\ny = 2\n```"
