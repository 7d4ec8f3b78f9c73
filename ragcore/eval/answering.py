"""Which sentence answers: labels from a reference answer, and where the answering passage went.

An answerable question of an evaluation set has a reference answer. A candidate sentence (a unit
the extractive composer could quote, ``synthesis/extractive/units.py``) is labelled *answering*
when two things hold.

- Words: it shares the key terms of the reference's *lead* (its first sentences, up to 40 words:
  a FAQ answer says it first; examples and asides later in a paragraph labelled sentences that
  merely shared them). Key terms are the lead's content words the question does not already
  hold, weighted by how rare they are in the evidence; a unit must hold two of them and 40% of
  the weight of the eight rarest (an identifier of the reference, ``SESSION_COOKIE_DOMAIN`` or
  ``revoke()``, counts for 20%); a short reference (under three key terms) must be held whole or
  by its identifier.
- Meaning, when the caller gives vectors (the bundled MiniLM's; ``ragcore eval`` and
  ``ragcore bench reader`` do): the unit is among the closest candidates to the lead (cosine at
  least 0.45 and within 0.15 of the closest). A unit within 0.9 of the lead restates it and
  answers whatever its words.

Where the set gives the text the answer must quote (pdf-qa's ``expected``), a unit holding it
(letters and digits compared) answers. Hand checks of 42 labels each (bench/results/reader.md):
words alone, 21 wrong; words and meaning, 8 wrong.

The *answering passage* is a chunk that holds an answering unit. Four rates follow, per set:
the answering passage is in the evidence, in the first five, quoted by the answer, and in the
context packed for a language model (``synthesis/llm/packing.py``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from ragcore.textutil import content_terms, normalize_ws, sentence_spans

if TYPE_CHECKING:
    from ragcore.types import Answer

_IDENT = re.compile(r"\b[A-Za-z]\w*_\w+\b|\b\w+\.\w+(?:\.\w+)*\b|\b\w+\(\)|--[a-z][\w-]+|\b[a-z]+[A-Z]\w+\b|\b[A-Z][a-z]+[A-Z]\w*\b")
KEY_SHARE = 0.4  # of the reference lead's key weight a unit must hold (recall)
KEY_COUNT = 2
KEY_TOP = 8
COS_FLOOR = 0.45  # a unit closer in meaning to the reference lead than this (MiniLM cosine) may answer
COS_GAP = 0.15  # … and within this of the closest unit
COS_SURE = 0.9  # a unit this close to the lead restates it
LEAD_WORDS = 40  # the reference's lead: its first sentences up to this many words


@dataclass(frozen=True)
class Key:
    """What an answering unit must share with the reference."""

    weights: dict[str, float]  # key term -> weight (IDF over the evidence)
    idents: frozenset[str]  # identifiers of the reference, lowercased
    expected: str  # normalised text the answer must quote ("" if the set gives none)
    question: frozenset[str] = frozenset()  # the question's content terms (they say nothing about the answer)
    lead: str = ""  # the reference's lead (what a unit's meaning is compared with)


def _lead(reference: str) -> str:
    """The reference's first sentences, up to LEAD_WORDS words: a FAQ answer says it first; a long
    paragraph's later sentences (examples, caveats, asides) would label sentences that merely share them."""
    out, words = [], 0
    for sp in sentence_spans(reference):
        out.append(reference[sp.start : sp.end])
        words += len(out[-1].split())
        if words >= LEAD_WORDS:
            break
    return " ".join(out) or reference


def answer_key(question: str, reference: str, chunk_texts: Sequence[str], expected: str = "") -> Key:
    q = content_terms(question)
    lead = _lead(reference)
    docs = [content_terms(t) for t in chunk_texts] or [set()]
    weights = {t: math.log(1 + len(docs) / (1 + sum(t in d for d in docs))) for t in content_terms(lead) - q}
    q_low = question.lower()
    idents = frozenset(i.lower() for i in _IDENT.findall(lead) if i.lower() not in q_low and len(i) > 3)
    return Key(weights, idents, _compact(expected), frozenset(q), lead)


def _compact(text: str) -> str:
    """Lowercase letters and digits only: a PDF's text and a reference differ in spaces and dashes."""
    return re.sub(r"[^0-9a-z]+", "", normalize_ws(text).lower())


def answers(key: Key, text: str) -> bool:
    """Whether ``text`` (a unit's plain text) holds enough of the reference lead's key terms
    (the lexical half of the label; :func:`answering` adds the meaning)."""
    low = normalize_ws(text).lower()
    if key.expected:
        return key.expected[:80] in _compact(text)
    terms = content_terms(text) - key.question
    ident = any(i in low for i in key.idents)
    shared = terms & key.weights.keys()
    if len(key.weights) < KEY_COUNT + 1:  # a short reference ("Yes, see HttpAuthMiddleware"): all of it, or its identifier
        return bool(key.weights) and (key.weights.keys() <= terms or ident)
    # the share is of the lead's KEY_TOP rarest terms
    total = sum(sorted(key.weights.values(), reverse=True)[:KEY_TOP])
    share = min(1.0, sum(key.weights[t] for t in shared) / total) if total else 0.0
    share += 0.5 * KEY_SHARE * ident  # an identifier of the reference counts for half the share
    return len(shared) + ident >= KEY_COUNT and share >= KEY_SHARE


def answering(key: Key, texts: Sequence[str], vectors: np.ndarray | None = None,
              lead_vector: np.ndarray | None = None) -> list[bool]:
    """Which of a question's candidate units answer it. Lexical overlap alone labelled a long
    sentence about something else that shared two key terms (half of a hand-checked sample was
    wrong, bench/results/reader.md); with the units' and the reference lead's vectors a unit must
    also be among the closest in meaning to the lead (within ``COS_GAP`` of the closest, at least
    ``COS_FLOOR``), and a unit that nearly restates the lead (``COS_SURE``) answers whatever its words."""
    lexical = [answers(key, t) for t in texts]
    if vectors is None or lead_vector is None or key.expected or not len(texts):
        return lexical
    cos = np.asarray(vectors, dtype=float) @ np.asarray(lead_vector, dtype=float)
    bar = max(COS_FLOOR, float(cos.max()) - COS_GAP)
    return [bool(c >= COS_SURE or (x and c >= bar)) for x, c in zip(lexical, cos)]


_MARKER = re.compile(r"\s*\[\d+\]")
_FENCE = re.compile(r"```[\w-]*")


def _flat(text: str) -> str:
    """Text without citation markers and code fences, whitespace folded: how a unit reads in an answer."""
    return normalize_ws(_FENCE.sub(" ", _MARKER.sub(" ", text)))


def quoted(answer_text: str, unit_texts: Iterable[str]) -> bool:
    """Whether the answer quotes one of these units. The answer puts a marker after a unit's
    sentence and fences its block (a plain containment test missed every unit with a block, a
    third of the misses counted on pdf-qa), and keeps only a table's header and matching rows."""
    a = _flat(answer_text)
    for u in unit_texts:
        f = _flat(u) if u else ""
        if f and (f[:120] in a or (u.lstrip().startswith(("```", "|")) and f[:30] in a)):
            return True
    return False


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


def passage_flags(question: str, reference: str, answer: "Answer", expected: str = "",
                  encoder: Any = None) -> dict[str, bool] | None:
    """Where the answering passage went for one answered-or-not question (None without a reference).

    ``encoder`` (the engine's): the labels also weigh meaning (:func:`answering`); without one, words only.
    ``in_packed``: for a language-model answer, the evidence its prompt held (``metadata.packing``
    says what was dropped); otherwise what packing would keep for the default 8,192-token window,
    computed without calling a model."""
    from ragcore.synthesis.extractive.composer import candidates, unit_text_to_embed
    from ragcore.synthesis.llm.packing import evidence_budget, pack_evidence

    if not (reference or expected) or not answer.evidence:
        return None if not (reference or expected) else dict.fromkeys(PASSAGE_KEYS, False)
    ev = answer.evidence
    key = answer_key(question, reference, [e.chunk.text for e in ev], expected)
    units = candidates(ev)
    vecs = lead = None
    if encoder is not None and units and not key.expected:
        got = encoder.encode([key.lead, *(unit_text_to_embed(u) for _, u in units)])
        lead, vecs = got[0], got[1:]
    hits = [(e, u) for (e, u), yes in zip(units, answering(key, [u.plain for _, u in units], vecs, lead)) if yes]
    packing = answer.metadata.get("packing") if answer.metadata else None
    if packing is not None:
        kept = {e.n for e in ev} - set(packing.get("dropped") or ())
    else:
        budget = evidence_budget(context_window=8192, max_output_tokens=512, question=question)
        kept = set(pack_evidence(ev, budget_tokens=budget).numbers)
    answered = answer.status not in ("abstained", "error")
    return {"in_evidence": bool(hits), "in_top5": any(e.n <= 5 for e, _ in hits),
            "in_answer": answered and quoted(answer.answer, [u.plain for _, u in hits]),
            "in_packed": any(e.n in kept for e, _ in hits)}


def passage_rates(flags: Iterable[dict[str, bool] | None]) -> dict[str, float | None]:
    """Each flag's share over the questions that have flags (answerable, with a reference)."""
    got = [f for f in flags if f is not None]
    return {f"passage_{k}": (sum(f[k] for f in got) / len(got) if got else None) for k in PASSAGE_KEYS}
