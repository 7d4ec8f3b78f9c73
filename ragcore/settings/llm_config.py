"""Where the LLM endpoint settings come from: explicit values, the environment, secrets.toml.

Precedence, highest first:

1. explicit values (``None`` means "not given");
2. the environment: ``RAGCORE_LLM_<FIELD>`` (e.g. ``RAGCORE_LLM_MODEL``), then
   ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``;
3. the project's ``.streamlit/secrets.toml`` (under ``root``, default the working directory);
4. the user's ``~/.streamlit/secrets.toml``;
5. the defaults of :class:`~ragcore.settings.config.LlmSettings`.

In a secrets.toml, use the environment names at the top level::

    OPENAI_API_KEY = "sk-..."
    OPENAI_BASE_URL = "http://127.0.0.1:8080/v1"
    RAGCORE_LLM_MODEL = "qwen2.5-7b-instruct"

or field names in an ``[llm]`` (or ``[ragcore.llm]``) table, or ``api_key`` / ``base_url`` /
``model`` in an ``[openai]`` table. :func:`resolve_llm_settings_with_sources` also says where
each value came from (for the app's settings panel); the key's *value* never appears in
those descriptions or in any error.

Every value is checked by the same rules as the rest of the settings
(:func:`ragcore.settings.rules.check_value`): a bad one raises :class:`~ragcore.settings.config.ConfigError`
naming where it came from, e.g. ``RAGCORE_LLM_TEMPERATURE=5 is not allowed: temperature must be
a finite number from 0 to 2`` or ``llm.api='completions' in /p/.streamlit/secrets.toml is not
allowed: …``. An unknown ``RAGCORE_LLM_*`` variable is an error too.
"""

from __future__ import annotations

import os
from dataclasses import fields
from pathlib import Path
from typing import Any, Mapping, Sequence

from ragcore.settings.llm import LlmSettings
from ragcore.settings.rules import LLM_ENV_PREFIX, ConfigError, check_names, check_value

_RULES = {f.name: f.metadata["rule"] for f in fields(LlmSettings)}


def env_name(field: str) -> str:
    return f"{LLM_ENV_PREFIX}{field.upper()}"


def secrets_paths(root: str | Path | None = None) -> list[Path]:
    """The secrets.toml files Streamlit would read, lowest precedence first."""
    base = Path(root) if root is not None else Path.cwd()
    return [Path.home() / ".streamlit" / "secrets.toml", base / ".streamlit" / "secrets.toml"]


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib  # only where a secrets file is read: the settings import stays light

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as err:  # message has line/column, never the contents
        raise ConfigError(f"{path} is not valid TOML: {err}") from None


def _from_secrets(data: Mapping[str, Any]) -> dict[str, tuple[Any, str]]:
    """LlmSettings fields found in one parsed secrets.toml (with the key they came from)."""
    found: dict[str, tuple[Any, str]] = {}
    upper = {str(k).upper(): (k, v) for k, v in data.items() if not isinstance(v, Mapping)}
    for name in ("api_key", "base_url"):
        hit = upper.get(f"OPENAI_{name.upper()}")
        if hit is not None:
            found[name] = (hit[1], hit[0])
    for name in _RULES:
        hit = upper.get(env_name(name))
        if hit is not None:
            found[name] = (hit[1], hit[0])
    openai_tbl = data.get("openai")
    if isinstance(openai_tbl, Mapping):
        for name in ("api_key", "base_url", "model"):
            if name in openai_tbl:
                found[name] = (openai_tbl[name], f"openai.{name}")
    tables: list[tuple[str, Any]] = [("llm", data.get("llm"))]
    rag = data.get("ragcore")
    if isinstance(rag, Mapping):
        tables.append(("ragcore.llm", rag.get("llm")))
    for prefix, tbl in tables:
        if isinstance(tbl, Mapping):
            for name in _RULES:
                if name in tbl:
                    found[name] = (tbl[name], f"{prefix}.{name}")
    return found


def resolve_llm_settings_with_sources(
    explicit: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    root: str | Path | None = None,
    secrets_files: Sequence[str | Path] | None = None,
) -> tuple[LlmSettings, dict[str, str]]:
    """The settings and, per field, where its value came from.

    ``secrets_files`` replaces the default search (``secrets_paths(root)``), lowest
    precedence first; pass ``()`` to read none. Sources read like ``"explicit"``,
    ``"env RAGCORE_LLM_MODEL"``, ``"/p/.streamlit/secrets.toml [llm.model]"`` or
    ``"default"``. Raises one ConfigError listing every bad value and unknown name.
    """
    env = os.environ if env is None else env
    explicit = dict(explicit or {})
    unknown = sorted(set(explicit) - set(_RULES))
    if unknown:
        raise ConfigError(f"unknown LLM setting(s): {', '.join(unknown)}")
    values: dict[str, Any] = {}
    sources: dict[str, str] = {name: "default" for name in _RULES}
    problems = _Problems()  # every bad value of every source in one message, not one per run
    with problems:
        check_names(env, LLM_ENV_PREFIX, frozenset(env_name(n) for n in _RULES))

    files = secrets_paths(root) if secrets_files is None else [Path(p) for p in secrets_files]
    for path in files:  # lowest precedence first: later files win
        found: dict[str, tuple[Any, str]] = {}
        with problems:
            found = _from_secrets(_read_toml(path))
        for name, (raw, key) in found.items():
            with problems:
                values[name] = check_value(name, _RULES[name], raw, key, f" in {path}")
                sources[name] = f"{path} [{key}]"

    env_vars = [(name, var) for name, var in (("api_key", "OPENAI_API_KEY"), ("base_url", "OPENAI_BASE_URL"))]
    env_vars += [(name, env_name(name)) for name in _RULES]  # RAGCORE_LLM_* win over OPENAI_*
    for name, var in env_vars:
        raw = env.get(var)
        if raw is not None and raw.strip() != "":
            with problems:
                values[name] = check_value(name, _RULES[name], raw, var)
                sources[name] = f"env {var}"

    for name, raw in explicit.items():
        if raw is None:
            continue
        with problems:
            values[name] = check_value(name, _RULES[name], raw)
            sources[name] = "explicit"
    problems.raise_any()
    return LlmSettings(**values), sources


class _Problems:
    """Collects the ConfigErrors raised inside ``with problems:`` blocks; raise_any() raises one."""

    def __init__(self) -> None:
        self.messages: list[str] = []

    def __enter__(self) -> "_Problems":
        return self

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: object) -> bool:
        if isinstance(exc, ConfigError):
            self.messages.append(str(exc))
            return True
        return False

    def raise_any(self) -> None:
        if self.messages:
            raise ConfigError("; ".join(dict.fromkeys(self.messages)))


def resolve_llm_settings(
    explicit: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    root: str | Path | None = None,
    secrets_files: Sequence[str | Path] | None = None,
) -> LlmSettings:
    """LlmSettings from explicit values, the environment and secrets.toml (see module doc)."""
    settings, _ = resolve_llm_settings_with_sources(explicit, env=env, root=root, secrets_files=secrets_files)
    return settings
