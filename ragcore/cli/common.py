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
import stat
import sys
import unicodedata
from typing import Any, Mapping

from ragcore.settings.catalog import add_options, numeric_options, options  # noqa: F401  (add_options: for the commands)
from ragcore.settings.config import RagcoreSettings
from ragcore.settings.resolve import resolve

# argparse ``dest`` -> the option as the user writes it (for error messages), and the options whose
# value may start with "-" (``--threshold -inf``: argparse would take it for an option): from the catalog
OPTIONS = options()
NUMERIC_OPTIONS = numeric_options()


class UsageError(ValueError):
    """A command-line value that cannot be used; printed as one line, exit code 2."""


def settings_from_args(args: argparse.Namespace, env: Mapping[str, str] | None = None) -> RagcoreSettings:
    """The one resolver's settings (ragcore/settings/resolve.py) with the command's options on top.

    Every bad option, variable and LLM setting is reported in one ConfigError naming each
    option or variable, the value and what is allowed (``--top-k=0 is not allowed: top_k must
    be an integer ≥ 1; RAGCORE_LLM_TEMPERATURE=5 is not allowed: …``). An entry of the app's settings
    file that cannot be used is skipped with a warning on stderr."""
    flags = {dest: getattr(args, dest, None) for dest in OPTIONS}
    resolved = resolve(RagcoreSettings, env, flags=flags, flag_labels=OPTIONS, extra_checks=_command_problems)
    for problem in resolved.problems:
        print(f"warning: ignored in the settings file: {term_safe(problem)}", file=sys.stderr)
    return resolved.settings


def _command_problems(values: Mapping[str, Any], labels: Mapping[str, str]) -> list[str]:
    """What a command checks before anything opens: the collection's name and the data folder."""
    problems = [_name_problem(values.get("collection"), labels.get("collection", "collection")),
                _data_dir_problem(values.get("data_dir"), labels.get("data_dir", "RAGCORE_DATA_DIR"))]
    return [p for p in problems if p]


def _name_problem(name: Any, label: str) -> str | None:
    """The store's rule for collection names (storage/names.py), checked before anything opens."""
    from ragcore.storage.names import collection_name_problem

    return None if name is None else collection_name_problem(str(name), term_safe(label))


def _data_dir_problem(folder: Any, label: str) -> str | None:
    """A data folder that is a file (or something else that is not a folder) fails every command
    later with NotADirectoryError, and `serve` started and answered 500: said here, by its name."""
    if folder is None or not os.path.exists(folder) or os.path.isdir(folder):
        return None
    return (f"{term_safe(label)}={term_safe(str(folder))} is not a folder: the data folder holds the collections "
            "(point it at a folder, or at a path that does not exist yet)")


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


# --------------------------------------------------------------------------- files named on the command line

# a selection is a passage to answer from: a megabyte is a book's worth of text
MAX_SELECTION_FILE_BYTES = 1 << 20
# kernel and device file systems: their "files" are endless (/dev/zero), or hold the process's
# secrets (/proc/self/environ), and report a size of 0 whatever they hold
_PSEUDO_ROOTS = ("/proc", "/sys", "/dev")


def read_regular_file(path: str, shown: str, limit: int = MAX_SELECTION_FILE_BYTES) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes outside /proc,
    /sys and /dev; UsageError (starting with ``shown``) otherwise. Opened without blocking, so a
    FIFO cannot hang the command, and read no further than the limit."""
    real = os.path.realpath(path)
    if any(real == root or real.startswith(root + "/") for root in _PSEUDO_ROOTS):
        raise UsageError(f"{shown}: {term_safe(path)!r} is a system file ({term_safe(real)}), not a document; "
                         "give a regular text file")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except FileNotFoundError:
        raise UsageError(f"{shown}: no such file {term_safe(path)!r}") from None
    except IsADirectoryError:
        raise UsageError(f"{shown}: {term_safe(path)!r} is a folder, not a file") from None
    except OSError as exc:
        raise UsageError(f"{shown}: cannot read {term_safe(path)!r} ({exc.strerror or type(exc).__name__})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        what = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file (a device, FIFO or socket)"
        raise UsageError(f"{shown}: {term_safe(path)!r} is {what}; give a regular text file")
    with os.fdopen(fd, "rb") as fh:
        data = fh.read(limit + 1) if st.st_size <= limit else b""
    if st.st_size > limit or len(data) > limit:
        raise UsageError(f"{shown}: {term_safe(path)!r} is larger than {limit // 1024} KB, the most a selection "
                         "may read; give a line range of a smaller file, or --selection with the passage")
    return data


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
