"""docs/13's settings tables, written from the catalog (:mod:`ragcore.settings.catalog`).

Each table sits between two markers in docs/13-configuration-reference.md; the prose around them
is written by hand. ``python -m ragcore.settings.reference --write`` rewrites the tables after a
setting changes; ``--check`` (and a unit test) fails when the page and the catalog differ.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from ragcore.settings.catalog import Entry, entries

PAGE = Path(__file__).resolve().parents[2] / "docs" / "13-configuration-reference.md"
# table -> (owner, its first field): a table holds the fields declared from its first to the next table's
GROUPS: dict[str, tuple[str, str]] = {
    "storage": ("settings", "data_dir"),
    "ingestion": ("settings", "chunk_size"),
    "models": ("settings", "embed_model"),
    "retrieval": ("settings", "retrieval_mode"),
    "answering": ("settings", "abstain_bar"),
    "llm": ("llm", "base_url"),
    "service": ("service", "host"),
}
HEADER = "| Setting | Environment variable | Default | Allowed | Meaning |\n| --- | --- | --- | --- | --- |\n"
_BLOCK = re.compile(r"(<!-- settings table: (\w+) .*?-->\n)(.*?)(<!-- end of settings table -->)", re.S)


def group_entries(group: str) -> list[Entry]:
    owner, first = GROUPS[group]
    starts = {f for o, f in GROUPS.values() if o == owner}
    out: list[Entry] = []
    inside = False
    for e in entries():
        if e.owner != owner:
            continue
        if e.field in starts:
            inside = e.field == first
        if inside:
            out.append(e)
    return out


def default_text(e: Entry) -> str:
    if e.rule.shown_default is not None:
        return e.rule.shown_default
    v: Any = e.default
    if v is None:
        return "not set"
    if isinstance(v, bool):
        return f"`{str(v).lower()}`"
    if v == ():
        return "empty"
    return f"`{v}`"


def table(group: str) -> str:
    rows = []
    for e in group_entries(group):
        variables = " or ".join(f"`{v}`" for v in e.variables)
        allowed = e.rule.allowed()
        rows.append(f"| `{e.name}` | {variables} | {default_text(e)} | {allowed} | {e.rule.help} |\n")
    return HEADER + "".join(rows)


def render(page: str) -> str:
    """``page`` with every marked table rewritten from the catalog."""
    return _BLOCK.sub(lambda m: m.group(1) + table(m.group(2)) + m.group(4), page)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ragcore.settings.reference", description=__doc__)
    ap.add_argument("--write", action="store_true", help="rewrite docs/13's tables")
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/13 differs from the catalog")
    args = ap.parse_args(argv)
    page = PAGE.read_text(encoding="utf-8")
    new = render(page)
    if args.write:
        if new != page:
            PAGE.write_text(new, encoding="utf-8")
        print(f"{PAGE.name}: {'rewritten' if new != page else 'up to date'}")
        return 0
    if new != page:
        print(f"{PAGE.name} differs from the settings catalog: run python -m ragcore.settings.reference --write",
              file=sys.stderr)
        return 1
    print(f"{PAGE.name}: up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
