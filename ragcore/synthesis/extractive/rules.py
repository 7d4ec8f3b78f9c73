"""How the extractive composer weighs a quotable unit against the question asked.

General rules, not tuned to one corpus:

* **Meta sentences are dropped**: a sentence about the page itself ("This page explains how to
  read…", "In this section we…", "The following sections describe…") answers nothing.
* **Pointers keep part of their score**: "See X for more details." repeats the question's words
  without answering it (×0.85).
* **Intent**: a how-to question ("How do I…", "How can…", "How to…") prefers units that say what
  to do: an instruction (a sentence that opens with an action verb: "Set…", "Run…", "To X,
  use…"), a command or code block, a setting or identifier, an action verb anywhere, a section
  titled as a task ("Setting the threshold", "How to…"); after the best unit, instructions come
  first. A what/why question prefers definitions and reasons ("X is…", "because",
  "means"). Each match adds a small bonus; it reorders close candidates, it never lifts an
  off-topic one over the best.
* **The answer opens on a sentence that stands alone**: one that leans on the sentence before it
  (a reference back or a continuation: "This method…", "It…", "Same as for…", "However,…", "You
  should also…") reads as a non sequitur as the answer's first line, so the best chosen unit that
  does not lean back opens the answer, and a leaning sentence is quoted only right after the
  sentence it leans on (``context.py``). Scoring such sentences lower instead cost
  Django's answers token F1, 0.166 → 0.160, and citation precision.
* **Key terms**: identifiers the question names (``AUTH_USER_MODEL``, ``top_k``, CamelCase,
  dotted names) are what the asker is looking for; a unit that names one gets a bonus.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ragcore.synthesis.extractive.units import Unit

_META = re.compile(
    r"^(?:this|the present|the following) (?:page|section|chapter|document|guide|manual|tutorial|article|topic|part)s?\b"
    r"|^in this (?:page|section|chapter|document|guide|manual|tutorial|article)\b"
    r"|^(?:this|the) (?:page|section|document|guide|manual) (?:explains|describes|covers|shows|lists|is about)\b",
    re.I,
)
_POINTER = re.compile(
    r"^(?:see|refer to|read|consult)\b|\bfor (?:more|further) (?:details|information)\b"
    r"|\bsee (?:the )?\S+ (?:documentation|docs|section)\b", re.I,
)
# a sentence that needs the one before it: it opens on a reference back or a continuation, or says
# "also" within its first few words ("You should also…", "login_required() also takes…")
_LEANS_BACK = re.compile(
    r"^(?:this|these|that|those|it|its|they|them|their|such|same|also|however|otherwise|instead|thus|hence|"
    r"therefore|additionally|furthermore|moreover|similarly|likewise|alternatively|conversely|in addition|"
    r"in (?:this|that|either|both|such a) (?:case|situation|scenario)|as (?:a result|such|well|above|before|mentioned))\b"
    r"|^\S+(?: \S+){0,3} also\b"
    # "Note that this…", "What this means…", "When set to False, …", and a verb whose subject is
    # the term or heading above it ("Has four optional arguments…", "Defaults to True."); "Returns…" reads as a description
    r"|^(?:note that|what|the reason for) (?:this|these|that|those|it|they)\b"
    r"|^(?:when|if|once|unless) (?:set|called|used|enabled|disabled|given|passed|provided|specified|omitted)\b"
    r"|^(?:has|takes|accepts|defaults)\b"
    # the result of the instruction before it: "You have just entered a matrix with 2 rows…" after "Type m = […]."
    r"|^you(?:'ve| have)? just\b", re.I,
)
_LINK_ONLY = re.compile(r"^\W*\[[^\]]+\]\([^)]+\)\W*(?::|—|-)?")  # "[Title](page.md): what it covers"
_HOWTO_Q = re.compile(r"^\s*how\s+(?:do|can|should|would|to|does one)\b|^\s*(?:what is the way|where do i)\b", re.I)
_WHY_Q = re.compile(r"^\s*(?:what|why|which|who|when)\b", re.I)
_ACTION = re.compile(
    r"\b(?:set|sets|setting|run|use|add|pass|call|define|change|configure|enable|disable|install|create|"
    r"point|override|provide|specify|edit|move|drag|open|register|import|write|put)\b", re.I,
)
_IMPERATIVE = re.compile(r"^(?:to [^,]{3,80}, )?(?:(?:then|first|also|now|just|simply|next|finally|you can|you should|you must) )?" + _ACTION.pattern.replace(r"\b(?:", r"(?:", 1), re.I)
_TASK_TITLE = re.compile(r"^(?:how to|\w+ing)\b", re.I)
_DEFINITION = re.compile(r"\b(?:is|are) (?:a|an|the)\b|\bmeans?\b|\bbecause\b|\brefers? to\b|\bso that\b", re.I)
_IDENT = re.compile(r"`[^`]+`|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[a-z]+_[a-z0-9_]+\b|\b[A-Z][a-z]+[A-Z]\w*\b|\b\w+\.\w+\.\w+\b")
POINTER_FACTOR = 0.85


@dataclass(frozen=True)
class Intent:
    howto: bool
    what: bool
    identifiers: frozenset[str]


def intent_of(question: str) -> Intent:
    idents = frozenset(i.strip("`").lower() for i in _IDENT.findall(question))
    howto = bool(_HOWTO_Q.search(question))
    return Intent(howto=howto, what=not howto and bool(_WHY_Q.search(question)), identifiers=idents)


def is_meta(unit: Unit) -> bool:
    """A sentence about the page, or a link-list entry ("[Title](page.md): what it covers")."""
    return bool(_META.search(unit.sentence) or (unit.sentence and _LINK_ONLY.match(unit.sentence)))


_LOWER_START = re.compile(r"^([a-z]+)\b(?![(._/-])")  # a plain lowercase word, not an identifier


def starts_mid_sentence(unit: Unit, names: frozenset[str] = frozenset()) -> bool:
    """A sentence that opens on a plain lowercase word that is not a name here (``leans_back``)."""
    lower = _LOWER_START.match(unit.sentence) if unit.sentence and not unit.item and not unit.term else None
    return bool(lower and lower.group(1) not in names)


def leans_back(unit: Unit, names: frozenset[str] = frozenset()) -> bool:
    """A prose sentence that needs the one before it to make sense on its own: it opens on a
    reference back or a continuation, or on a plain lowercase word (the rest of a sentence that
    began in a block before it: "creates a new tag foo, …" after "$ git tag foo"). ``names``:
    words that are names where the sentence comes from (its file name, its headings), so "git
    revert records…" in git-revert.html stands alone."""
    return bool(unit.sentence and (_LEANS_BACK.search(unit.sentence) or starts_mid_sentence(unit, names)))


def says_what_to_do(unit: Unit) -> bool:
    """An instruction or a command: for a how-to question these come first."""
    return bool(_IMPERATIVE.match(unit.sentence)) or (unit.block is not None and unit.block.kind == "code")


def adjust(score: float, unit: Unit, intent: Intent, section: tuple[str, ...] = ()) -> float:
    """The unit's score after the pointer, intent and key-term rules (``section``: the unit's
    heading path)."""
    text = unit.plain
    if unit.sentence and _POINTER.search(unit.sentence):
        score *= POINTER_FACTOR
    bonus = 0.0
    if intent.howto:
        bonus += 0.08 * bool(_IMPERATIVE.match(unit.sentence)) + 0.03 * bool(_ACTION.search(unit.sentence))
        bonus += 0.05 * (unit.block is not None and unit.block.kind == "code") + 0.02 * bool(_IDENT.search(text))
        bonus += 0.03 * bool(section and _TASK_TITLE.match(section[-1]))
    elif intent.what:
        bonus += 0.03 * bool(_DEFINITION.search(unit.sentence))
    if intent.identifiers:
        lowered = text.lower()
        bonus += 0.06 * any(i in lowered for i in intent.identifiers)
    return score + bonus
