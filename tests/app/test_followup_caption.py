"""A follow-up's cell says what the question was read as (issue 28, point 4), and the notebook hands
the engine the earlier questions so a short pronoun-led follow-up is made standalone."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _caption_app() -> None:
    from ui.cells import support_caption
    from ui.notebook.model import Run

    meta = {"standalone_question": "How do I change the threshold?",
            "support": None, "abstain_bar": None}
    support_caption(Run(answer={"status": "ok", "metadata": meta}, outcome="ok"))


def test_a_follow_up_shows_what_it_was_read_as() -> None:
    at = AppTest.from_function(_caption_app).run()
    assert not at.exception
    assert any(c.value.startswith("Read as") and "How do I change the threshold" in c.value for c in at.caption), \
        [c.value for c in at.caption]


def test_the_notebook_passes_the_last_answered_questions() -> None:
    from types import SimpleNamespace

    import ast


    from tests.conftest import REPO

    src = (REPO / "pages" / "notebook.py").read_text(encoding="utf-8")
    fn = next(n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name == "_history")
    scope: dict = {}
    exec(compile(ast.Module(body=[fn], type_ignores=[]), "pages/notebook.py", "exec"), scope)
    cell = lambda q, a: SimpleNamespace(question=q, current=SimpleNamespace(answer={"answer": a}) if a else None)  # noqa: E731
    cells = [cell("q1", "a1"), cell("q2", None), cell("q3", "a3"), cell("q4", "a4"), cell("q5", "a5")]
    assert scope["_history"](cells) == [("q3", "a3"), ("q4", "a4"), ("q5", "a5")]

