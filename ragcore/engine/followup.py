"""Follow-up questions without a model: "How do I change it?" after a question about
``MAX_CONTENT_LENGTH`` is about ``MAX_CONTENT_LENGTH``.

A short question that leans on the previous turn (a pronoun such as "it" or "that", or an
opening such as "And …", "What about …") is made standalone by carrying over the previous
question's *subject*: the names, identifiers and quoted terms it named (coverage.py's subjects),
else its content words that are not question words ("how", "configure", "use"). The previous
question is itself resolved first, so a chain of follow-ups keeps its subject. The subject
replaces the first "it"/"them" (reads naturally: "How do I change MAX_CONTENT_LENGTH?") or, when
there is no such pronoun, is added in parentheses ("What about the default? (MAX_CONTENT_LENGTH)").

The engine does this by default whenever a question comes with history; the answer's metadata
carries the rewritten question as ``standalone_question`` (the cell shows "read as: …"). With an
LLM configured and ``conversation_turns`` > 0 the model condenses the question instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ragcore.abstain.coverage import subjects
from ragcore.engine import anaphora
from ragcore.engine.anaphora import QUESTION_WORDS, key_terms

MAX_CARRIED = 4  # words carried when the previous question names no subject
_REPLACEABLE = re.compile(r"\b(it|them)\b(?!['’])", re.I)


@dataclass(frozen=True)
class Resolved:
    """A question as the engine reads it: ``text`` (the question itself when standalone) and the
    subject words it took from the previous turn."""

    text: str
    carried: tuple[str, ...] = ()


def is_followup(question: str) -> bool:
    """Short, and leaning on something said before (anaphora.py says when)."""
    return anaphora.is_followup(question)


def subject_of(question: str) -> list[str]:
    """What ``question`` is about: its named subjects, else its content words that do not ask."""
    named = [s.text for s in subjects(question)]
    if named:
        return named
    return [w for w in key_terms(question) if w.lower() not in QUESTION_WORDS][:MAX_CARRIED]


def resolve(question: str, history: Sequence[tuple[str, str]]) -> Resolved:
    """The question made standalone from the previous turn (see the module docstring)."""
    if not history or not is_followup(question):
        return Resolved(question)
    previous = resolve(history[-1][0], history[:-1]).text  # a follow-up of a follow-up keeps the subject
    have = {w.lower() for w in key_terms(question)}
    carried = tuple(w for w in subject_of(previous) if w.lower() not in have)
    if not carried:
        return Resolved(question)
    phrase = " ".join(carried)
    text, n = _REPLACEABLE.subn(phrase, question, count=1)
    return Resolved(text if n else f"{question.rstrip()} ({phrase})", carried)


def resolve_offline(question: str, history: Sequence[tuple[str, str]]) -> str:
    """The question made standalone from the previous turn, or the question itself."""
    return resolve(question, history).text
