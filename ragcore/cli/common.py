"""What the CLI commands (`ragcore ask`, `eval`, `bench`) share: settings from parsed options,
validated by the same rules as the environment; the usage-error type; and output that is safe
to print on a terminal.

Kept apart from ``ragcore.cli.main`` so that ``eval`` and ``bench`` need not import the CLI that
imports them.
"""

from __future__ import annotations

import argparse
import json
import os
import unicodedata
from dataclasses import fields
from typing import Any, Mapping

from ragcore.settings.config import ENV_PREFIX, ConfigError, RagcoreSettings, check_value, chunk_problem, env_values

# argparse ``dest`` -> the option as the user writes it (for error messages)
OPTIONS = {
    "data_dir": "--data-dir",
    "collection": "--collection",
    "chunk_size": "--chunk-size",
    "chunk_overlap": "--chunk-overlap",
    "embed_model": "--embed-model",
    "retrieval_mode": "--mode",
    "top_k": "--top-k",
    "threshold": "--threshold",
    "fusion": "--fusion",
    "rrf_k": "--rrf-k",
    "candidates": "--candidates",
    "abstain_bar": "--abstain-bar",
    "path_filter": "--path-filter",
}
# options whose value may start with "-" (``--threshold -inf``): argparse would take it for an option
NUMERIC_OPTIONS = ("--top-k", "--threshold", "--rrf-k", "--candidates", "--abstain-bar", "--chunk-size",
                   "--chunk-overlap")


class UsageError(ValueError):
    """A command-line value that cannot be used; printed as one line, exit code 2."""


def settings_from_args(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> RagcoreSettings:
    """RAGCORE_* / OPENAI_* variables and secrets.toml, then the command's options on top.

    Every bad option is reported in one ConfigError naming the option, the value and what
    is allowed (``--top-k=0 is not allowed: top_k must be an integer ≥ 1``)."""
    from ragcore.settings.llm_config import resolve_llm_settings

    rules = {f.name: f.metadata["rule"] for f in fields(RagcoreSettings) if "rule" in f.metadata}
    values: dict[str, Any] = {}
    problems: list[str] = []
    for dest, option in OPTIONS.items():
        raw = getattr(args, dest, None)
        if raw is None:
            continue
        try:
            values[dest] = check_value(dest, rules[dest], raw, option)
        except ConfigError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigError("; ".join(problems))
    # a chunk size/overlap clash names whichever option or variable set each side
    env_set, labels = env_values(RagcoreSettings, os.environ if env is None else env, ENV_PREFIX, skip=("llm",))
    merged = {**env_set, **values}
    labels.update({k: OPTIONS[k] for k in ("chunk_size", "chunk_overlap") if k in values})
    defaults = RagcoreSettings.__dataclass_fields__
    problem = chunk_problem(merged.get("chunk_size", defaults["chunk_size"].default),
                            merged.get("chunk_overlap", defaults["chunk_overlap"].default), labels)
    if problem:
        raise ConfigError(problem)
    return RagcoreSettings.from_env(env, llm=resolve_llm_settings(env=env), **values)


def attach_negative_values(argv: list[str]) -> list[str]:
    """``--threshold -inf`` → ``--threshold=-inf``: argparse reads "-inf" (unlike "-1") as an
    option and fails with "expected one argument"; the value should reach validation instead."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        nxt = argv[i + 1] if i + 1 < len(argv) else None
        if arg in NUMERIC_OPTIONS and nxt is not None and nxt.startswith("-") and not nxt.startswith("--"):
            out.append(f"{arg}={nxt}")
            i += 2
            continue
        out.append(arg)
        i += 1
    return out


# --------------------------------------------------------------------------- terminal output

# bidirectional overrides and isolates can reorder what a terminal shows ("Trojan Source")
_BIDI = {chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x061C)}


def term_safe(text: Any, keep: str = "") -> str:
    """``text`` with control characters (ESC, CR, BEL, C1 …) and bidi overrides shown as
    escapes (``\\x1b``, ``\\u202e``), so a file name or corpus text cannot move the cursor,
    recolour or rewrite the terminal. ``keep`` lists characters to leave alone (``"\\n\\t"``
    for multi-line text)."""
    s = str(text)
    if s.isprintable() and not _BIDI.intersection(s):
        return s
    return "".join(_escape(ch) if ch not in keep and _unsafe(ch) else ch for ch in s)


def _unsafe(ch: str) -> bool:
    return unicodedata.category(ch) == "Cc" or ch in _BIDI or ch in "\u2028\u2029"


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def dump_json(obj: Any, indent: int | None = 2) -> str:
    """JSON for stdout: strictly valid (no NaN/Infinity: ``allow_nan=False``), non-ASCII text
    kept readable, and no raw control character (JSON escapes only those below 0x20)."""
    text = json.dumps(obj, indent=indent, ensure_ascii=False, allow_nan=False)
    return "".join(f"\\u{ord(ch):04x}" if _unsafe(ch) and ch not in "\n" else ch for ch in text)
