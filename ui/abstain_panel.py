"""The lab's view of the abstain signals (abstain/signals.py): for the lab's question and setup, each
signal's own line in order, and which one vetoes, as the notebook's answer would decide."""

from __future__ import annotations

from typing import Any

import streamlit as st

from ui.render import md_inline


def abstain_panel(engine: Any, question: str, settings: Any, collection: str) -> None:
    """A button (the check runs the assess stage: the support score, the topic match) and its result."""
    if not question.strip():
        return
    key = (collection, question.strip(), settings)
    if st.button("Would the notebook answer?", key="lab_abstain_check", icon=":material/rule:",
                 help="Runs the abstain signals in order on this setup's retrieval; the first veto abstains."):
        try:
            st.session_state["lab_abstain"] = (key, engine.abstain_signals(question, collection=collection, settings=settings))
        except Exception as exc:  # noqa: BLE001 - shown, the lab goes on
            st.warning(f"The abstain signals could not run: {md_inline(str(exc))}")
    stored = st.session_state.get("lab_abstain")
    if not stored or stored[0] != key:
        return
    lines = []
    for v in stored[1]:
        mark = ":red-badge[veto]" if v.veto else ":green-badge[pass]"
        lines.append(f"- {mark} **{md_inline(v.signal)}**: {md_inline(v.note)}")
    vetoed = stored[1][-1].veto if stored[1] else None
    st.markdown(("It would abstain: " + md_inline(vetoed) if vetoed else "It would answer.") + "\n\n" + "\n".join(lines))
