"""Which sentence answers: labels from a reference answer, and where the answering passage went.

An answerable question of an evaluation set has a reference answer. A candidate sentence (a unit
the extractive composer could quote, ``synthesis/extractive/units.py``) is labelled *answering*
when it shares the reference's key terms: the reference's content words that the question does not
already hold, weighted by how rare they are in the evidence (a word every chunk holds says
nothing). A unit is answering when it holds two key terms and at least 40% of their weight (of the eight
rarest key terms' weight, for a reference of a paragraph) (an identifier
of the reference, ``SESSION_COOKIE_DOMAIN`` or ``revoke()``, counts for 20%); a short reference
(under three key terms, "arrowsize(p)") must be held whole or by its identifier; where the caller
gives the text the answer must quote, a unit holding it answers. The rule was checked by hand on a sample (bench/results/reader.md says how many were wrong).

The *answering passage* is a chunk that holds an answering unit. Four rates follow, per set:
the answering passage is in the evidence, in the first five, quoted by the answer, and in the
context packed for a language model (``synthesis/llm/packing.py``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Sequence

from ragcore.textutil import content_terms, normalize_ws

if TYPE_CHECKING:
    from ragcore.types import Answer

_IDENT = re.compile(r"\b[A-Za-z]\w*_\w+\b|\b\w+\.\w+(?:\.\w+)*\b|\b\w+\(\)|--[a-z][\w-]+|\b[a-z]+[A-Z]\w+\b|\b[A-Z][a-z]+[A-Z]\w*\b")
KEY_SHARE = 0.4
KEY_COUNT = 2
KEY_TOP = 8


@dataclass(frozen=True)
class Key:
    """What an answering unit must share with the reference."""

    weights: dict[str, float]  # key term -> weight (IDF over the evidence)
    idents: frozenset[str]  # identifiers of the reference, lowercased
    expected: str  # normalised text the answer must quote ("" if the set gives none)


def answer_key(question: str, reference: str, chunk_texts: Sequence[str], expected: str = "") -> Key:
    q = content_terms(question)
    terms = content_terms(reference) - q
    docs = [content_terms(t) for t in chunk_texts] or [set()]
    weights = {t: math.log(1 + len(docs) / (1 + sum(t in d for d in docs))) for t in terms}
    q_low = question.lower()
    idents = frozenset(i.lower() for i in _IDENT.findall(reference) if i.lower() not in q_low and len(i) > 3)
    return Key(weights, idents, normalize_ws(expected).lower())


def answers(key: Key, text: str) -> bool:
    """Whether ``text`` (a unit's plain text) holds the answer the key describes."""
    low = normalize_ws(text).lower()
    if key.expected:
        return key.expected[:80] in low or (len(low) > 30 and low in key.expected)
    # a long reference (a paragraph) cannot be held by one sentence: the share is of its KEY_TOP rarest terms
    total = sum(sorted(key.weights.values(), reverse=True)[:KEY_TOP])
    if len(key.weights) < KEY_COUNT + 1:  # a short reference ("arrowsize(p)"): all of it, or its identifier
        terms = content_terms(text)
        return bool(key.weights) and (key.weights.keys() <= terms or any(i in low for i in key.idents))
    shared = content_terms(text) & key.weights.keys()
    share = min(1.0, sum(key.weights[t] for t in shared) / total) if total else 0.0
    # an identifier of the reference counts as half the share: "OPENAI_API_KEY" recurs across a page
    ident = any(i in low for i in key.idents)
    share += 0.5 * KEY_SHARE * ident
    return len(shared) + ident >= KEY_COUNT and share >= KEY_SHARE


def quoted(answer_text: str, unit_texts: Iterable[str]) -> bool:
    """Whether the answer quotes one of these units (whitespace-folded containment)."""
    a = normalize_ws(answer_text)
    return any(u and normalize_ws(u)[:200] in a for u in unit_texts)


@dataclass(frozen=True)
class PassageRates:
    """Counts over a set's answerable questions (the four rates' numerators and their base)."""

    questions: int
    in_evidence: int
    in_top5: int
    in_answer: int
    in_packed: int | None = None

    def as_dict(self) -> dict[str, float | int | None]:
        n = self.questions or 1
        out: dict[str, float | int | None] = {
            "questions": self.questions, "in_evidence": round(self.in_evidence / n, 3),
            "in_top5": round(self.in_top5 / n, 3), "in_answer": round(self.in_answer / n, 3)}
        out["in_packed"] = None if self.in_packed is None else round(self.in_packed / n, 3)
        return out


PASSAGE_KEYS = ("in_evidence", "in_top5", "in_answer", "in_packed")


def passage_flags(question: str, reference: str, answer: "Answer", expected: str = "") -> dict[str, bool] | None:
    """Where the answering passage went for one answered-or-not question (None without a reference).

    ``in_packed``: for a language-model answer, the evidence its prompt held (``metadata.packing``
    says what was dropped); otherwise what packing would keep for the default 8,192-token window,
    computed without calling a model."""
    from ragcore.synthesis.extractive.composer import candidates
    from ragcore.synthesis.llm.packing import evidence_budget, pack_evidence

    if not (reference or expected) or not answer.evidence:
        return None if not (reference or expected) else dict.fromkeys(PASSAGE_KEYS, False)
    ev = answer.evidence
    key = answer_key(question, reference, [e.chunk.text for e in ev], expected)
    hits = [(e, u) for e, u in candidates(ev) if answers(key, u.plain)]
    packing = answer.metadata.get("packing") if answer.metadata else None
    if packing is not None:
        kept = {e.n for e in ev} - set(packing.get("dropped") or ())
    else:
        budget = evidence_budget(context_window=8192, max_output_tokens=512, question=question)
        kept = set(pack_evidence(ev, budget_tokens=budget).numbers)
    answered = answer.status not in ("abstained", "error")
    return {"in_evidence": bool(hits), "in_top5": any(e.n <= 5 for e, _ in hits),
            "in_answer": answered and quoted(answer.answer, [u.sentence or u.plain for _, u in hits]),
            "in_packed": any(e.n in kept for e, _ in hits)}


def passage_rates(flags: Iterable[dict[str, bool] | None]) -> dict[str, float | None]:
    """Each flag's share over the questions that have flags (answerable, with a reference)."""
    got = [f for f in flags if f is not None]
    return {f"passage_{k}": (sum(f[k] for f in got) / len(got) if got else None) for k in PASSAGE_KEYS}
