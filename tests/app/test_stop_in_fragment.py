"""Stop while an answer streams inside a fragment: Streamlit queues a fragment's click until the
running script ends, so ui.streaming reads the queued request (pressed_since_run_began). These
tests hold that reading to Streamlit's own ScriptRequests, so an upgrade that renames what it
reads fails here instead of silently making Stop wait for the whole answer again. The script-run
context is a stand-in holding only ``script_requests`` (the one field read); the requests object
and its rerun data are Streamlit's real ones."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetStates
from streamlit.runtime.scriptrunner_utils import script_run_context
from streamlit.runtime.scriptrunner_utils.script_requests import RerunData, ScriptRequests

from ui.streaming import pressed_since_run_began

STOP_KEY = "stop_c1_0"
STOP_ID = f"$$ID-0123456789abcdef-{STOP_KEY}"  # how Streamlit names a keyed element


@pytest.fixture
def requests(monkeypatch) -> ScriptRequests:
    reqs = ScriptRequests()
    monkeypatch.setattr(script_run_context, "get_script_run_ctx", lambda suppress_warning=False: SimpleNamespace(script_requests=reqs))
    return reqs


def _states(**triggers: bool) -> WidgetStates:
    ws = WidgetStates()
    for wid, value in triggers.items():
        w = ws.widgets.add()
        w.id = wid
        w.trigger_value = value
    return ws


def test_a_queued_fragment_click_on_stop_is_seen(requests):
    assert not pressed_since_run_began(STOP_KEY)  # nothing queued
    requests.request_rerun(RerunData(widget_states=_states(**{STOP_ID: True}), fragment_id="live-fragment"))
    assert pressed_since_run_began(STOP_KEY)


def test_other_widgets_and_timer_reruns_are_not_stop(requests):
    # a run_every fragment's tick (no widget states) and another button's click queue reruns too
    requests.request_rerun(RerunData(fragment_id="sidebar-fragment", is_auto_rerun=True))
    assert not pressed_since_run_began(STOP_KEY)
    requests.request_rerun(RerunData(widget_states=_states(**{"$$ID-fedcba9876543210-nb_refresh": True}), fragment_id="live"))
    assert not pressed_since_run_began(STOP_KEY)
    # an earlier Stop of another run of the cell (another key) is not this run's
    requests.request_rerun(RerunData(widget_states=_states(**{STOP_ID.replace("_0", "_1"): True}), fragment_id="live"))
    assert not pressed_since_run_began(STOP_KEY)


def test_outside_a_script_run_it_says_no(monkeypatch):
    monkeypatch.setattr(script_run_context, "get_script_run_ctx", lambda suppress_warning=False: None)
    assert not pressed_since_run_began(STOP_KEY)
