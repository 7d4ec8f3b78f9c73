"""Settings the app keeps across reloads and restarts: ``<data dir>/app_settings.json``.

The file is one layer of the one resolver (:mod:`ragcore.settings.resolve`, which reads it for the
app, the CLI, ``ragcore serve`` and ``RagcoreSettings.from_env()`` alike): above the defaults, below
``.streamlit/secrets.toml``, the environment and command-line options. This module writes it. Secrets
(API keys) are never written to the file: they come from the environment or from secrets.toml.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from ragcore.settings.catalog import persisted, secret_names
from ragcore.settings.config import RagcoreSettings, default_data_dir
from ragcore.settings.redact import redact_url
from ragcore.settings.resolve import FILE_NAME, ResolvedSettings, SettingsFileError, resolve, settings_path
from ragcore.settings.resolve import read_file as _read_file

FORMAT = 1

# what the app may persist (the catalog's ``app`` settings); dotted names are LlmSettings fields. No key,
# no data dir, no URL of a Qdrant server (those belong to the process, set when it starts).
PERSISTED: tuple[str, ...] = persisted()
# what the app must never write (the catalog's secret settings, by the names the file would use)
SECRET_NAMES: tuple[str, ...] = secret_names()

LoadedSettings = ResolvedSettings  # the name the app's modules know


def read_file(path: Path) -> dict[str, Any]:
    """The file's values ({} when there is no file); names the app does not save are dropped."""
    return _read_file(path, PERSISTED)


def load_app_settings(
    data_dir: str | Path | None = None, *, env: Mapping[str, str] | None = None, secrets_toml: bool = False,
) -> ResolvedSettings[RagcoreSettings]:
    """The resolver's settings for the app's data folder (``data_dir``, else the layers' own). Without
    ``secrets_toml`` no secrets.toml is read (the environment ``env`` and the file alone)."""
    overrides = {} if data_dir is None else {"data_dir": Path(data_dir)}
    return resolve(RagcoreSettings, env, overrides=overrides, secrets_files=None if secrets_toml else ())


def value_of(settings: RagcoreSettings, name: str) -> Any:
    obj: Any = settings
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def with_values(settings: RagcoreSettings, values: Mapping[str, Any]) -> RagcoreSettings:
    """``settings`` with ``values`` by their saved names (``top_k``, ``llm.model``), checked by the rules."""
    llm = {k[4:]: v for k, v in values.items() if k.startswith("llm.")}
    own = {k: v for k, v in values.items() if not k.startswith("llm.")}
    return settings.with_(**own, **({"llm": replace(settings.llm, **llm)} if llm else {}))


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
    "read_file", "save_app_settings", "settings_path", "value_of", "with_values",
]
