"""Issue 42, items 6 and 7: a follow-up's "Read as" question reaches the lab and the exports, and a re-run's
summary names the settings that changed."""

from __future__ import annotations

import json


from tests.app.test_notebook import answer, chunk
from tests.support.app_support import app_env, ask, ok, started  # noqa: F401
from ui.notebook import Cell, Notebook, Run, diff_runs, export_html, export_markdown


def _followup_cell() -> Cell:
    a = answer("Set RAGCORE_THRESHOLD [1].", [chunk("a.md", 1, 4)]).to_dict()
    a["metadata"]["standalone_question"] = "How do I turn the similarity threshold on?"
    return Cell(question="How do I turn it on?", runs=[Run(answer=a, outcome="ok")])


def test_a_followup_cell_knows_what_it_was_read_as() -> None:
    cell = _followup_cell()
    assert cell.read_as == "How do I turn the similarity threshold on?"
    assert Cell(question="What is BM25?").read_as is None


def test_exports_carry_the_read_as_line() -> None:
    nb = Notebook("guide", [_followup_cell()])
    assert "*Read as:* “How do I turn the similarity threshold on?”" in export_markdown(nb)
    assert "Read as: “How do I turn the similarity threshold on?”" in export_html(nb)


def test_the_lab_opens_a_followup_with_the_question_it_was_read_as(app_env) -> None:
    """The real app: a follow-up cell opened in the lab searches what the answer searched."""
    at = started()
    ask(at, "How do I change the similarity threshold?")
    ask(at, "Which environment variable sets it?")
    cell = json.loads((app_env / "notebooks" / "guide.json").read_text())["cells"][-1]
    read_as = cell["runs"][-1]["answer"]["metadata"]["standalone_question"]
    assert read_as and "threshold" in read_as
    at.button(key=f"lab_{cell['id']}").click().run()
    ok(at)
    assert at.text_input(key="lab_q").value == read_as


def test_a_rerun_summary_names_the_settings_that_changed() -> None:
    c1, c2 = chunk("a.md", 1, 4), chunk("b.md", 5, 9)
    old = Run(answer=answer("Claim [1].", [c1, c2]).to_dict(), outcome="ok")
    moved = answer("Claim [1].", [c1, c2], top_k=2).to_dict()
    moved["metadata"]["support"] = 0.7  # an outcome, not a setting
    moved["metadata"]["chunks_cut"] = 3
    d = diff_runs(old, Run(answer=moved, outcome="ok"))
    assert [k for k, _, _ in d.config_changes] == ["top_k"]
    assert "setting changed: top_k 6 → 2" in d.summary()
