"""docs/13's settings tables, written from the catalog (:mod:`ragcore.settings.catalog`).

Each table (and the list of the layers a value may come from, ``resolve.ORDER``) sits between two markers in docs/13-configuration-reference.md; the prose around them
is written by hand. ``python -m ragcore.settings.reference --write`` rewrites the tables after a
setting changes; ``--check`` (and a unit test) fails when the page and the catalog differ.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from ragcore.settings.catalog import Entry, group_entries, owned
from ragcore.settings.resolve import ORDER

PAGE = Path(__file__).resolve().parents[2] / "docs" / "13-configuration-reference.md"
HEADER = "| Setting | Environment variable | Default | Allowed | Meaning |\n| --- | --- | --- | --- | --- |\n"
_BLOCK = re.compile(r"(<!-- settings table: (\w+) .*?-->\n)(.*?)(<!-- end of settings table -->)", re.S)


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


_METAVAR = {"int": "N", "float": "X", "path": "PATH"}


def options_table() -> str:
    """docs/13's table of the settings' command-line options: the catalog's ``flag`` and ``commands``."""
    rows = []
    for e in owned("settings"):
        if not (e.rule.flag and e.rule.commands):
            continue
        # a choice's values, with the bar escaped: a "|" would end the table's cell
        value = "\\|".join(e.rule.choices) if e.rule.kind == "choice" else _METAVAR.get(e.rule.kind, "VALUE")
        commands = ", ".join(f"`ragcore {c}`" for c in e.rule.commands)
        rows.append(f"| `{e.rule.flag} {value}` | `{e.name}` | {commands} | {e.rule.allowed()} |\n")
    return "| Option | Setting | Commands | Allowed |\n| --- | --- | --- | --- |\n" + "".join(rows)


def order() -> str:
    """docs/13's "Which value wins" list, from the resolver's own ORDER."""
    return "".join(f"{i}. {text[0].upper()}{text[1:]}.\n" for i, (_, text) in enumerate(ORDER, 1))


def render(page: str) -> str:
    """``page`` with every marked table rewritten from the catalog."""
    special = {"order": order, "options": options_table}
    return _BLOCK.sub(lambda m: m.group(1) + special.get(m.group(2), lambda: table(m.group(2)))() + m.group(4), page)


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
