"""Reading ``.streamlit/secrets.toml`` for the settings resolver (:mod:`ragcore.settings.resolve`).

Streamlit reads the home folder's ``~/.streamlit/secrets.toml`` and the project's (the working folder's);
so does ragcore, the project's winning. The endpoint's settings may be written with their variable names at
the top level::

    OPENAI_API_KEY = "sk-..."
    OPENAI_BASE_URL = "http://127.0.0.1:8080/v1"
    RAGCORE_LLM_MODEL = "qwen2.5-7b-instruct"

or by field name in an ``[llm]`` (or ``[ragcore.llm]``) table, or as ``api_key`` / ``base_url`` / ``model``
in an ``[openai]`` table. Other settings are read from top-level entries named like their variable
(``RAGCORE_TOP_K = 8``). A key's *value* never appears in an error.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, Mapping

from ragcore.settings.llm import LlmSettings
from ragcore.settings.rules import LLM_ENV_PREFIX, ConfigError

_LLM_FIELDS = tuple(f.name for f in fields(LlmSettings))


def secrets_paths(root: str | Path | None = None) -> list[Path]:
    """The secrets.toml files Streamlit would read, lowest precedence first."""
    base = Path(root) if root is not None else Path.cwd()
    return [Path.home() / ".streamlit" / "secrets.toml", base / ".streamlit" / "secrets.toml"]


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed file ({} when there is none); ConfigError when it is not TOML (the message has the
    line and column, never the contents)."""
    import tomllib  # only where a secrets file is read: the settings import stays light

    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path} is not valid TOML: {err}") from None


def llm_entries(data: Mapping[str, Any]) -> dict[str, tuple[Any, str]]:
    """LlmSettings fields found in one parsed secrets.toml, with the key each came from; within a file,
    OPENAI_* < RAGCORE_LLM_* < ``[openai]`` < ``[llm]`` < ``[ragcore.llm]``."""
    found: dict[str, tuple[Any, str]] = {}
    upper = {str(k).upper(): (k, v) for k, v in data.items() if not isinstance(v, Mapping)}
    for name in ("api_key", "base_url"):
        hit = upper.get(f"OPENAI_{name.upper()}")
        if hit is not None:
            found[name] = (hit[1], hit[0])
    for name in _LLM_FIELDS:
        hit = upper.get(f"{LLM_ENV_PREFIX}{name.upper()}")
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
            for name in _LLM_FIELDS:
                if name in tbl:
                    found[name] = (tbl[name], f"{prefix}.{name}")
    return found
