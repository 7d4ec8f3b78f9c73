"""The one settings resolver: what every entry point reads — the CLI (``cli/common.py``), the app
(``ui/state.py``), ``ragcore serve`` and its workers, and ``RagcoreSettings.from_env()`` — layered in one
order, lowest first:

1. the field's default;
2. the app's settings file, ``<data dir>/app_settings.json`` (only the settings the app saves);
3. ``.streamlit/secrets.toml``, the home folder's then the project's: top-level entries named like a
   variable (``OPENAI_API_KEY``, ``RAGCORE_TOP_K``) and the endpoint's ``[openai]``, ``[llm]`` and
   ``[ragcore.llm]`` tables (``secrets_file.py`` reads them);
4. the environment: ``RAGCORE_*``, and ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` for the endpoints;
5. command-line options, then values given in code (``from_env(top_k=3)``).

Why the file sits below secrets.toml and the environment: both are the operator's, fixed when the
process starts, while the file holds what someone saved in the app; the app showed it so before
there was one resolver, and docs/13 said so. The data folder (which locates the file) comes from the
layers above the file, never from the file.

Every value is checked by its field's rule (``rules.check_value``), and an error names where it came
from (``RAGCORE_TOP_K=0``, ``--top-k=0``, ``llm.temperature=5 in …/secrets.toml``). A bad value in a
layer the process was given (environment, secrets.toml, an option, code) stops it with every problem in
one :class:`ConfigError`; a bad entry of the settings file is skipped and reported in
:attr:`ResolvedSettings.problems` (the app shows it, the CLI prints it as a warning), because that file is
written by the app and must not lock anyone out.

This module sits below ``config.py`` (whose ``from_env`` calls it), so it takes the settings class as
an argument instead of importing it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any, Callable, Generic, Mapping, Sequence, TypeVar

from ragcore.settings.llm import LlmSettings
from ragcore.settings.secrets_file import llm_entries, read_toml, secrets_paths
from ragcore.settings.rules import (
    ENV_PREFIX, LLM_ENV_PREFIX, OPENAI_FALLBACKS, OTHER_VARIABLES, ConfigError, Rule, _rules, check_names, check_value,
    chunk_problem, default_data_dir,
)

FILE_NAME = "app_settings.json"

# The layers, lowest first, as resolve() applies them: docs/13's "Which value wins" list is written from
# this (ragcore/settings/reference.py), and tests/unit/settings/test_resolve.py holds resolve() to it.
ORDER: tuple[tuple[str, str], ...] = (
    ("default", "the setting's default (the tables below)"),
    ("file", "the app's settings file, `app_settings.json` in the data folder: what the app's Settings page "
             "saved (the endpoint's URL and model, chunking, the answering and retrieval defaults; never a key)"),
    ("secrets", "a `.streamlit/secrets.toml`, your home folder's, then the project's (the working folder's): "
                "top-level entries named like a variable (`OPENAI_API_KEY = \"sk-…\"`, `RAGCORE_TOP_K = 8`) and the "
                "endpoint's `[openai]`, `[llm]` and `[ragcore.llm]` tables"),
    ("environment", "the environment: `RAGCORE_*` variables, and `OPENAI_API_KEY` / `OPENAI_BASE_URL` for the "
                    "endpoints (below their `RAGCORE_*` variable)"),
    ("option", "a command-line option, such as `--top-k 10`, for that command"),
    ("explicit", "a value given in Python: `RagcoreSettings.from_env(top_k=3)`"),
)


class SettingsFileError(ConfigError):
    """The settings file cannot be read or written."""


S = TypeVar("S")  # the settings class (RagcoreSettings: this module sits below config.py, so it is passed in)


@dataclass(frozen=True)
class ResolvedSettings(Generic[S]):
    """The settings and, per setting (``top_k``, ``llm.model``), where its value came from: "default",
    "file", "secrets (KEY)", "environment (VAR)", "option (--flag)" or "explicit"."""

    settings: S
    path: Path  # the settings file read (or that would be)
    sources: Mapping[str, str] = field(default_factory=dict)
    problems: tuple[str, ...] = ()  # settings-file entries that were skipped, and why

    def source(self, name: str) -> str:
        return self.sources.get(name, "default")


@dataclass(frozen=True)
class _Value:
    raw: Any
    source: str
    label: str | None = None  # what the user wrote (a variable, an option); None: the field's name
    where: str = ""  # " in FILE"


# --------------------------------------------------------------------------- the names


@cache  # the fields do not change: read them once per process (every command resolves settings)
def rules_of(cls: type) -> dict[str, Rule]:
    """Every setting's rule by its catalog name: ``cls``'s fields, then the endpoint's as ``llm.<field>``
    (read-only: the dict is shared)."""
    out = {n: r for n, r in _rules(cls).items()}
    out.update({f"llm.{n}": r for n, r in _rules(LlmSettings).items()})
    return out


@cache
def variables_of(name: str) -> tuple[str, ...]:
    """The variables that set ``name``, strongest first (``llm.api_key``: RAGCORE_LLM_API_KEY, OPENAI_API_KEY)."""
    own = LLM_ENV_PREFIX + name[4:].upper() if name.startswith("llm.") else ENV_PREFIX + name.upper()
    extra = OPENAI_FALLBACKS.get(name)
    return (own, extra) if extra else (own,)


def persisted_names(cls: type) -> tuple[str, ...]:
    """What the app saves in its settings file: the fields marked ``app``, never a secret."""
    return tuple(n for n, r in rules_of(cls).items() if r.app and not r.secret)


def known_variables(cls: type) -> frozenset[str]:
    """Every RAGCORE_* variable ragcore reads (the service's too: the check lets them through)."""
    from ragcore.settings.service import service_variables  # only when a name is wrong: off the cold path

    return frozenset(_own_variables(cls) | OTHER_VARIABLES | service_variables())


@cache
def _own_variables(cls: type) -> frozenset[str]:
    return frozenset(v for n in rules_of(cls) for v in variables_of(n))


def check_variable_names(cls: type, env: Mapping[str, str], prefix: str = ENV_PREFIX) -> None:
    """ConfigError naming every renamed or unknown variable starting with ``prefix`` (RAGCORE_TOPK)."""
    near = _own_variables(cls)
    if any(k.startswith(prefix) and k not in near and k not in OTHER_VARIABLES for k in env):
        check_names(env, prefix, known_variables(cls))


# --------------------------------------------------------------------------- the settings file


def settings_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / FILE_NAME


def read_file(path: Path, names: Sequence[str]) -> dict[str, Any]:
    """The file's values among ``names`` ({} when there is no file); other names are dropped."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise SettingsFileError(f"The settings file {path} cannot be read ({exc}); fix or delete it.") from exc
    values = raw.get("settings") if isinstance(raw, dict) else None
    if not isinstance(values, dict):
        raise SettingsFileError(f"The settings file {path} has no 'settings' object; fix or delete it.")
    return {k: v for k, v in values.items() if k in names}


# --------------------------------------------------------------------------- the layers


def _env_layer(cls: type, env: Mapping[str, str], source: str = "environment", where: str = "") -> dict[str, _Value]:
    """The settings ``env`` sets (empty values are "not set"), each by its strongest variable."""
    out: dict[str, _Value] = {}
    for name in rules_of(cls):
        for var in variables_of(name):
            raw = env.get(var)
            if raw is not None and not (isinstance(raw, str) and raw.strip() == ""):
                out[name] = _Value(raw, f"{source} ({var})", var, where)
                break
    return out


def _secrets_layer(cls: type, files: Sequence[Path], problems: list[str]) -> dict[str, _Value]:
    """secrets.toml's settings, lowest file first (a later file wins): top-level entries named like
    variables, and the endpoint's tables."""
    out: dict[str, _Value] = {}
    for path in files:
        try:
            data = read_toml(path)
        except ConfigError as exc:
            problems.append(str(exc))
            continue
        top = {str(k).upper(): v for k, v in data.items() if not isinstance(v, Mapping)}
        try:
            check_variable_names(cls, top)
        except ConfigError as exc:
            problems.append(f"{exc} in {path}")
        where = f" in {path}"
        out.update({n: v for n, v in _env_layer(cls, top, "secrets", where).items() if not n.startswith("llm.")})
        for name, (raw, key) in llm_entries(data).items():  # the endpoint: its own order of keys and tables
            out[f"llm.{name}"] = _Value(raw, f"secrets ({key})", key, where)
    return out


def _file_layer(cls: type, path: Path, problems: list[str]) -> dict[str, _Value]:
    try:
        values = read_file(path, persisted_names(cls))
    except SettingsFileError as exc:
        problems.append(str(exc))
        return {}
    return {name: _Value(raw, "file") for name, raw in values.items()}


def _given_layer(values: Mapping[str, Any], labels: Mapping[str, str], source: str) -> dict[str, _Value]:
    """Options (``labels``: field -> option, e.g. ``--top-k``) or values given in code."""
    out = {}
    for name, raw in values.items():
        if raw is None:
            continue
        label = labels.get(name)
        out[name] = _Value(raw, f"{source} ({label})" if label else source, label)
    return out


# --------------------------------------------------------------------------- checking and building


def _checked(rules: Mapping[str, Rule], layer: Mapping[str, _Value], problems: list[str]) -> dict[str, Any]:
    """The layer's values checked by their rules; each bad one becomes a problem (and is dropped)."""
    out: dict[str, Any] = {}
    for name, v in layer.items():
        field_name = name[4:] if name.startswith("llm.") else name
        try:
            out[name] = check_value(field_name, rules[name], v.raw, v.label or (name if v.where else None), v.where)
        except ConfigError as exc:
            problems.append(str(exc))
    return out


def _unknown(cls: type, names: Sequence[str]) -> None:
    bad = sorted(n for n in names if n != "llm" and n not in rules_of(cls) and n not in {f.name for f in fields(cls)})
    if bad:
        raise ConfigError(f"unknown setting(s) {', '.join(bad)} for {cls.__name__}")


def _split_llm(overrides: Mapping[str, Any]) -> tuple[dict[str, Any], Any]:
    """Code's overrides without ``llm``, and ``llm`` itself: an LlmSettings replaces the endpoint, a
    mapping of its fields goes on top (as ``llm.<field>`` values)."""
    rest = {k: v for k, v in overrides.items() if k != "llm"}
    llm = overrides.get("llm")
    if isinstance(llm, Mapping):
        unknown = sorted(set(llm) - set(_rules(LlmSettings)))
        if unknown:
            raise ConfigError(f"unknown setting(s) {', '.join(unknown)} for LlmSettings")
        rest.update({f"llm.{k}": v for k, v in llm.items()})
        return rest, None
    if llm is not None and not isinstance(llm, LlmSettings):
        raise ConfigError(f"llm={type(llm).__name__} is not allowed: llm must be an LlmSettings or a mapping")
    return rest, llm


def resolve(
    cls: type[S],
    env: Mapping[str, str] | None = None,
    *,
    flags: Mapping[str, Any] | None = None,
    flag_labels: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
    read_files: bool = True,
    secrets_files: Sequence[str | Path] | None = None,
    settings_file: bool = True,
    extra_checks: Callable[[Mapping[str, Any], Mapping[str, str]], list[str]] | None = None,
) -> ResolvedSettings[S]:
    """``cls`` (RagcoreSettings) from the layers in the module's order.

    ``env``: the environment (default ``os.environ``). ``flags``: command-line values by field, named in
    errors by ``flag_labels`` (``{"top_k": "--top-k"}``). ``overrides``: values given in code, strongest
    (``llm`` may be an LlmSettings or a mapping of its fields). ``read_files``: read secrets.toml and the
    settings file (False: ``env`` and the values given alone). ``secrets_files``: the secrets.toml files to
    read, lowest first (default: the home folder's, then the working directory's); ``settings_file=False``
    skips the settings file (the endpoint-only view of llm_config.py, given its files). ``extra_checks``: the
    caller's own checks of the merged values (with each value's label), reported with the others.
    """
    env = os.environ if env is None else env
    rules = rules_of(cls)
    overrides, llm_object = _split_llm(dict(overrides or {}))
    _unknown(cls, list(overrides))
    hard: list[str] = []  # the process's own inputs: every bad one at once, then stop
    soft: list[str] = []  # the settings file's: skipped and reported
    try:
        check_variable_names(cls, env)
    except ConfigError as exc:
        hard.append(str(exc))
    layers = [_env_layer(cls, env), _given_layer(flags or {}, flag_labels or {}, "option"),
              _given_layer(overrides, {}, "explicit")]
    if read_files:
        files = secrets_paths() if secrets_files is None else [Path(p) for p in secrets_files]
        layers.insert(0, _secrets_layer(cls, files, hard))
    values, winners = _merged(rules, layers, hard)
    data_dir = values.get("data_dir") or default_data_dir()
    path = settings_path(data_dir)
    if read_files and settings_file:
        file_layer = {n: v for n, v in _file_layer(cls, path, soft).items() if n not in winners}
        from_file = _checked(rules, file_layer, soft)
        from_file = _drop_chunk_clash(cls, from_file, values, soft)
        values = {**from_file, **values}
        winners = {**{n: file_layer[n] for n in from_file}, **winners}
    labels = {n: v.label for n, v in winners.items() if v.label}
    problem = chunk_problem(values.get("chunk_size", _default(cls, "chunk_size")),
                            values.get("chunk_overlap", _default(cls, "chunk_overlap")), labels)
    hard += [problem] if problem else []
    hard += extra_checks(values, labels) if extra_checks else []
    if hard:
        raise ConfigError("; ".join(dict.fromkeys(hard)))
    settings = _build(cls, values, llm_object)
    sources = {n: v.source for n, v in winners.items()}
    if llm_object is not None:
        sources.update({f"llm.{n}": "explicit" for n in _rules(LlmSettings)})
    return ResolvedSettings(settings, path, sources, tuple(soft))


def _merged(rules: Mapping[str, Rule], layers: Sequence[Mapping[str, _Value]],
            problems: list[str]) -> tuple[dict[str, Any], dict[str, _Value]]:
    """The layers' checked values, lowest first (a later layer's replaces an earlier one's), and the
    value that won for each setting."""
    values: dict[str, Any] = {}
    winners: dict[str, _Value] = {}
    for layer in layers:
        good = _checked(rules, layer, problems)
        values.update(good)
        winners.update({n: layer[n] for n in good})
    return values, winners


def _default(cls: type, name: str) -> Any:
    return cls.__dataclass_fields__[name].default


def _drop_chunk_clash(cls: type, from_file: dict[str, Any], values: Mapping[str, Any], soft: list[str]) -> dict[str, Any]:
    """The file's chunk size and overlap, unless they clash with each other or with a stronger layer's."""
    size = from_file.get("chunk_size", values.get("chunk_size", _default(cls, "chunk_size")))
    overlap = from_file.get("chunk_overlap", values.get("chunk_overlap", _default(cls, "chunk_overlap")))
    if not ({"chunk_size", "chunk_overlap"} & set(from_file)) or overlap < size:
        return from_file
    soft.append(f"chunk_overlap: chunk_overlap={overlap} is not allowed: chunk_overlap must be less than "
                f"chunk_size ({size}); the file's chunking is ignored")
    return {k: v for k, v in from_file.items() if k not in ("chunk_size", "chunk_overlap")}


def _build(cls: type[S], values: Mapping[str, Any], llm_object: LlmSettings | None) -> S:
    own = {n: v for n, v in values.items() if not n.startswith("llm.")}
    llm = llm_object if llm_object is not None else LlmSettings(**{n[4:]: v for n, v in values.items() if n.startswith("llm.")})
    return cls(llm=llm, **own)
