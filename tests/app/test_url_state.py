"""AppTest: what the URL says (ui/share.py). A link is adopted when it opens a session, never later
in it: a browser that has not caught up with the session's own newer write sends an older URL
back, and adopting that echo reset the lab's threshold. A notebook link (?cell=…&q=…) brings its
cell into view, or asks its question when the notebook has no such cell; the URL names the
selected cell and its question."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.support.app_support import QUESTION, app_env, new_app, ok, started  # noqa: F401

pytestmark = pytest.mark.slow
LAB = "pages/retrieval_lab.py"


def _qp(at) -> dict[str, str]:
    return {k: at.query_params[k][0] if isinstance(at.query_params[k], list) else at.query_params[k] for k in at.query_params}


def test_a_link_sets_the_lab_but_a_stale_echo_later_in_the_session_does_not(app_env):
    at = new_app()
    at.query_params.update({"thr": "0.29", "k": "9", "q": QUESTION})
    at.switch_page(LAB).run()
    ok(at)
    assert at.session_state["lab_cfg_threshold"] == pytest.approx(0.29) and at.session_state["lab_cfg_top_k"] == 9
    assert at.slider(key="lab_threshold").value == pytest.approx(0.29)

    at.slider(key="lab_threshold").set_value(0.4).run()
    ok(at)
    assert _qp(at)["thr"] == "0.4"  # the URL follows the slider
    # the browser sends the URL it had before it received that write: the session keeps its own state
    at.query_params.update({"thr": "0.29", "k": "9"})
    at.run()
    ok(at)
    assert at.session_state["lab_cfg_threshold"] == pytest.approx(0.4)
    assert at.slider(key="lab_threshold").value == pytest.approx(0.4)
    assert _qp(at)["thr"] == "0.4"


def test_an_echo_of_the_previous_collection_does_not_switch_back(app_env, tmp_path):
    from tests.support.app_support import shared_runtime

    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "pump.md").write_text("# Pump\n\nThe pump runs at night and stops at dawn.\n")
    other = f"echo-{uuid.uuid4().hex[:6]}"
    rt = shared_runtime()
    rt.engine.ingest([tmp_path / "notes"], other)
    rt.invalidate_collections()
    try:
        at = started()
        assert at.session_state["cfg_collection"] == "guide" and _qp(at).get("collection") == "guide"
        at.selectbox(key="sb_collection").set_value(other).run()
        ok(at)
        assert _qp(at).get("collection") == other
        at.query_params.update({"collection": "guide"})  # the URL before the browser caught up with the switch
        at.run()
        ok(at)
        assert at.session_state["cfg_collection"] == other and _qp(at).get("collection") == other
        # a reload with that URL (a new session) opens the collection it names
        again = new_app()
        again.query_params.update({"collection": other})
        again.run()
        ok(again)
        assert again.session_state["cfg_collection"] == other
    finally:
        rt.engine.drop(other)
        rt.invalidate_collections()


def _cells(app_env) -> list[dict]:
    return json.loads((app_env / "notebooks" / "guide.json").read_text())["cells"]


def test_a_notebook_link_asks_its_question_once_then_points_at_its_cell(app_env):
    at = new_app()
    at.query_params.update({"q": QUESTION})
    at.run()
    ok(at)
    cells = _cells(app_env)
    assert [c["question"] for c in cells] == [QUESTION]
    cell_id = cells[0]["id"]
    assert _qp(at).get("cell") == cell_id and _qp(at).get("q") == QUESTION  # the URL reproduces it
    at.run()  # the same session: not asked again
    assert len(_cells(app_env)) == 1

    # the link opened again (a new session): the notebook has that cell, so it is selected and scrolled to
    again = new_app()
    again.query_params.update({"q": QUESTION, "cell": cell_id})
    again.run()
    ok(again)
    assert len(_cells(app_env)) == 1
    assert again.session_state["nb_selected_cell"] == cell_id  # outlined (ui/cells.py, key cell_<id>_sel)
    styles = [h.value for h in again.html if "scroll-snap-align" in h.value]
    assert styles and f".st-key-cell_{cell_id}_sel" in styles[0] and "<script" not in styles[0]
    assert _qp(again).get("cell") == cell_id


def test_a_lab_link_does_not_ask_its_question_in_the_notebook(app_env):
    at = new_app()
    at.query_params.update({"q": QUESTION, "thr": "0.2"})
    at.switch_page(LAB).run()
    ok(at)
    at.switch_page("pages/notebook.py").run()
    ok(at)
    assert not (app_env / "notebooks" / "guide.json").exists() or not _cells(app_env)
    assert "cell" not in _qp(at) and "thr" not in _qp(at)  # the notebook's URL drops the lab's setup


def test_the_scroll_css_takes_only_a_cell_id():
    from ui.share import scroll_to_cell_css

    assert ".st-key-cell_abc123_sel{" in scroll_to_cell_css("abc123")
    with pytest.raises(ValueError):
        scroll_to_cell_css("x}</style><script>alert(1)</script>")


def test_a_link_question_asks_the_corpus_whatever_mode_the_session_is_in(app_env):
    """Issue 42, item 7: a ``?q=`` link for a corpus question opened a selection-mode cell."""
    at = new_app()
    at.session_state["cfg_context"] = "selection"
    at.session_state["nb_passage"] = "A pasted passage about something else entirely, long enough to be a selection."
    at.query_params.update({"q": QUESTION})
    at.run()
    ok(at)
    cells = _cells(app_env)
    assert [(c["question"], c.get("context_mode")) for c in cells][-1] == (QUESTION, "corpus")
