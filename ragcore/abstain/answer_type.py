"""What kind of answer a question wants, and whether a quote holds one (classic QA answer typing).

"Which Python version does PARI/GP require?" wants a version number; "What is the submission
deadline for theses?" a date; "How many pages may a dissertation have?" or "What is the price of
…?" a number; "Who maintains Qdrant?" someone who maintains it. Each is wanted *of* something, its
focus (Python; the submission deadline; pages; the price; maintaining), and the quote must give
both. A quote with no token of that type does not answer, however many of the question's words it
shares (the PARI/GP tutorial's licence names PARI/GP; York's thesis class names York and theses).
Only these kinds are typed: they are cheap to recognise and a quote lacking them is plainly no
answer. "When" is left alone (in documentation it mostly asks for a condition: "When is save()
called?"), and so is "how do I …" (a how-to answer may be prose as well as a command).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Sequence

from ragcore.abstain.answerability import word_forms
from ragcore.encoders.sparse import STOPWORDS, tokenize

AnswerType = Literal["version", "date", "number", "amount", "name"]

_W = r"[\w/+.#-]+"
# what may follow the typed noun when it is what is asked ("Which Python version does …", "the
# deadline for …", "?"), not the first half of a compound ("version control", "date format")
_FOLLOWERS = ("of for in on at by to is was are were do does did will would should can could has have had must may "
              "might need needs").split()
_ASKED = r"(?=\s*(?:[?,]|$|(?:" + "|".join(_FOLLOWERS) + r")\b))"
# "Which Python version …" (the versioned thing before "version"), "What version of natbib …" (after "of")
_VERSION_Q = re.compile(rf"\b(?:which|what)\s+((?:{_W}\s+){{0,2}}?)versions?{_ASKED}"
                        rf"(?:\s+of\s+(?:the\s+)?({_W}))?", re.I)
# "What is the submission deadline …", "Which date …": the date's noun with the words before it
_DATE_Q = re.compile(rf"\b(?:which|what)\s+(?:(?:is|was|are|were)\s+)?(?:the\s+)?((?:{_W}\s+){{0,2}}?)"
                     rf"(deadlines?|dates?|year|day|month){_ASKED}", re.I)
# "How many pages …", "How much memory …", "the maximum number of files …": the counted thing
_NUMBER_Q = re.compile(rf"\bhow\s+(?:many|much)\s+({_W})"
                       rf"|\b(?:maximum|minimum|max|min)\s+(?:number|size|length)\s+of\s+({_W})", re.I)
# "What is the price of …", "How much does it cost": an amount (a number), of the price (its focus)
_MONEY_Q = re.compile(r"\b(?:what|how\s+much)\b[^?]*?\b(pric(?:e|es|ing)|costs?|fees?)\b", re.I)
# "Who maintains Qdrant?": a person or an organisation, doing what the verb says (its focus). Only
# a present-tense verb right after "who" is a focus: its other forms are regular ("maintained"),
# while a past tense may not be ("wrote", "written") and a modal hides the verb ("who should I …")
_WHO_Q = re.compile(r"^\s*who\s+(?:([a-z]{3,}s)\b)?", re.I)
_NOT_VERBS = frozenset("is was has does".split())
# the date's noun that says no more than "a date": not a focus the quote must hold
_PLAIN_DATE = frozenset("date dates day year month".split())

# a version as written in documentation: 3.12, 2.4.1, 1.39.xx, v2, "version 2", 8.3b
_VERSION = re.compile(r"\b\d+(?:\.(?:\d+|x+))+[a-z]?\b|\bv\d+\b|\bversions?\s+\d+", re.I)
_MONTHS = ("january february march april may june july august september october november december "
           "jan feb mar apr jun jul aug sep sept oct nov dec").split()
_DATE = re.compile(r"\b(?:" + "|".join(_MONTHS) + r")\b|\b(?:1[5-9]|20)\d\d\b|\b\d{1,2}[/-]\d{1,2}(?:[/-]\d{2,4})?\b"
                   r"|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
                   r"|\b\d+\s+(?:days?|weeks?|months?|years?)\b", re.I)
_NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve twenty thirty forty fifty "
                 "hundred thousand million dozen").split()
_NUMBER = re.compile(r"\d|\b(?:" + "|".join(_NUMBER_WORDS) + r")\b", re.I)
# who does it: a proper name or a plain noun ("the lighthouse keeper polishes the lens"), so any
# word will do; only the verb (the focus) is checked
_NAME = re.compile(r"\w")
_PATTERNS: dict[AnswerType, re.Pattern[str]] = {
    "version": _VERSION, "date": _DATE, "number": _NUMBER, "amount": _NUMBER, "name": _NAME}


@dataclass(frozen=True)
class Wanted:
    """What a typed question asks for: a ``kind`` of token, of ``focus`` (the words naming what it
    is a version, date or number of, as the question wrote them; may be empty)."""

    kind: AnswerType
    focus: tuple[str, ...]


def _focus(*phrases: str | None, drop: frozenset[str] = frozenset()) -> tuple[str, ...]:
    words = [w.strip(".,;:?!") for p in phrases if p for w in p.split()]
    return tuple(w for w in words if w and w.lower() not in STOPWORDS and w.lower() not in drop and tokenize(w))


def wanted(question: str) -> Wanted | None:
    """The type of answer ``question`` asks for and its focus, if it is one of the typed kinds."""
    if m := _VERSION_Q.search(question):
        return Wanted("version", _focus(m.group(1), m.group(2)))
    if m := _DATE_Q.search(question):
        return Wanted("date", _focus(m.group(1), m.group(2), drop=_PLAIN_DATE))
    if m := _NUMBER_Q.search(question):
        return Wanted("number", _focus(m.group(1) or m.group(2)))
    if m := _MONEY_Q.search(question):
        return Wanted("amount", _focus(m.group(1)))
    if m := _WHO_Q.search(question):
        verb = m.group(1) if m.group(1) and m.group(1).lower() not in _NOT_VERBS else None
        return Wanted("name", _focus(verb))
    return None


def holds_type(text: str, kind: AnswerType) -> bool:
    """Whether ``text`` has a token of the answer type ``kind``."""
    return bool(_PATTERNS[kind].search(text))


def answers_type(claim: str, want: Wanted) -> bool:
    """Whether ``claim`` gives the wanted token with its focus: every focus word, in some form."""
    if not holds_type(claim, want.kind):
        return False
    terms = set(tokenize(claim))
    return all(terms & set(word_forms(w) or tokenize(w)) for w in want.focus)


def untyped_reason(question: str, claims: Sequence[str]) -> str | None:
    """Why the quote cannot answer: the question wants a version, date or number of something and
    no claim that would be quoted gives one together with what it is of (None: the question is
    not typed, or some claim does)."""
    want = wanted(question)
    if want is None or not claims or any(answers_type(c, want) for c in claims):
        return None
    focus = " ".join(want.focus)
    if want.kind == "date" and focus:
        what = f"a {focus}"
    elif want.kind == "amount":
        what = f"an amount ({focus})"
    elif want.kind == "name":
        what = f"who {focus}" if focus else "a name"
    else:
        what = f"a {want.kind} of {focus}" if focus else f"a {want.kind}"
    return f"the question asks for {what} and nothing the answer would quote gives one"
