"""The LLM endpoint's settings alone, as the one resolver (:mod:`ragcore.settings.resolve`) gives them:
explicit values over the environment (``RAGCORE_LLM_<FIELD>``, then ``OPENAI_API_KEY`` /
``OPENAI_BASE_URL``) over ``.streamlit/secrets.toml`` (the project's over the home folder's; the formats
are in :mod:`ragcore.settings.secrets_file`) over the app's settings file over the defaults.

Kept for code that wants the endpoint without the rest; it is a view of :func:`resolve`, not a second
order. Every value is checked by the same rules, and an error names where it came from, e.g.
``llm.api='completions' in /p/.streamlit/secrets.toml is not allowed: …``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ragcore.settings.config import RagcoreSettings
from ragcore.settings.llm import LlmSettings
from ragcore.settings.resolve import resolve
from ragcore.settings.secrets_file import secrets_paths
from ragcore.settings.rules import _rules


def resolve_llm_settings_with_sources(
    explicit: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    root: str | Path | None = None,
    secrets_files: Sequence[str | Path] | None = None,
) -> tuple[LlmSettings, dict[str, str]]:
    """The endpoint's settings and, per field, where its value came from ("default", "file",
    "secrets (openai.model)", "environment (RAGCORE_LLM_MODEL)", "explicit").

    ``secrets_files`` replaces the default search (``secrets_paths(root)``), lowest precedence first, and
    then no settings file is read either: ``()`` reads the environment and ``explicit`` alone.
    """
    files = secrets_paths(root) if secrets_files is None else list(secrets_files)
    r = resolve(RagcoreSettings, env, overrides={"llm": dict(explicit or {})}, secrets_files=files,
                settings_file=secrets_files is None)
    return r.settings.llm, {n: r.source(f"llm.{n}") for n in _rules(LlmSettings)}


def resolve_llm_settings(
    explicit: Mapping[str, Any] | None = None,
    *,
    env: Mapping[str, str] | None = None,
    root: str | Path | None = None,
    secrets_files: Sequence[str | Path] | None = None,
) -> LlmSettings:
    """The endpoint's settings (see :func:`resolve_llm_settings_with_sources`)."""
    settings, _ = resolve_llm_settings_with_sources(explicit, env=env, root=root, secrets_files=secrets_files)
    return settings
