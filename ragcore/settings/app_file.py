"""Settings the app keeps across reloads and restarts: ``<data dir>/app_settings.json``.

Precedence, lowest first: the built-in default, the settings file, the environment
(``RAGCORE_*``, ``OPENAI_*``) — a variable set when the app starts is the operator's choice
and wins over what was saved in the app. Secrets (API keys) are never written to the file:
they come from the environment or from values the caller reads out of a secrets store (the
app passes ``.streamlit/secrets.toml``'s entries as ``secrets``, with the environment's names).

Every value carries where it came from (:class:`LoadedSettings.sources`), so the app can show
"default", "file" or "environment (RAGCORE_TOP_K)" next to it.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from ragcore.settings.catalog import persisted
from ragcore.settings.config import LLM_ENV_PREFIX, ENV_PREFIX, ConfigError, LlmSettings, RagcoreSettings, default_data_dir, env_values
from ragcore.settings.redact import redact_url

FILE_NAME = "app_settings.json"
FORMAT = 1

# what the app may persist (the catalog's ``app`` settings); dotted names are LlmSettings fields. No key,
# no data dir, no URL of a Qdrant server (those belong to the process, set when it starts).
PERSISTED: tuple[str, ...] = persisted()
SECRET_NAMES = ("llm.api_key", "qdrant_api_key")
# the variables a secrets store may provide, by setting
SECRET_VARIABLES = {"llm.api_key": ("RAGCORE_LLM_API_KEY", "OPENAI_API_KEY"), "qdrant_api_key": ("RAGCORE_QDRANT_API_KEY",)}


class SettingsFileError(ConfigError):
    """The settings file cannot be read or written."""


@dataclass(frozen=True)
class LoadedSettings:
    settings: RagcoreSettings
    path: Path
    sources: Mapping[str, str] = field(default_factory=dict)  # name -> "default" | "file" | "environment (VAR)" | "secrets (VAR)"
    problems: tuple[str, ...] = ()  # file entries that were ignored, and why

    def source(self, name: str) -> str:
        return self.sources.get(name, "default")


def settings_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / FILE_NAME


def read_file(path: Path) -> dict[str, Any]:
    """The file's values ({} when there is no file); unknown names are dropped."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise SettingsFileError(f"The settings file {path} cannot be read ({exc}); fix or delete it.") from exc
    values = raw.get("settings") if isinstance(raw, dict) else None
    if not isinstance(values, dict):
        raise SettingsFileError(f"The settings file {path} has no 'settings' object; fix or delete it.")
    return {k: v for k, v in values.items() if k in PERSISTED}


def _env_sources(env: Mapping[str, str], secret_vars: set[str]) -> dict[str, str]:
    """Which settings the environment (or the secrets store) sets, and by which variable."""
    _, labels = env_values(RagcoreSettings, env, ENV_PREFIX, skip=("llm",))
    _, llm_labels = env_values(LlmSettings, env, LLM_ENV_PREFIX)
    out = {k: v for k, v in labels.items()}
    out.update({f"llm.{k}": v for k, v in llm_labels.items()})
    for name, var in (("llm.api_key", "OPENAI_API_KEY"), ("llm.base_url", "OPENAI_BASE_URL")):
        if name not in out and env.get(var):
            out[name] = var
    return {k: (f"secrets ({v})" if v in secret_vars else f"environment ({v})") for k, v in out.items()}


def _table_sources(env: Mapping[str, str], known: Mapping[str, str]) -> dict[str, str]:
    """The endpoint settings a secrets.toml table sets (the environment's are already in ``known``)."""
    from ragcore.settings.llm_config import resolve_llm_settings_with_sources

    _, where = resolve_llm_settings_with_sources(env=env)
    out = {}
    for name, src in where.items():
        key = src.rsplit("[", 1)[-1].rstrip("]") if src.endswith("]") else None
        if key and f"llm.{name}" not in known:
            out[f"llm.{name}"] = f"secrets ({key})"
    return out


def _apply(base: RagcoreSettings, name: str, value: Any) -> RagcoreSettings:
    if name.startswith("llm."):
        return base.with_(llm=replace(base.llm, **{name[4:]: value}))
    return base.with_(**{name: value})


def load_app_settings(
    data_dir: str | Path | None = None, *, env: Mapping[str, str] | None = None, secrets: Mapping[str, str] | None = None,
    secrets_toml: bool = False,
) -> LoadedSettings:
    """Defaults, then the file, then the environment (secrets fill in what the environment lacks).
    ``secrets_toml``: also the endpoint's tables of .streamlit/secrets.toml (``[openai]``, ``[llm]``),
    read as the CLI, the service and ``RagcoreSettings.from_env()`` read them (llm_config.py)."""
    env = dict(os.environ if env is None else env)
    secret_env = {k: str(v) for k, v in (secrets or {}).items() if k not in env and str(v).strip()}
    merged = {**secret_env, **env}
    from_env = RagcoreSettings.from_env(merged, secrets=secrets_toml)
    if data_dir is not None:
        from_env = from_env.with_(data_dir=Path(data_dir))
    path = settings_path(from_env.data_dir if data_dir is None else data_dir)
    env_src = _env_sources(merged, set(secret_env))
    if secrets_toml:  # a table's values: "secrets (openai.model)", and they win over the file like the others
        env_src.update(_table_sources(merged, env_src))
    sources: dict[str, str] = dict(env_src)
    problems: list[str] = []
    s = from_env
    for name, value in read_file(path).items():
        if name in env_src:
            continue  # the environment wins
        try:
            s = _apply(s, name, value)
        except (ConfigError, TypeError, ValueError) as exc:
            problems.append(f"{name}: {exc}")
            continue
        sources[name] = "file"
    return LoadedSettings(settings=s, path=path, sources=sources, problems=tuple(problems))


def value_of(settings: RagcoreSettings, name: str) -> Any:
    obj: Any = settings
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def save_app_settings(data_dir: str | Path, changes: Mapping[str, Any]) -> Path:
    """Merge ``changes`` (persisted names only; ``None`` removes an entry) into the file, atomically.

    A secret is refused outright: the app must never write a key in plain text.
    """
    bad = [k for k in changes if k in SECRET_NAMES]
    if bad:
        raise SettingsFileError(f"{', '.join(bad)} is a secret and is never written to the settings file.")
    unknown = [k for k in changes if k not in PERSISTED]
    if unknown:
        raise SettingsFileError(f"{', '.join(unknown)} cannot be saved in the settings file.")
    path = settings_path(data_dir)
    values = read_file(path)
    for k, v in changes.items():
        if v is None:
            values.pop(k, None)
        elif isinstance(v, str) and k.endswith("url"):
            values[k] = redact_url(v)  # user:password@ in a URL is a secret too: never written
        else:
            values[k] = list(v) if isinstance(v, tuple) else v
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".app_settings-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"format": FORMAT, "settings": dict(sorted(values.items()))}, fh, indent=2, allow_nan=False)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def changed_values(old: RagcoreSettings, new: RagcoreSettings) -> dict[str, Any]:
    """The persisted settings that differ between ``old`` and ``new`` (to save what the user changed)."""
    return {k: value_of(new, k) for k in PERSISTED if value_of(old, k) != value_of(new, k)}


def defaults() -> RagcoreSettings:
    """The built-in defaults (no environment, no file)."""
    return RagcoreSettings.from_env({}, data_dir=default_data_dir())


__all__ = [
    "FILE_NAME", "PERSISTED", "LoadedSettings", "SettingsFileError", "changed_values", "load_app_settings",
    "read_file", "save_app_settings", "settings_path", "value_of",
]
