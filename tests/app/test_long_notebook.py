"""AppTest: a long notebook draws its newest cells (ui.cells.SHOWN_CELLS); the older ones are one
click away ("Show all" / "Show 20 more"), and a link to an older cell draws it and those after it."""

from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace

import pytest

from tests.support.app_support import QUESTION, app_env, new_app, ok  # noqa: F401
from ui.cells import SHOWN_CELLS, first_shown

pytestmark = pytest.mark.slow
N = SHOWN_CELLS + 4


def _seed(app_env, n: int) -> list[str]:
    """One real answer (asked through the app), copied into ``n`` cells."""
    at = new_app()
    at.query_params.update({"q": QUESTION})
    at.run()
    ok(at)
    path = app_env / "notebooks" / "guide.json"
    data = json.loads(path.read_text())
    one = data["cells"][0]
    data["cells"] = [{**one, "id": f"seed{i:04d}", "question": f"{QUESTION} ({i})"} for i in range(n)]
    path.write_text(json.dumps(data))
    return [c["id"] for c in data["cells"]]


def _drawn(at) -> list[str]:
    return [b.key.removeprefix("rerun_") for b in at.button if (b.key or "").startswith("rerun_")]


def test_the_newest_cells_are_drawn_and_the_rest_one_click_away(app_env):
    ids = _seed(app_env, N)
    at = new_app()
    at.run()
    ok(at)
    assert _drawn(at) == ids[-SHOWN_CELLS:]
    assert any("4 earlier cells not drawn" in c.value for c in at.caption)
    assert f"{N} cells" in " ".join(c.value for c in at.caption)  # the toolbar counts them all
    at.button(key="nb_earlier_all").click().run()
    ok(at)
    assert _drawn(at) == ids
    assert not [b for b in at.button if b.key == "nb_earlier_all"]
    at.run()  # stays so in the session
    assert _drawn(at) == ids
    at.chat_input[0].set_value("What is top-K?").run()  # one more cell: all still drawn
    ok(at)
    at.run()
    assert len(_drawn(at)) == N + 1


def test_a_link_to_an_older_cell_draws_it_and_keeps_it_drawn(app_env):
    ids = _seed(app_env, N)
    at = new_app()
    at.query_params.update({"cell": ids[1], "q": f"{QUESTION} (1)"})
    at.run()
    ok(at)
    assert _drawn(at) == ids[1:]
    assert at.session_state["nb_selected_cell"] == ids[1]
    assert any("1 earlier cell not drawn" in c.value for c in at.caption)
    at.button(key=f"rerun_{ids[1]}")  # its buttons work: the cell is there on the next run too
    at.run()
    ok(at)
    assert _drawn(at) == ids[1:]


def test_first_shown():
    assert first_shown(50, 10) == 40
    assert first_shown(5, 10) == 0
    assert first_shown(50, 10, keep=3) == 3
    assert first_shown(50, 10, keep=45) == 40
    assert first_shown(50, 0) == 50



def test_a_run_waits_for_the_previous_runs_save_when_the_save_is_slow(tmp_path):
    """Issue 42 item 7 ("a new cell is numbered 17, then 18"): the next run waits for the answer still being
    saved (``rc_inflight``, ui/nbcache.py). At load 15 a save of a long notebook took longer than the old
    5 s bound, so the run read the notebook without that cell. The slow save is staged (a thread saves the
    cell after 8 s, as the app's save thread would; a disk that slow cannot be made on demand), and
    ``load_notebook`` is called outside a script run (Streamlit's session state then is a plain one); the
    bound it must fit is 60 s."""
    import streamlit as st

    from ui.nbcache import load_notebook
    from ui.notebook import Cell, Notebook, NotebookStore

    store = NotebookStore(tmp_path)
    store.save(Notebook("guide", [Cell(question="first")]))
    saved = threading.Event()

    def slow_save() -> None:
        time.sleep(8)
        store.save(Notebook("guide", [Cell(question="first"), Cell(question="late")]))
        saved.set()

    st.session_state["rc_inflight"] = saved
    try:
        threading.Thread(target=slow_save, daemon=True).start()
        nb = load_notebook(SimpleNamespace(notebooks=store), "guide")
    finally:
        del st.session_state["rc_inflight"]
    assert [c.question for c in nb.cells] == ["first", "late"]
