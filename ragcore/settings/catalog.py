"""The settings catalog: every setting's rule and what the clients do with it, read from the fields.

Each field of :class:`RagcoreSettings`, :class:`LlmSettings` and :class:`ServiceSettings` carries one
:class:`~ragcore.settings.rules.Rule` with its range *and* its label, help, command-line option and
whether the app saves it, a service request may override it, ``ragcore eval`` may sweep it and the
lab's link carries it. The lists the clients used to type by hand are read from here: the CLI's
options (:func:`add_options`), the app's saved settings (:func:`persisted`) and widget ranges
(:func:`widget_range`), the service's request fields (:func:`request_entries`), eval's
:func:`sweepable` keys, the lab's link (:func:`share_params`) and A/B controls (:func:`ab_fields`),
and docs/13's tables
(``ragcore.settings.reference``). Adding a setting is one field in ``config.py``.
"""

from __future__ import annotations

import argparse
from dataclasses import MISSING, dataclass, fields
from functools import cache
from typing import Any

from ragcore.settings.config import LLM_ENV_PREFIX, ENV_PREFIX, LlmSettings, RagcoreSettings
from ragcore.settings.resolve import persisted_names, variables_of
from ragcore.settings.rules import Rule


@dataclass(frozen=True)
class Entry:
    """One setting: ``name`` as the app and the settings file write it (``top_k``, ``llm.model``;
    a service setting by its field name), the class that holds it, its variable and default."""

    name: str
    field: str
    owner: str  # "settings" | "llm" | "service"
    variable: str
    default: Any
    rule: Rule

    @property
    def variables(self) -> tuple[str, ...]:
        """Every variable that sets it, strongest first (OPENAI_API_KEY after RAGCORE_LLM_API_KEY)."""
        return (self.variable,) if self.owner == "service" else variables_of(self.name)

    @property
    def numeric(self) -> bool:
        return self.rule.kind in ("int", "float")


def _variable(owner: str, name: str) -> str:
    if owner == "llm":
        return LLM_ENV_PREFIX + name.upper()
    if owner == "service":
        from ragcore.settings.service import API_KEYS_VARIABLE, SERVE_ENV_PREFIX

        return API_KEYS_VARIABLE if name == "api_keys" else SERVE_ENV_PREFIX + name.upper()
    return ENV_PREFIX + name.upper()


@cache
def owned(owner: str) -> tuple[Entry, ...]:
    """The settings of one class: "settings", "llm" or "service" (imported only when asked: the
    CLI's cold path reads the first two)."""
    if owner == "service":
        from ragcore.settings.service import ServiceSettings

        cls: type = ServiceSettings
    else:
        cls = RagcoreSettings if owner == "settings" else LlmSettings
    out: list[Entry] = []
    for f in fields(cls):
        rule = f.metadata.get("rule")
        if rule is None:
            continue
        default = f.default if f.default is not MISSING else f.default_factory  # type: ignore[misc]
        out.append(Entry(("llm." if owner == "llm" else "") + f.name, f.name, owner, _variable(owner, f.name), default, rule))
    return tuple(out)


def entries() -> tuple[Entry, ...]:
    """Every setting, in the order the classes declare them (settings, then LLM, then service)."""
    return owned("settings") + owned("llm") + owned("service")


@cache
def entry(name: str, owner: str | None = None) -> Entry:
    """The setting ``name`` (``llm.model`` for the endpoint's); KeyError when there is none."""
    for e in entries():
        if e.name == name and (owner is None or e.owner == owner):
            return e
    raise KeyError(name)


# group -> (owner, its first field): a group holds the fields declared from its first to the next group's
# (docs/13's tables, and the app's Settings page forms)
GROUPS: dict[str, tuple[str, str]] = {
    "storage": ("settings", "data_dir"),
    "ingestion": ("settings", "chunk_size"),
    "models": ("settings", "embed_model"),
    "retrieval": ("settings", "retrieval_mode"),
    "answering": ("settings", "abstain_bar"),
    "llm": ("llm", "base_url"),
    "service": ("service", "host"),
}


def group_entries(group: str) -> list[Entry]:
    """The settings of one group, in the order the class declares them."""
    owner, first = GROUPS[group]
    starts = {f for o, f in GROUPS.values() if o == owner}
    out: list[Entry] = []
    inside = False
    for e in owned(owner):
        if e.field in starts:
            inside = e.field == first
        if inside:
            out.append(e)
    return out


# --------------------------------------------------------------------------- the lists the clients use


@cache
def app_group(*groups: str) -> tuple[str, ...]:
    """The settings of ``groups`` the app saves (its Settings page's forms), by their saved name."""
    return tuple(e.name for g in groups for e in group_entries(g) if e.rule.app and not e.rule.secret)


@cache
def persisted() -> tuple[str, ...]:
    """What the app saves in app_settings.json (never a secret)."""
    return persisted_names(RagcoreSettings)


@cache
def secret_names() -> tuple[str, ...]:
    """The settings whose value is never shown, logged or written to the settings file."""
    return tuple(e.name for e in owned("settings") + owned("llm") if e.rule.secret)


@cache
def options() -> dict[str, str]:
    """Settings field -> its command-line option, for error messages (``--top-k=0 is not allowed``)."""
    return {e.field: e.rule.flag for e in owned("settings") if e.rule.flag}


@cache
def numeric_options() -> tuple[str, ...]:
    """Options whose value may start with "-" (``--threshold -1``): argparse would read it as an option."""
    return tuple(e.rule.flag for e in owned("settings") if e.rule.flag and e.numeric)


def add_options(parser: argparse.ArgumentParser, command: str, aliases: dict[str, tuple[str, ...]] | None = None) -> None:
    """The settings options ``command`` (ask, ingest, eval) takes, with the rule's words in --help.
    Values stay strings: they are checked by the settings' rules, so an error names the option.
    ``aliases``: more spellings of a field's option (eval's ``--retrieval-mode``)."""
    aliases = aliases or {}
    for e in owned("settings"):
        if command not in e.rule.commands or not e.rule.flag:
            continue
        label = e.rule.label or e.field
        kwargs: dict[str, Any] = {"dest": e.field, "help": f"{label} ({e.rule.allowed()})" if e.numeric else label}
        if e.rule.kind == "choice":
            kwargs["choices"] = list(e.rule.choices)
            kwargs["help"] = f"{label} (default {e.default})"
        parser.add_argument(e.rule.flag, *aliases.get(e.field, ()), **kwargs)


@cache
def sweepable() -> tuple[str, ...]:
    """Settings ``ragcore eval --sweep`` may vary (those that change retrieval, chunking or answering)."""
    return tuple(e.field for e in owned("settings") if e.rule.sweep)


@cache
def config_keys() -> tuple[str, ...]:
    """The settings that describe a configuration in eval's reports: the sweepable ones but the
    collection, which a run names by itself."""
    return tuple(k for k in sweepable() if k != "collection")


@cache
def lab_signals() -> tuple[str, ...]:
    """The lab's retrieval signals (its Signals controls)."""
    return tuple(e.field for e in owned("settings") if e.rule.lab)


@cache
def ab_fields() -> tuple[str, ...]:
    """The settings the lab's A/B compare lets configuration B set, in the class's order."""
    return tuple(e.field for e in owned("settings") if e.rule.ab)


@cache
def share_params() -> dict[str, str]:
    """The lab's URL parameter -> its settings field."""
    return {e.rule.share: e.field for e in owned("settings") if e.rule.share}


@cache
def request_entries() -> tuple[Entry, ...]:
    """Settings a service request may override (``Entry.rule.request`` is the request's field name)."""
    return tuple(e for e in owned("settings") if e.rule.request)


def widget_range(name: str) -> tuple[float, float, float]:
    """The app's (min, max, step) for a number setting: the catalog's widget range where it has one
    (a rule open above, or wider than a widget can show), else the rule's own range."""
    e = entry(name)
    if e.rule.widget is not None:
        lo, hi, step = e.rule.widget
    else:
        lo = e.rule.ge if e.rule.ge is not None else (e.rule.gt or 0)
        hi = e.rule.le if e.rule.le is not None else lo
        step = 1 if e.rule.kind == "int" else 0.05
    if e.rule.kind == "int":
        return int(lo), int(hi), int(step)
    return float(lo), float(hi), float(step)


def clamp(name: str, value: float) -> float:
    """``value`` brought into the setting's widget range (a hand-edited link cannot reach past a control)."""
    lo, hi, _ = widget_range(name)
    out = min(max(value, lo), hi)
    return int(out) if entry(name).rule.kind == "int" else round(float(out), 4)
