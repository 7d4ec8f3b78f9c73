"""The rule machinery behind every setting: a field's :class:`Rule` (kind, range, choices), parsing a
variable's text into a typed value, and the one error type, :class:`ConfigError`, whose message names
the variable, the value and what is allowed. ``config.py`` declares the settings with these rules."""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping, get_args

from ragcore.settings.redact import redact_url

ENV_PREFIX = "RAGCORE_"
LLM_ENV_PREFIX = "RAGCORE_LLM_"
# Variables that were renamed: setting the old name is an error that names the new one.
RENAMED_VARIABLES = {"RAGCORE_MODE": "RAGCORE_RETRIEVAL_MODE"}
# RAGCORE_* variables that are not settings but are read elsewhere (the unknown-variable check
# must let them through): RAGCORE_DEBUG shows CLI tracebacks, RAGCORE_APP_WARMUP the app's warm-up.
OTHER_VARIABLES = frozenset({"RAGCORE_DEBUG", "RAGCORE_APP_WARMUP"})
# Settings the standard OpenAI variables also set, below their own RAGCORE_* variable: the LLM endpoint's,
# and the embedding endpoint's (an ``openai:`` model reaches the same server by default)
OPENAI_FALLBACKS = {"llm.api_key": "OPENAI_API_KEY", "llm.base_url": "OPENAI_BASE_URL",
                    "embed_api_key": "OPENAI_API_KEY", "embed_base_url": "OPENAI_BASE_URL"}

TRUE_WORDS = ("1", "true", "yes", "on")
FALSE_WORDS = ("0", "false", "no", "off")
HIDDEN = "(hidden)"


class ConfigError(ValueError):
    """A setting with a value it may not have (or an unknown setting): the message names the
    variable or field, the value (never a secret's) and what is allowed."""


def default_data_dir() -> Path:
    """Where embedded Qdrant and notebooks live unless RAGCORE_DATA_DIR says otherwise.

    ``~/.local/share/ragcore`` (or ``$XDG_DATA_HOME/ragcore``): outside the work tree, so a
    clone stays clean and every checkout of the app sees the same collections.
    """
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "ragcore"


# --------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class Rule:
    """What one field accepts. ``kind``: int, float, bool, choice, str, url, path or strs."""

    kind: str
    ge: float | None = None
    le: float | None = None
    gt: float | None = None
    also: tuple[float, ...] = ()  # single values allowed outside the range (threshold: -1)
    choices: tuple[str, ...] = ()
    optional: bool = False  # None (or "") means "not set"
    secret: bool = False  # the value is never shown
    # The catalog (settings/catalog.py): how the clients show, take and use the field. Declared here,
    # beside the range, so that adding a setting is one line: the CLI's options, the app's widgets and
    # saved list, the service's request models, eval's sweep list, the lab's link and docs/13 follow.
    label: str = ""  # a short name: the app's widget, the CLI's --help
    help: str = ""  # what it does: docs/13's "Meaning" column
    flag: str | None = None  # the command-line option that sets it ("--top-k")
    commands: tuple[str, ...] = ()  # the commands that take ``flag`` (ask, ingest, eval); () = added by hand
    app: bool = False  # the app saves it in app_settings.json
    request: str | None = None  # the field a service request may override it with
    sweep: bool = False  # ``ragcore eval --sweep`` may vary it, and reports describe a run by it
    share: str | None = None  # the lab's URL parameter
    lab: bool = False  # one of the lab's retrieval signals (its Signals controls)
    ab: bool = False  # the lab's A/B compare gives configuration B its own control for it
    widget: tuple[float, float, float] | None = None  # the app's (min, max, step) where the rule's range is open or wide
    shown_default: str | None = None  # docs/13's default, where the value alone would mislead

    def allowed(self) -> str:
        """What the field accepts, in words: ends every error message."""
        if self.kind in ("int", "float"):
            noun = "an integer" if self.kind == "int" else "a finite number"
            if self.ge is not None and self.le is not None:
                text = f"{noun} from {_num(self.ge)} to {_num(self.le)}"
            elif self.gt is not None:
                text = f"{noun} > {_num(self.gt)}"
            else:
                text = f"{noun} ≥ {_num(self.ge)}"
            return text + "".join(f", or {_num(a)}" for a in self.also)
        if self.kind == "choice":
            text = _or(self.choices)
        else:
            text = {
                "bool": "true or false (also 1/0, yes/no, on/off)",
                "str": "a non-empty string",
                "url": "an http:// or https:// URL",
                "path": "a folder path",
                "strs": "a list of non-empty strings (separated by ; in the environment)",
            }[self.kind]
        return text + (" (or not set)" if self.optional else "")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _or(choices: tuple[str, ...]) -> str:
    quoted = [repr(c) for c in choices]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]


def _setting(default: Any, kind: str, **rule: Any) -> Any:
    """A dataclass field whose rule (and catalog entry) travels with it (``metadata["rule"]``)."""
    if callable(default):
        return field(default_factory=default, metadata={"rule": Rule(kind, **rule)}, repr=not rule.get("secret"))
    return field(default=default, metadata={"rule": Rule(kind, **rule)}, repr=not rule.get("secret"))


def _choice(default: str, literal: Any, **rule: Any) -> Any:
    return _setting(default, "choice", choices=tuple(get_args(literal)), **rule)


class _Bad(Exception):
    """Internal: the value does not fit its rule (the caller writes the message)."""


def _in_range(rule: Rule, x: float) -> bool:
    if x in rule.also:
        return True
    return ((rule.ge is None or x >= rule.ge) and (rule.le is None or x <= rule.le)
            and (rule.gt is None or x > rule.gt))


def _typed(rule: Rule, value: Any) -> Any:
    """``value`` (already a Python object) checked against ``rule`` and normalised."""
    if rule.optional and (value is None or value == ""):
        return None
    kind = rule.kind
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, (numbers.Integral, float)):
            raise _Bad
        if isinstance(value, float) and not value.is_integer():
            raise _Bad
        out: Any = int(value)
    elif kind == "float":
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
            raise _Bad
        out = float(value)
    elif kind == "bool":
        if not isinstance(value, bool):
            raise _Bad
        return value
    elif kind == "choice":
        if value not in rule.choices:
            raise _Bad
        return value
    elif kind == "path":
        if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
            raise _Bad
        return Path(value)
    elif kind == "strs":
        if isinstance(value, str) or not isinstance(value, (tuple, list)):
            raise _Bad
        if not all(isinstance(s, str) and s.strip() for s in value):
            raise _Bad
        return tuple(value)
    else:  # str, url
        if not isinstance(value, str) or not value.strip():
            raise _Bad
        if kind == "url" and not value.strip().lower().startswith(("http://", "https://")):
            raise _Bad
        return value
    if not _in_range(rule, out):
        raise _Bad
    return out


def _parsed(rule: Rule, raw: str) -> Any:
    """A string (an environment variable, a secrets.toml string) as the field's type, checked."""
    text = raw.strip()
    kind = rule.kind
    try:
        if kind == "int":
            value: Any = int(text)
        elif kind == "float":
            value = float(text)
        elif kind == "bool":
            if text.lower() not in TRUE_WORDS + FALSE_WORDS:
                raise _Bad
            value = text.lower() in TRUE_WORDS
        elif kind == "choice":
            value = text.lower()
        elif kind == "path":
            value = Path(text).expanduser() if text else text
        elif kind == "strs":
            value = tuple(s.strip() for s in text.split(";") if s.strip())
        else:
            value = text
    except ValueError:
        raise _Bad from None
    return _typed(rule, value)


def _shown(rule: Rule, value: Any, from_text: bool) -> str:
    """The value as an error message shows it: secrets hidden, URL credentials removed,
    control characters escaped."""
    if rule.secret:
        return HIDDEN
    if rule.kind == "url" and isinstance(value, str):
        value = redact_url(value)
    if from_text and isinstance(value, str):
        return value if value.isprintable() and value.strip() else repr(value)
    shown = repr(value)
    if isinstance(value, numbers.Integral) and len(shown) > 24:  # a request may send any size of integer
        return f"{shown[:12]}… ({len(shown)} digits)"
    return shown


def check_value(name: str, rule: Rule, value: Any, label: str | None = None, where: str = "") -> Any:
    """``value`` for the field ``name`` checked and normalised; strings are parsed as the
    environment writes them when the field is not a string field. ``label`` is what the user
    wrote (``RAGCORE_TOP_K``, ``llm.temperature``; default: the field name), ``where`` an
    optional " in FILE"."""
    from_text = label is not None and isinstance(value, str)
    try:
        if isinstance(value, str) and rule.kind not in ("str", "url"):
            return _parsed(rule, value)
        return _typed(rule, value.strip() if isinstance(value, str) else value)
    except _Bad:
        shown = _shown(rule, value, from_text)
        raise ConfigError(f"{label or name}={shown}{where} is not allowed: {name} must be {rule.allowed()}") from None


def _check_fields(obj: Any) -> None:
    """Validate and normalise every field of a settings dataclass, in place (it is frozen)."""
    problems: list[str] = []
    for f in fields(obj):
        rule = f.metadata.get("rule")
        if rule is None:
            continue
        try:
            value = check_value(f.name, rule, getattr(obj, f.name))
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        object.__setattr__(obj, f.name, value)
    if problems:
        raise ConfigError("; ".join(problems))


def _rules(cls: type) -> dict[str, Rule]:
    return {f.name: f.metadata["rule"] for f in fields(cls) if "rule" in f.metadata}


def chunk_problem(size: int, overlap: int, labels: Mapping[str, str]) -> str | None:
    """Why ``chunk_overlap`` cannot go with ``chunk_size`` (None when it can); ``labels`` name
    where each came from (a variable, an option) when not from code."""
    if overlap < size:
        return None
    o = labels.get("chunk_overlap", "chunk_overlap")
    s = f"{labels['chunk_size']}={size}" if "chunk_size" in labels else str(size)
    return f"{o}={overlap} is not allowed: chunk_overlap must be less than chunk_size ({s})"


def env_values(cls: type, env: Mapping[str, str], prefix: str, skip: tuple[str, ...] = ()) -> tuple[dict[str, Any], dict[str, str]]:
    """The fields of ``cls`` set in ``env`` as ``PREFIX + NAME``, parsed and checked (every bad
    variable in one ConfigError), with the variable each came from."""
    values: dict[str, Any] = {}
    labels: dict[str, str] = {}
    problems: list[str] = []
    for name, rule in _rules(cls).items():
        var = prefix + name.upper()
        raw = env.get(var)
        if name in skip or raw is None or raw.strip() == "":
            continue
        try:
            values[name] = check_value(name, rule, raw, var)
            labels[name] = var
        except ConfigError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigError("; ".join(problems))
    return values, labels


def _no_unknown(cls: type, changes: Mapping[str, Any]) -> None:
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(changes) - names)
    if unknown:
        raise ConfigError(f"unknown setting(s) {', '.join(unknown)} for {cls.__name__}")


def _safe_repr(obj: Any) -> str:
    """The dataclass repr without secrets: keys left out, URLs without credentials."""
    parts = []
    for f in fields(obj):
        if not f.repr:
            continue
        v = getattr(obj, f.name)
        rule = f.metadata.get("rule")
        if rule is not None and rule.kind == "url":
            v = redact_url(v)
        parts.append(f"{f.name}={v!r}")
    return f"{type(obj).__name__}({', '.join(parts)})"


def check_names(env: Mapping[str, str], prefix: str, known: frozenset[str]) -> None:
    """ConfigError naming every renamed or unknown variable starting with ``prefix``: a typo
    such as RAGCORE_TOPK would otherwise be ignored without a word. ``known``: the variables read."""
    import difflib  # only when a name is wrong: off the cold path

    problems = []
    for var in sorted(k for k in env if k.startswith(prefix) and k not in known):
        if var in RENAMED_VARIABLES:
            problems.append(f"{var} was renamed {RENAMED_VARIABLES[var]}: set that instead")
            continue
        close = difflib.get_close_matches(var, sorted(known), n=1, cutoff=0.8)
        hint = f" (did you mean {close[0]}?)" if close else ""
        problems.append(f"{var} is not a ragcore setting{hint}")
    if problems:
        raise ConfigError("; ".join(problems) + " (docs/13-configuration-reference.md lists every variable)")
