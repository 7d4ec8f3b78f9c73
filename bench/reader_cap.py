"""Which units the 4-sentence limit keeps, question by question on every labelled set (`python -m bench.reader_cap`).

Since 6b4ec7e the composer's ``_choose`` takes units best score first while sentences are left
(``cap.least_sentences``: a unit with a list or a code block costs two or more). Round 2's answers
that quoted the answering sentence after their fourth lost it. Each variant here lets a unit of one
sentence go ahead of the units that bring several and outscore it by less than an edge (a bonus on
its score for the order only; its score is unchanged), and takes the answer so chosen when a
condition holds. The composer's own ``_choose`` does the choosing, on the order a variant gives it
(the best unit of all stays first, so the keep-margin and the page rule read the same best score);
nothing is fitted, so no set is left out. Counted as ``reader_rules.py`` counts (answers quoting an
answering unit, citation precision three ways, unanswerable questions abstained).

Variants: ``lead kept``: the unit the by-score choice leads with stays its first pick (the others
reordered); ``lead may change``: all units after the best of all reordered, so when the best cannot
be quoted (it leans on a sentence the chunk lacks) a single sentence may lead, from another page.
``same units``: the reordered choice is taken only when it quotes no more units than the by-score one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from bench.reader_data import DEFAULT_CACHE, DictEncoder, load_dump
from bench.reader_rules import SETS, _relevant, one, summary
from bench.reader_train import prepare
from ragcore.synthesis.extractive import cap
from ragcore.synthesis.extractive.composer import ExtractiveComposer
from ragcore.synthesis.extractive.units import Picked


@dataclass(frozen=True)
class CapVariant:
    name: str
    edge: float = 0.0  # 0: the composer as shipped
    keep_lead: bool = True
    same_units: bool = False


CAP_VARIANTS = (
    CapVariant("shipped (best score first)"),
    *(CapVariant(f"singles within {e}, lead kept", e) for e in (0.02, 0.05, 0.08)),
    CapVariant("singles within 0.05, lead kept, same units", 0.05, same_units=True),
    *(CapVariant(f"singles within {e}, lead may change, same units", e, keep_lead=False, same_units=True) for e in (0.02, 0.05, 0.08)),
)


def _reordered(ranked: Sequence[Picked], lead: Picked | None, edge: float) -> list[Picked]:
    """The best unit, the lead (when another), then the rest with single sentences ``edge`` ahead."""
    head = [ranked[0], *([lead] if lead is not None and lead is not ranked[0] else [])]
    rest = [p for p in ranked if not any(p is h for h in head)]
    bonus = lambda p: edge if cap.least_sentences(p.unit) == 1 else 0.0  # noqa: E731
    return [*head, *sorted(rest, key=lambda p: -(p.score + bonus(p)))]


_SHIPPED_CHOOSE = ExtractiveComposer._choose  # taken once: a variant wraps this, never another variant


def choose_with(v: CapVariant) -> Callable[..., list[Picked]]:
    """``ExtractiveComposer._choose`` under variant ``v`` (the shipped one when ``edge`` is 0)."""
    shipped = _SHIPPED_CHOOSE

    def _choose(self: ExtractiveComposer, ranked: Sequence[Picked], *args: Any, **kw: Any) -> list[Picked]:
        chosen = shipped(self, ranked, *args, **kw)
        if not v.edge or not ranked:
            return chosen
        lead = next((p for p in ranked if any(p is c for c in chosen)), None) if v.keep_lead else None
        alt = shipped(self, _reordered(ranked, lead, v.edge), *args, **kw)
        return chosen if v.same_units and len(alt) > len(chosen) else alt

    return _choose


def run(sets: Sequence[str], enc: Any) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Each set's questions composed under every variant (``reader_rules.one`` counts them)."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = {s: {} for s in sets}
    try:
        for s in sets:
            dump = load_dump(s, DEFAULT_CACHE)
            qs, denc, rel = prepare(s, dump, enc), DictEncoder(dump["vectors"], enc), _relevant(s)
            for v in CAP_VARIANTS:
                ExtractiveComposer._choose = choose_with(v)  # type: ignore[method-assign]
                c = ExtractiveComposer(denc, reader=None)
                out[s][v.name] = [{**one(q, c, denc, rel.get(q.record.id, ())), "answerable": q.record.answerable}
                                  for q in qs]
    finally:
        ExtractiveComposer._choose = _SHIPPED_CHOOSE  # type: ignore[method-assign]
    return out


def table(allrows: dict[str, dict[str, list[dict[str, Any]]]]) -> str:
    """Per variant and set: answers quoting an answering unit; citation precision (chunk / page /
    reference page, %); unanswerable questions abstained; answers whose units changed."""
    sets = list(allrows)
    base = CAP_VARIANTS[0].name
    lines = ["| variant | " + " | ".join(sets) + " | sum |", "|" + "---|" * (len(sets) + 2)]
    for v in CAP_VARIANTS:
        cells, total = [], 0
        for s in sets:
            rows, m = allrows[s][v.name], summary(allrows[s][v.name])
            total += m["hit"]
            changed = sum(a != b for a, b in zip(rows, allrows[s][base]))
            pct = "/".join("—" if m[k] is None else f"{100 * m[k]:.1f}" for k in ("cite_chunk", "cite_page", "cite_ref"))
            over = f"; **{m['over_limit']} over 4**" if m["over_limit"] else ""
            cells.append(f"{m['hit']}; {pct}; {m['abstained_unanswerable']}/{m['unanswerable']}; {changed}{over}")
        lines.append(f"| {v.name} | " + " | ".join(cells) + f" | {total} |")
    return "\n".join(lines)


def changes(allrows: dict[str, dict[str, list[dict[str, Any]]]]) -> str:
    """The questions whose answer gained or lost the answering unit, per variant."""
    base = CAP_VARIANTS[0].name
    out = []
    for v in CAP_VARIANTS[1:]:
        moved = [f"{r['id']} {'+' if r.get('hit') else '-'}" for s in allrows
                 for r, b in zip(allrows[s][v.name], allrows[s][base]) if bool(r.get("hit")) != bool(b.get("hit"))]
        out.append(f"- {v.name}: {', '.join(moved) or 'none'}")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    from ragcore.encoders.minilm import OnnxMiniLM

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sets", nargs="*", default=list(SETS))
    ap.add_argument("--out", type=Path, default=Path("/tmp/reader_cap.json"))
    args = ap.parse_args(argv)
    allrows = run(args.sets, OnnxMiniLM())
    args.out.write_text(json.dumps(allrows), encoding="utf-8")
    print(table(allrows))
    print()
    print(changes(allrows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
