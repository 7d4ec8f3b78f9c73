"""The Settings page's widgets, written from the settings catalog (ragcore/settings/catalog.py).

Each saved setting's widget follows its rule: a choice is a select box (the default first), true/false a
toggle, a number a number box over the catalog's range; its label and help are the rule's. A setting marked
``app`` in its rule therefore appears in its group's form on the page (and in the file, and in the "where
each value comes from" table) with no code here or in pages/settings.py.
"""

from __future__ import annotations

from typing import Any, Sequence

from ragcore.settings import catalog
from ragcore.settings.app_file import value_of


def span(name: str, value: float) -> tuple:
    """(min, max, value, step) for a number widget: the catalog's range, the value brought inside it."""
    lo, hi, step = catalog.widget_range(name)
    return lo, hi, catalog.clamp(name, value), step


def choices(name: str) -> tuple[str, ...]:
    """A choice's values, its default first (the app's controls show hybrid first)."""
    e = catalog.entry(name)
    return tuple(sorted(e.rule.choices, key=lambda c: c != e.default))


def widget(where: Any, name: str, value: Any) -> Any:
    """One setting's widget in ``where`` (a column or the page), showing ``value``; returns what it holds,
    typed as the setting is (an int setting gives an int, a float is rounded as the catalog clamps it)."""
    e = catalog.entry(name)
    label, help_text = e.rule.label or e.field, e.rule.help or None
    if e.rule.kind == "bool":
        return bool(where.toggle(label, value=bool(value), help=help_text))
    if e.rule.kind == "choice":
        options = list(choices(name))
        return where.selectbox(label, options, index=options.index(value) if value in options else 0, help=help_text)
    if e.rule.kind in ("int", "float"):
        got = where.number_input(label, *span(name, value), help=help_text)
        return int(got) if e.rule.kind == "int" else catalog.clamp(name, float(got))
    raise ValueError(f"{name}: a {e.rule.kind} setting has no generated widget")  # text fields are the page's own


def widgets(columns: Sequence[Any], below: Any, names: Sequence[str], settings: Any) -> dict[str, Any]:
    """Widgets for ``names``: numbers and choices across ``columns`` in turn, toggles in ``below``.
    Returns each setting's value as the widgets hold it, by its saved name."""
    out: dict[str, Any] = {}
    placed = 0
    for name in names:
        if catalog.entry(name).rule.kind == "bool":
            continue
        out[name] = widget(columns[placed % len(columns)], name, value_of(settings, name))
        placed += 1
    for name in names:
        if catalog.entry(name).rule.kind == "bool":
            out[name] = widget(below, name, value_of(settings, name))
    return out
