"""The documented sentence limit of an extractive answer (docs/07: at most ``max_answer_sentences``,
default 4), counted the way the reader sees the answer.

A sentence is what carries its own ``[n]`` marker (``composer.render``): each prose sentence, each
sentence of a list item, and a code block or a table as one. A unit can hold more than one: a
definition quoted from its term on, the list a sentence introduces, an intro with its code. Counting
units instead let answers run to 7, 9 and 10 sentences (issue 42). So the composer chooses units by
the sentences they bring (``sentences_of``), a list it brings is cut to the items that name the
question's words when the whole list does not fit (as a table keeps its best rows), and ``fit``
makes the composed answer hold the limit whatever chose its units, the unit that answers first.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Sequence

from ragcore.textutil import content_terms, sentence_spans
from ragcore.synthesis.extractive.units import Picked, Unit

LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def list_items(text: str) -> list[tuple[str, str]]:
    """A list block's items as (bullet, text after it): each bullet line starts one, its further
    lines are its own. Each item's sentences carry a marker of their own in the answer."""
    items: list[list[str]] = []
    for line in text.split("\n"):
        if LIST_ITEM.match(line) or not items:
            items.append([line])
        else:
            items[-1].append(line)
    out = []
    for lines in items:
        item = "\n".join(lines)
        m = LIST_ITEM.match(item)
        out.append((item[: m.end()], item[m.end() :]) if m else ("", item))
    return out


def _list_sentences(text: str) -> int:
    return sum(len(sentence_spans(body)) for _, body in list_items(text))


def _prose_sentences(unit: Unit) -> int:
    if not unit.sentence:
        return 0
    body = unit.sentence[unit.term :].lstrip() if unit.term else unit.sentence
    return max(1, len(sentence_spans(body)))


def sentences_of(unit: Unit | None) -> int:
    """How many sentences quoting ``unit`` puts in the answer."""
    if unit is None:
        return 1
    block = unit.block
    extra = 0 if block is None else _list_sentences(block.text) if block.kind == "list" else 1
    return _prose_sentences(unit) + extra


def least_sentences(unit: Unit | None) -> int:
    """The fewest sentences ``unit`` can be quoted with: a list it brings can be cut to its shortest item."""
    if unit is not None and unit.block is not None and unit.block.kind == "list" and unit.sentence:
        return _prose_sentences(unit) + min(_list_sentences(g) for g in _item_groups(unit.block.text))
    return sentences_of(unit)


def _item_groups(text: str) -> list[str]:
    """A list's top-level items, each with its further lines and nested items."""
    lines = text.split("\n")
    tops = [i for i, ln in enumerate(lines) if LIST_ITEM.match(ln)]
    indent = min((len(lines[i]) - len(lines[i].lstrip()) for i in tops), default=0)
    starts = [i for i in tops if len(lines[i]) - len(lines[i].lstrip()) == indent] or [0]
    starts[0] = 0
    return ["\n".join(lines[a:b]) for a, b in zip(starts, [*starts[1:], len(lines)])]


def trimmed_list(unit: Unit, q_terms: set[str], room: int) -> Unit:
    """``unit`` with the list it brings cut to ``room`` sentences: the top-level items (with their
    nested ones) that share most of the question's words, the first ones on a tie, in reading
    order; at least one."""
    groups = _item_groups(unit.block.text)
    ranked = sorted(range(len(groups)), key=lambda i: (-len(q_terms & content_terms(groups[i])), i))
    kept: list[int] = []
    used = 0
    for i in ranked:
        cost = _list_sentences(groups[i])
        if used + cost > room and (kept or cost > min(map(_list_sentences, groups))):
            continue  # no room; the first item kept is one of the shortest when none fits
        kept.append(i)
        used += cost
    text = "\n".join(groups[i] for i in sorted(kept))
    return replace(unit, block=replace(unit.block, text=text))


def fit(ordered: Sequence[Picked], limit: int, q_terms: set[str], leans_on: Callable[[Picked], Picked | None]) -> list[Picked]:
    """``ordered`` (the answer's units, its lead first) within ``limit`` sentences. The lead takes
    its sentences first, then the others best first, each with the units it leans on
    (``leans_on(p)``: the unit ``p`` is quoted after, or None); a list a unit brings is cut to the
    room left, and a unit that does not fit even so is left out. Reading order is kept."""
    out = list(ordered)
    if sum(sentences_of(p.unit) for p in out) <= limit:
        return out
    by_key = {_key(p): p for p in out}
    parent = {_key(p): _key(q) for p in out if (q := leans_on(p)) is not None and _key(q) in by_key}
    kept: dict[tuple[int, int, int], Picked] = {}
    room = limit
    for p in [out[0], *sorted(out[1:], key=lambda p: -p.score)]:
        group, k = [p], _key(p)
        while k in parent and parent[k] not in kept and by_key[parent[k]] not in group:
            k = parent[k]
            group.insert(0, by_key[k])
        if _key(p) in kept or (kept and sum(least_sentences(q.unit) for q in group) > room):
            continue
        for i, q in enumerate(group):
            allowed = room - sum(least_sentences(r.unit) for r in group[i + 1 :])
            if _has_list(q) and sentences_of(q.unit) > allowed:
                q = replace(q, unit=trimmed_list(q.unit, q_terms, max(1, allowed - _prose_sentences(q.unit))))
            kept[_key(q)] = q
            room -= sentences_of(q.unit)
    return [kept[_key(p)] for p in out if _key(p) in kept]


def _key(p: Picked) -> tuple[int, int, int]:
    return p.n, p.span.start, p.span.end  # a unit with its list cut is still the same unit


def _has_list(p: Picked) -> bool:
    return p.unit is not None and p.unit.block is not None and p.unit.block.kind == "list" and bool(p.unit.sentence)
