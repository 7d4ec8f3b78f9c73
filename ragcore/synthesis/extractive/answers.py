"""Lead with what answers: the units that *do* or *state* what a how-to or a what-is-the-default
question asks, beside the prose sentences ``units.py`` finds.

* **Commands** (how-to questions): a code block holding a shell command (a line opening on a
  prompt: ``$ flask --app hello --debug run``) is quotable on its own, whole, even when no
  sentence introduces it with a colon; an instruction right before it ("To enable debug mode, use
  the --debug option.") brings it along. Without this, "How do I run the development server with
  the debugger?" quoted the prose around the command and left the command out.
* **Defaults** (questions about a default): a definition entry that ends on a "Default: …" line
  (Sphinx's ``<dl>`` of settings: the name on its own line, what it does, then "Default: None")
  is quotable from its name to that line, so the value comes with the name it belongs to. A bare
  "Default: None" is not a sentence (no full stop) and was never quoted.

* **Counted sets** (questions asking for "the two simple guidelines", "the three steps"): the
  sentence that announces that many of the question's things and brings a list of exactly that many
  items ("…two simple guidelines at all times:" and its items 1 and 2) is preferred
  (``COUNT_BONUS``), so the answer leads with the list rather than a sentence that only mentions
  the things ("Guidelines are given as to what constitutes a good table…"; pdf-qa's pdf-016).

Only the first two intents get these units: for other questions a command block on its own or a whole
definition entry would crowd out the sentence that answers. The composer's rules then score them
like any unit; ``lead`` puts the best of them first in the answer.
"""

from __future__ import annotations

import re
from typing import Sequence

from ragcore.synthesis.extractive.rules import Intent, says_what_to_do
from ragcore.synthesis.extractive.units import (
    MAX_ENTRY_CHARS, Picked, Unit, _blocks, _is_term_line, _line_offsets, fold, units_of,
)
from ragcore.textutil import content_terms, sentence_spans
from ragcore.types import Chunk

_PROMPT = re.compile(r"^\s*(?:\$|%|PS [^>\n]*>|[A-Za-z]:\\[^>\n]*>)\s+\S", re.M)  # a shell prompt, then a command
_DEFAULT_LINE = re.compile(r"^[ \t]*(?:Default(?: value)?|Defaults to)\s*[:=]?\s*\S.*$", re.M)
_STATES_DEFAULT = re.compile(
    r"\bdefaults?\b(?:\s+[\w-]+){0,3}?\s+(?:is|was|are|to|of)\b|\bdefault(?: value)?\s*[:=]|\bby default\b", re.I)
_DEFAULT_Q = re.compile(
    r"\bdefaults?\b|\bif (?:it|this|that|they|these)?\s*(?:is|are)?\s*(?:not|n't) (?:set|given|specified)\b"
    r"|\bif (?:i|you|we) (?:change|set|configure|do) nothing\b|\bout of the box\b|\bunless (?:i|you) (?:change|set) it\b", re.I)
MAX_COMMAND_LINES = 12  # a command and a little of its output; a longer block is a program, not a command
COMMAND_BONUS = 0.05  # on top of the how-to rules' code bonus: the line that does it
DEFAULT_BONUS = 0.1  # a unit that states a default, for a question about one
COUNT_BONUS = 0.1  # the list of as many items as a question asking for "the N <things>" counts
_NUMBER_WORDS = {w: i for i, w in enumerate("two three four five six seven eight nine ten".split(), 2)}
_COUNT_Q = re.compile(r"\b(?:what|which)\s+(?:are|were)\s+the\s+(\d+|" + "|".join(_NUMBER_WORDS) + r")\s+([^?]+)", re.I)
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+\u2022]|\d+[.)])[ \t]+\S", re.M)


def asks_count(question: str) -> tuple[int, str, frozenset[str]] | None:
    """(N, how the question says N, the content words after it) for "What are the N <things>…?"."""
    m = _COUNT_Q.search(question)
    if m is None:
        return None
    word = m.group(1).lower()
    n = int(word) if word.isdigit() else _NUMBER_WORDS[word]
    terms = frozenset(content_terms(m.group(2)))
    return (n, word, terms) if n >= 2 and terms else None


def announces_count(unit: Unit, count: tuple[int, str, frozenset[str]] | None) -> bool:
    """The unit's sentence says N of the question's things right before a list of N items."""
    if count is None or unit.block is None or unit.block.kind != "list" or not unit.sentence:
        return False
    n, word, terms = count
    said = re.search(rf"\b{re.escape(word)}\s+((?:[\w-]+\s+){{0,2}}[\w-]+)", unit.sentence, re.I)
    return bool(said and content_terms(said.group(1)) & terms) and len(_LIST_ITEM.findall(unit.block.text)) == n


def asks_default(question: str) -> bool:
    return bool(_DEFAULT_Q.search(question))


def states_default(unit: Unit) -> bool:
    return bool(_STATES_DEFAULT.search(unit.plain))


def is_command(unit: Unit) -> bool:
    return unit.block is not None and unit.block.kind == "code" and bool(_PROMPT.search(unit.block.text))


def bonus(unit: Unit, intent: Intent, default_q: bool, count: tuple[int, str, frozenset[str]] | None = None) -> float:
    """What these rules add to a unit's score (``count``: :func:`asks_count` of the question)."""
    return (COMMAND_BONUS * (intent.howto and is_command(unit)) + DEFAULT_BONUS * (default_q and states_default(unit))
            + COUNT_BONUS * announces_count(unit, count))


def extra_units(chunk: Chunk, intent: Intent, default_q: bool) -> list[Unit]:
    """The command and default units of ``chunk`` for this question's intent (may be none)."""
    out: list[Unit] = []
    if intent.howto:
        out += command_units(chunk)
    if default_q:
        out += default_units(chunk)
    return out


def command_units(chunk: Chunk) -> list[Unit]:
    """Each short code block holding a shell command, with the instruction right before it if any."""
    text = chunk.text
    blocks = _blocks(text, sentence_spans(text), chunk.kind == "html", chunk.section)
    plain = {u.end: u for u in units_of(chunk) if u.block is None}
    out: list[Unit] = []
    for b in blocks:
        if b.kind != "code" or not _PROMPT.search(b.text) or b.text.count("\n") > MAX_COMMAND_LINES + 2:
            continue
        before = text[: b.start].rstrip()
        intro = plain.get(len(before))
        if intro is not None and says_what_to_do(intro) and not intro.block:
            out.append(Unit(intro.start, intro.end, intro.sentence, b, intro.item, intro.term))
        else:
            out.append(Unit(b.start, b.end, "", b))
    return out


def default_units(chunk: Chunk) -> list[Unit]:
    """Each definition entry that ends on a "Default: …" line, from its name to that line."""
    text = chunk.text
    blocks = _blocks(text, sentence_spans(text), chunk.kind == "html", chunk.section)
    lines = _line_offsets(text)
    out: list[Unit] = []
    for m in _DEFAULT_LINE.finditer(text):
        start = _entry_start(lines, m.start())
        if start is None or any(b.start < m.start() and start < b.end and b.kind != "list" for b in blocks):
            continue  # no name above it, or a code block in between: folded into one line it would not read
        raw = text[start : m.end()]
        first = raw.split("\n", 1)[0].strip()
        out.append(Unit(start, m.end(), fold(raw), None, False, len(first)))
    return out


def default_entries(text: str) -> list[tuple[int, int]]:
    """(start, end) of each definition entry in ``text`` that runs from a name to a "Default: …"
    line: what a selection keeps as one piece (``engine/selection.py``)."""
    lines = _line_offsets(text)
    out = []
    for m in _DEFAULT_LINE.finditer(text):
        start = _entry_start(lines, m.start())
        if start is not None:
            out.append((start, m.end()))
    return out


def _entry_start(lines: list[tuple[int, int, str]], pos: int) -> int | None:
    """The offset of the name that opens the entry ``pos`` is in: the nearest line above that reads as
    a name and opens a paragraph (the chunk's first line, or one after a blank line), within
    ``MAX_ENTRY_CHARS``; None when there is none."""
    above = [ln for ln in lines if ln[1] < pos]
    for i in range(len(above) - 1, -1, -1):
        a, _b, line = above[i]
        if pos - a > MAX_ENTRY_CHARS:
            return None
        word = line.strip()
        opens = i == 0 or not above[i - 1][2].strip()
        if opens and word and _is_term_line(word) and _looks_like_name(word):
            return a
    return None


def _looks_like_name(word: str) -> bool:
    """A setting's or a function's name, not a word of prose or an admonition's title."""
    return bool(re.match(r"^(?:[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{3,}[A-Z0-9]*|[a-z_][\w.]*(?:[._]\w|\().*|--?\w[\w-]*.*)$", word))


COMMAND_KEEP = 0.4  # a command is brought into a how-to answer down to this share of the best unit's score


def with_command(chosen: list[Picked], ranked: Sequence[Picked], same_source, limit: int,
                 wanted=is_command) -> list[Picked]:
    """For a how-to question whose chosen units hold no command of the same sources
    (``same_source(p)``: the chosen pages, or the selection the question is about): the best one within ``COMMAND_KEEP`` of the
    best unit, in place of the weakest unit when the answer is full. The command is what does it;
    the prose around it was chosen because it repeats the question's words. ``wanted``: what the
    answer must hold (``states_default`` for a question about a default: "The defaults are
    letterpaper,10pt,…" scores low against the question for its list of values)."""
    if not chosen or any(p.unit is not None and wanted(p.unit) and same_source(p) for p in chosen):
        return chosen
    floor = COMMAND_KEEP * max(p.score for p in chosen)
    cmd = next((p for p in ranked if p.unit is not None and wanted(p.unit) and p.score >= floor and same_source(p)
                and not any(_same_text(p, c) for c in chosen)), None)
    if cmd is None:
        return chosen
    kept = chosen if len(chosen) < limit else sorted(chosen, key=lambda p: -p.score)[: limit - 1]
    return [*[p for p in chosen if p in kept], cmd]


def _same_text(a: Picked, b: Picked) -> bool:
    return a.n == b.n and a.span.start < b.span.end and b.span.start < a.span.end


def lead(chosen: Sequence[Picked], intent: Intent, default_q: bool, stands_alone) -> Picked | None:
    """The unit that answers, to open the answer: for a how-to question the best command or
    instruction, for a question about a default the best unit that states one; None to keep the
    composer's own choice (the best unit that stands alone)."""
    for p in chosen:  # ``chosen`` is best first
        u = p.unit
        if u is None or not stands_alone(p):
            continue
        if (intent.howto and (is_command(u) or says_what_to_do(u))) or (default_q and states_default(u)):
            return p
    return None

