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
    from ui.notebook.model import Cell, Run, recent_turns

    def cell(q: str, a: str | None) -> Cell:
        c = Cell(question=q, context_mode="corpus")
        if a is not None:
            c.add_run(Run(answer={"answer": a, "status": "ok"}, outcome="ok"))
        return c

    cells = [cell("q1", "a1"), cell("q2", None), cell("q3", "a3"), cell("q4", "a4"), cell("q5", "a5")]
    assert recent_turns(cells) == [("q3", "a3"), ("q4", "a4"), ("q5", "a5")]
