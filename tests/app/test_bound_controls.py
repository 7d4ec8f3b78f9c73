"""ui.state.bound: a widget bound to a canonical session value (real Streamlit AppTest, no app)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _app() -> None:
    import streamlit as st

    from ui.state import bound

    st.session_state.setdefault("canon", 0.0)
    if st.button("elsewhere", key="move"):  # another control moves the value
        st.session_state["canon"] = 0.5
    bound(st.slider, "Threshold", "canon", key="w", min_value=0.0, max_value=1.0, step=0.01)
    st.write(f"canon={st.session_state['canon']:.2f}")


def _canon(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("canon="))


def test_a_move_reaches_the_canonical_value() -> None:
    at = AppTest.from_function(_app).run()
    at.slider(key="w").set_value(0.29).run()
    assert _canon(at) == "canon=0.29" and at.slider(key="w").value == 0.29


def test_a_widget_value_no_callback_carried_is_adopted_not_overwritten() -> None:
    """Fast key presses on a busy machine: a run is interrupted and the widget's last value never
    went through its callback. The browser shows that value, so the canonical one must follow it
    (overwriting the widget from the stale canonical value is how the lab showed 0.29 and used 0.28)."""
    at = AppTest.from_function(_app).run()
    at.slider(key="w").set_value(0.28).run()
    at.session_state["w"] = 0.29  # the widget's own value, no on_change
    at.run()
    assert _canon(at) == "canon=0.29" and at.slider(key="w").value == 0.29


def test_a_value_moved_elsewhere_is_shown_by_the_widget() -> None:
    at = AppTest.from_function(_app).run()
    at.slider(key="w").set_value(0.28).run()
    at.button(key="move").click().run()
    at.run()
    assert _canon(at) == "canon=0.50" and at.slider(key="w").value == 0.5
