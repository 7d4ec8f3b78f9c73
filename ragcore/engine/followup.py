"""Follow-up questions without a model: "Which environment variable sets it?" after a question
about the threshold is about the threshold.

A short question that leans on the previous turn (a pronoun such as "it" or "that", or an
opening such as "And …", "What about …") is made standalone by carrying over the previous
question's content words that it does not already have. With an LLM configured and
``conversation_turns`` > 0 the model condenses the question instead (``engine.py``).
"""

from __future__ import annotations

import re
from typing import Sequence

from ragcore.encoders.sparse import STOPWORDS

MAX_FOLLOWUP_WORDS = 10
_OPENER = re.compile(r"^\s*(?:and|or|but|also|so|then|what about|how about|and what about|same for|what if)\b", re.I)
_ANAPHORA = re.compile(r"\b(?:it|its|it's|this|that|these|those|they|them|their|there|one|ones|he|she|such|same)\b", re.I)
_WORD = re.compile(r"[A-Za-z_][\w.\-]*")


def is_followup(question: str) -> bool:
    """Short, and leaning on something said before."""
    words = question.split()
    if not words or len(words) > MAX_FOLLOWUP_WORDS:
        return False
    return bool(_OPENER.search(question) or _ANAPHORA.search(question))


def key_terms(text: str) -> list[str]:
    """Content words of ``text`` in their own spelling, in order, without stopwords."""
    out: list[str] = []
    for w in _WORD.findall(text):
        lw = w.lower().strip(".-")
        if len(lw) > 2 and lw not in STOPWORDS and lw not in {x.lower() for x in out}:
            out.append(w.strip(".-"))
    return out


def resolve_offline(question: str, history: Sequence[tuple[str, str]]) -> str:
    """The question made standalone from the previous turn, or the question itself."""
    if not history or not is_followup(question):
        return question
    previous = history[-1][0]
    have = {w.lower() for w in key_terms(question)}
    carried = [w for w in key_terms(previous) if w.lower() not in have]
    return f"{question.rstrip()} ({' '.join(carried)})" if carried else question
