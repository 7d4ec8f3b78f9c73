"""The lab's A/B compare: configuration B's controls and each side's settings, read from the settings catalog.

Configuration A is the lab's own setup (the controls above the tabs, in ``ui/session.py``'s keys); B starts
from it in the other retrieval mode and has a control of its own for every setting whose catalog rule says
``ab`` (``ragcore/settings/config.py``). Adding a setting to the compare is that one flag: its control, its
range and choices, B's starting value and both sides' retrieval follow.
"""

from __future__ import annotations

from typing import Any, MutableMapping

import streamlit as st

from ragcore.settings import catalog
from ragcore.settings.config import RagcoreSettings
from ui import controls, session

# a fusion's own parameter is shown only with that fusion (the other one's would do nothing)
ONLY_WITH_FUSION = {"rrf_k": "rrf", "dense_weight": "weighted"}


def fields() -> tuple[str, ...]:
    return catalog.ab_fields()


def side_key(side: str, field: str) -> str:
    """Where a side's value lives: A's in the lab's own keys, B's under ``ab_B_<field>``."""
    return session.lab_key(field) if side == "A" else f"ab_{side}_{field}"


def side_defaults(side: str, base: RagcoreSettings) -> dict[str, Any]:
    """A side's starting values: the lab's setup; B in the other retrieval mode, so the compare shows something."""
    values = {f: getattr(base, f) for f in fields()}
    if side != "A":
        values["retrieval_mode"] = "dense" if base.retrieval_mode != "dense" else "hybrid"
    return values


def side_settings(side: str, base: RagcoreSettings, ss: MutableMapping[str, Any]) -> RagcoreSettings:
    """``base`` with one side's values (typed by their rules: a number widget may hand an int for a float)."""
    return base.with_(**{f: _typed(f, ss[side_key(side, f)]) for f in fields()})


def _typed(field: str, value: Any) -> Any:
    kind = catalog.entry(field).rule.kind
    return {"int": int, "float": float, "bool": bool}.get(kind, lambda v: v)(value)


def side_controls(side: str, base: RagcoreSettings) -> None:
    """B's controls, two columns, in the catalog's order; each bound to its side's key."""
    ss = st.session_state
    for f, v in side_defaults(side, base).items():
        ss.setdefault(side_key(side, f), v)
    shown = [f for f in fields() if ONLY_WITH_FUSION.get(f, ss[side_key(side, "fusion")]) == ss[side_key(side, "fusion")]]
    cols = st.columns(2)
    for i, f in enumerate(shown):
        with cols[i % 2]:
            _control(side, f)


def _control(side: str, field: str) -> None:
    rule = catalog.entry(field).rule
    key, canon = f"ab_{side}_{field}_w", side_key(side, field)
    label = rule.label or field
    if rule.kind == "choice":
        controls.bound(st.selectbox, label, canon, key=key, options=list(rule.choices))
    elif rule.kind == "bool":
        controls.bound(st.toggle, label, canon, key=key)
    else:
        lo, hi, step = catalog.widget_range(field)
        extra = {"format": "%.2f"} if rule.kind == "float" else {}
        controls.bound(st.number_input, label, canon, key=key, min_value=lo, max_value=hi, step=step, **extra)
