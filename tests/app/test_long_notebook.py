"""AppTest: a long notebook draws its newest cells (ui.cells.SHOWN_CELLS); the older ones are one
click away ("Show all" / "Show 20 more"), and a link to an older cell draws it and those after it."""

from __future__ import annotations

import json

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
