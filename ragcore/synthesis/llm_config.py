"""Where the LLM endpoint settings come from: explicit values, the environment, secrets.toml.

Precedence, highest first:

1. explicit values (``None`` means "not given");
2. the environment: ``RAGCORE_LLM_<FIELD>`` (e.g. ``RAGCORE_LLM_MODEL``), then
   ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``;
3. the project's ``.streamlit/secrets.toml`` (under ``root``, default the working directory);
4. the user's ``~/.streamlit/secrets.toml``;
5. the defaults of :class:`~ragcore.config.LlmSettings`.

In a secrets.toml, use the environment names at the top level::

    OPENAI_API_KEY = "sk-..."
    OPENAI_BASE_URL = "http://127.0.0.1:8080/v1"
    RAGCORE_LLM_MODEL = "qwen2.5-7b-instruct"

or field names in an ``[llm]`` (or ``[ragcore.llm]``) table, or ``api_key`` / ``base_url`` /
``model`` in an ``[openai]`` table. :func:`resolve_llm_settings_with_sources` also says where
each value came from (for the app's settings panel); the key's *value* never appears in
those descriptions or in any error.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import fields
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..config import LlmSettings

_FIELDS = {f.name: f for f in fields(LlmSettings)}
_SECRET_FIELDS = {"api_key"}
_CHOICES = {"api": ("chat", "responses"), "unsupported_policy": ("annotate", "extractive")}


def env_name(field: str) -> str:
    return f"RAGCORE_LLM_{field.upper()}"


def secrets_paths(root: str | Path | None = None) -> list[Path]:
    """The secrets.toml files Streamlit would read, lowest precedence first."""
    base = Path(root) if root is not None else Path.cwd()
    return [Path.home() / ".streamlit" / "secrets.toml", base / ".streamlit" / "secrets.toml"]


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as err:  # message has line/column, never the contents
        raise ValueError(f"{path} is not valid TOML: {err}") from None


def _from_secrets(data: Mapping[str, Any]) -> dict[str, Any]:
    """LlmSettings fields found in one parsed secrets.toml (with the key they came from)."""
    found: dict[str, tuple[Any, str]] = {}
    upper = {str(k).upper(): (k, v) for k, v in data.items() if not isinstance(v, Mapping)}
    for name in ("api_key", "base_url"):
        hit = upper.get(f"OPENAI_{name.upper()}")
        if hit is not None:
            found[name] = (hit[1], hit[0])
    for name in _FIELDS:
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
            for name in _FIELDS:
                if name in tbl:
                    found[name] = (tbl[name], f"{prefix}.{name}")
    return found


def _coerce(name: str, value: Any, source: str) -> Any:
    """A value of the field's type; ValueError naming the source (never a secret's value)."""
    shown = "the value" if name in _SECRET_FIELDS else repr(value)
    if isinstance(value, str):
        value = value.strip()
    if name in ("base_url", "api_key", "model"):
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise ValueError(f"{name} from {source} must be a string")
        if name == "base_url" and not value.lower().startswith(("http://", "https://")):
            raise ValueError(f"base_url from {source} must start with http:// or https://, not {value!r}")
        return value
    if name in _CHOICES:
        v = str(value).lower()
        if v not in _CHOICES[name]:
            options = " or ".join(repr(c) for c in _CHOICES[name])
            raise ValueError(f"{name} from {source} must be {options}, not {shown}")
        return v
    try:
        if name in ("temperature", "timeout_s"):
            out: Any = float(value)
        else:
            if isinstance(value, float) and not value.is_integer():
                raise ValueError
            out = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} from {source} must be a number, not {shown}") from None
    if name == "temperature" and not 0.0 <= out <= 2.0:
        raise ValueError(f"temperature from {source} must be between 0 and 2, not {out}")
    if name in ("timeout_s", "max_output_tokens", "context_window") and out <= 0:
        raise ValueError(f"{name} from {source} must be positive, not {out}")
    if name == "max_retries" and out < 0:
        raise ValueError(f"max_retries from {source} must be 0 or more, not {out}")
    return out


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
    ``"default"``.
    """
    env = os.environ if env is None else env
    explicit = dict(explicit or {})
    unknown = sorted(set(explicit) - set(_FIELDS))
    if unknown:
        raise ValueError(f"unknown LLM setting(s): {', '.join(unknown)}")

    values: dict[str, Any] = {}
    sources: dict[str, str] = {name: "default" for name in _FIELDS}

    files = secrets_paths(root) if secrets_files is None else [Path(p) for p in secrets_files]
    for path in files:  # lowest precedence first: later files win
        for name, (raw, key) in _from_secrets(_read_toml(path)).items():
            src = f"{path} [{key}]"
            values[name] = _coerce(name, raw, src)
            sources[name] = src

    for name, var in (("api_key", "OPENAI_API_KEY"), ("base_url", "OPENAI_BASE_URL")):
        raw = env.get(var)
        if raw:
            values[name] = _coerce(name, raw, f"env {var}")
            sources[name] = f"env {var}"
    for name in _FIELDS:
        raw = env.get(env_name(name))
        if raw is not None and raw != "":
            values[name] = _coerce(name, raw, f"env {env_name(name)}")
            sources[name] = f"env {env_name(name)}"

    for name, raw in explicit.items():
        if raw is None:
            continue
        values[name] = _coerce(name, raw, "explicit settings")
        sources[name] = "explicit"

    return LlmSettings(**values), sources


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
