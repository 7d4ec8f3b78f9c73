"""Evaluate's abstain-bar calibration (ragcore/eval/calibration.py): calibrate, ask before replacing a
stored bar, and the stored bars with a restore button. Messages for the page go to the session
(``ev_calibrated``, ``ev_cal_error``), shown by the page after its rerun."""

from __future__ import annotations

import streamlit as st

from ragcore.engine.engine import Engine
from ragcore.eval.dataset import EvalDataset

from .render import md_inline


def calibrate_or_ask(engine: Engine, dataset: EvalDataset, collection: str, settings, *, replace: bool):
    ss = st.session_state
    """Calibrate; when a bar is stored already and ``replace`` is False, return what to ask
    (collection, data set, the stored bar) instead. A data set that does not belong to the
    collection is refused with the reason (ev_cal_error)."""
    from ragcore.eval.calibration import BarExists, CalibrationError, calibrate

    try:
        with st.spinner("Calibrating…", show_time=True):
            cal = calibrate(engine, dataset, collection, settings, replace=replace)
    except BarExists as exc:
        return (collection, dataset.name, exc.current)
    except CalibrationError as exc:
        ss["ev_cal_error"] = str(exc)
        return None
    ss["ev_calibrated"] = (f"Abstain bar for `{md_inline(collection)}`: **{cal.bar:.3f}**, from {md_inline(cal.dataset)} "
                           f"(answers {cal.answer_rate:.0%} of {cal.answerable} answerable questions, abstains on "
                           f"{cal.abstain_rate:.0%} of {cal.unanswerable} unanswerable). Stored with the collection"
                           + ("; the bar it replaced is kept under “Stored abstain bars”." if replace else "."))
    return None


def confirm_replacement(engine: Engine, dataset: EvalDataset, collection: str, settings, current: dict) -> None:
    ss = st.session_state
    from ragcore.eval.calibration import describe_bar

    st.warning(f"`{md_inline(collection)}` already has a calibrated abstain bar: {md_inline(describe_bar(current))}. "
               f"Replace it with a bar calibrated on {md_inline(dataset.name)}? The current bar is kept and can be "
               "restored.", icon=":material/warning:")
    yes, no = st.columns([0.25, 0.75])
    if yes.button("Replace the bar", key="ev_cal_replace", icon=":material/swap_horiz:"):
        ss["ev_cal_pending"] = calibrate_or_ask(engine, dataset, collection, settings, replace=True)
        st.rerun()
    if no.button("Keep the stored bar", key="ev_cal_keep"):
        ss.pop("ev_cal_pending", None)
        st.rerun()


def stored_bars_panel(engine: Engine, collection: str) -> None:
    ss = st.session_state
    """The bar in force and the earlier ones, with a restore button."""
    from ragcore.eval.calibration import describe_bar, restore_bar, stored_bars

    current, history = stored_bars(engine, collection)
    if not current and not history:
        return
    with st.expander(f"Stored abstain bars of {md_inline(collection)} ({1 + len(history) if current else len(history)})"):
        st.markdown(f"In force: {md_inline(describe_bar(current)) if current else 'none (label-free or settings bar)'}")
        if not history:
            st.caption("No earlier bars: a bar replaced by a calibration is kept here.")
            return
        pick = st.selectbox("Earlier bars (newest first)", range(len(history)), key="ev_bar_pick",
                            format_func=lambda i: describe_bar(history[i]))
        if st.button("Restore this bar", key="ev_bar_restore", icon=":material/history:"):
            chosen = restore_bar(engine, collection, pick)
            ss["ev_calibrated"] = (f"Restored the abstain bar of `{md_inline(collection)}`: "
                                   f"{md_inline(describe_bar(chosen))}; the bar it replaced is kept too.")
            st.rerun()
