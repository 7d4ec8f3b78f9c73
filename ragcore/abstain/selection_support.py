"""Is the question about the passage the analyst selected? (selected-text mode)

In selection mode the analyst has already chosen the passage: the question is about it unless it
clearly is not. So a selection is not held to the corpus's abstain bar (a score of how well the
best sentence matches the question: "What happens if this is not set?" scores 0.36 against a
paragraph that says exactly that, because "this" carries the subject). It is declined only when
it is *clearly about something else*:

* the question names something (an identifier such as ``SECRET_KEY``, ``top_k`` or ``--debug``,
  an acronym such as ``JSON``, a quoted term) that the selection never mentions, and does not
  point at the selection ("this", "these lines", "the passage", …); or
* none of the question's content words occurs in the selection (any form of the word: "set"
  covers "setting"), no sentence of it is close in meaning (cosine below ``OFF_TOPIC_COSINE``),
  and the question does not point at the selection.

A question that points at the selection ("How do I turn this on?": none of its words is in the
passage, which says "enable") or has no content words of its own ("Summarise the passage") is
about the selection, unless it names something the selection never mentions. The verdict says what the selection lacks, and the engine shows it when it abstains.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from ragcore.textutil import content_terms

# below this, no sentence of the selection is about the question's subject (MiniLM cosines: a
# paraphrase scores 0.5-0.8, a sentence on the same broad topic 0.3-0.5, an unrelated one < 0.2)
OFF_TOPIC_COSINE = 0.25
# the question points at the passage it is asked about
_DEICTIC = re.compile(
    r"\b(?:this|these|that|those|it|here|above|below)\b"
    r"|\bthe (?:passage|selection|selected|paragraph|text|lines?|sentences?|snippet|excerpt|quote|code|example|section)\b",
    re.I,
)
# names a question can ask about: identifiers (ALL_CAPS_WITH_UNDERSCORES, snake_case, dotted.names,
# calls(), CamelCase, --options, ACRONYMS) and quoted terms; a plain capitalised word is not one
# ("How does Flask read it?" about a passage that never says "Flask" is still about the passage)
_NAMES = re.compile(
    r"`([^`]+)`|[\"“]([^\"”]{2,40})[\"”]"
    r"|(?<![\w.-])(--?[a-z][\w-]+|[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+|[A-Za-z]+_[\w]+|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|[A-Z]{2,}\w*)(?:\(\))?"
)
# generic words of a question that say nothing about its subject
_GENERIC = frozenset("""happen happens happened mean means meant value values work works use used using way ways
    thing things kind sort example explain tell say says said describe""".split())


@dataclass(frozen=True)
class SelectionFit:
    """How the question relates to the selected passage."""

    on_topic: bool
    best_cosine: float  # the closest sentence of the selection to the question
    shared: tuple[str, ...]  # the question's content words the selection uses
    missing: tuple[str, ...]  # what the question names that the selection never mentions
    deictic: bool  # the question points at the passage ("this", "these lines")

    @property
    def reason(self) -> str | None:
        """Why the selection cannot answer, in the words the answer's explanation shows."""
        if self.on_topic:
            return None
        if self.missing:
            names = ", ".join(f"“{m}”" for m in self.missing)
            return f"the selection is about something else: it never mentions {names}"
        return (f"the selection is about something else: it shares no word with the question and its closest "
                f"sentence is far from it (cosine {self.best_cosine:.2f} < {OFF_TOPIC_COSINE:.2f})")

    def as_dict(self) -> dict[str, object]:
        return {"on_topic": self.on_topic, "best_cosine": round(self.best_cosine, 4), "shared": list(self.shared),
                "missing": list(self.missing), "deictic": self.deictic}


def question_names(question: str) -> tuple[str, ...]:
    """What the question names: identifiers, acronyms and quoted terms (``_NAMES``)."""
    out: dict[str, str] = {}
    first = re.match(r"\s*\S+", question)
    for m in _NAMES.finditer(question):
        name = next(g for g in m.groups() if g)
        if first and m.start() < first.end() and not m.group(1) and not m.group(2):
            continue  # "What", "How": a question's first word is capitalised anyway
        if name.isupper() and len(name) <= 3 and "_" not in name:
            continue  # "I", "OK", "AND"
        out.setdefault(name.lower(), name)
    return tuple(out.values())


def _mentions(text_low: str, terms: set[str], name: str) -> bool:
    low = name.lower().strip("-")
    if low in text_low:
        return True
    parts = content_terms(name)  # "max_content_length" is also "MAX CONTENT LENGTH" in prose
    return bool(parts) and parts <= terms


def selection_fit(question: str, selection_text: str, cosines: Iterable[float]) -> SelectionFit:
    """Judge the question against the selection's text and its sentences' cosines to the question."""
    best = max(cosines, default=0.0)
    sel_terms = content_terms(selection_text)
    low = selection_text.lower()
    deictic = bool(_DEICTIC.search(question))
    q_terms = {t for t in content_terms(question) if t not in _GENERIC}
    shared = tuple(sorted(t for t in q_terms if t in sel_terms or any(s.startswith(t) or t.startswith(s)
                                                                      for s in sel_terms if min(len(s), len(t)) >= 4)))
    missing = tuple(n for n in question_names(question) if not _mentions(low, sel_terms, n))
    if missing and not deictic:
        return SelectionFit(False, best, shared, missing, deictic)
    off = bool(q_terms) and not shared and best < OFF_TOPIC_COSINE and not deictic
    return SelectionFit(not off, best, shared, (), deictic)
