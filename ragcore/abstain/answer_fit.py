"""Does the quoted evidence answer the question? (beside "is the sentence in the evidence")

A citation's *support* says whether the sentence citing it is in what it cites: an extractive
sentence always is (1.0), so a wrong answer looked as trustworthy as a right one. *Answers* says
whether what is quoted is about what was asked, claim by claim:

    answers = 0.6·cos(question, claim) + 0.4·share of the question's content words in the claim

(the question's generic words, "happen", "value", "use", …, left out; a claim quoted with a
definition's name counts the name). A citation's score is its best citing claim's; the answer's is
its best claim's. The extractive composer is scored on the units it would quote before anything is
generated, so the engine can decline when nothing quotable answers (``ANSWERS_FLOOR``), or when
the question wants a version, a date or a number of something and no quotable claim gives one
with what it is of (``answer_type.py``: "Which Python version does PARI/GP require?" quoting the
licence that names PARI/GP).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import numpy as np

from ragcore.abstain.answer_type import untyped_reason
from ragcore.textutil import content_terms
from ragcore.types import Citation, SentenceCheck

# generic question words: they say what kind of answer is wanted, not what it is about
GENERIC = frozenset("""happen happens happened mean means value values work works use used using way ways thing
    things kind sort example explain tell say says said describe get make need want""".split())
COSINE_WEIGHT = 0.6
# Below this nothing quotable answers. On Flask 2.2's docs (a corpus of ours: 8 answerable questions
# scored 0.58-0.95; off-topic ones 0.07-0.61, "Does Flask support GraphQL subscriptions over
# WebSockets?" 0.32 with a support of 0.44 over the bar 0.42), well under every answerable one;
# checked on django-docs-qa in bench/results/issue28-answers.md.
ANSWERS_FLOOR = 0.35


@dataclass(frozen=True)
class AnswerFit:
    best: float  # the best claim's score
    by_citation: Mapping[int, float]  # evidence n -> its best citing claim's score

    def as_dict(self) -> dict[str, object]:
        return {"best": round(self.best, 4), "by_citation": {str(n): round(v, 4) for n, v in self.by_citation.items()}}


def question_terms(question: str) -> set[str]:
    return {t for t in content_terms(question) if t not in GENERIC}


def claim_scores(encoder, question: str, claims: Sequence[str]) -> list[float]:
    """Each claim's answers score against ``question`` (``encoder.encode``: L2-normalised rows)."""
    if not claims:
        return []
    vecs = np.asarray(encoder.encode([question, *claims]))
    cos = np.clip(vecs[1:] @ vecs[0], 0.0, 1.0)
    terms = question_terms(question)
    out = []
    for claim, c in zip(claims, cos):
        lex = len(terms & content_terms(claim)) / len(terms) if terms else float(c)
        out.append(COSINE_WEIGHT * float(c) + (1 - COSINE_WEIGHT) * lex)
    return out


def answer_fit(encoder, question: str, claims: Sequence[str], cited: Sequence[Sequence[int]]) -> AnswerFit:
    """Scores of an answer's ``claims`` (``cited[i]``: the evidence numbers claim i cites)."""
    scores = claim_scores(encoder, question, claims)
    by_n: dict[int, float] = {}
    for s, ns in zip(scores, cited):
        for n in ns:
            by_n[n] = max(by_n.get(n, 0.0), s)
    return AnswerFit(max(scores, default=0.0), by_n)


def with_answers(encoder, question: str, citations: Sequence[Citation],
                 sentences: Sequence[SentenceCheck]) -> tuple[tuple[Citation, ...], dict[str, object] | None]:
    """``citations`` with their ``answers`` score, and the answer's fit for its metadata (None
    when nothing is cited: an abstention quotes nothing)."""
    if not citations:
        return tuple(citations), None
    claims = [s for s in sentences if s.citations]
    fit = answer_fit(encoder, question, [s.text for s in claims], [s.citations for s in claims])
    out = tuple(replace(c, answers=round(fit.by_citation[c.n], 4)) if c.n in fit.by_citation else c for c in citations)
    return out, fit.as_dict()


def quoted_answers_reason(encoder, question: str, composed, support) -> str | None:
    """Why the engine declines although the corpus scored above the bar: no unit the extractive
    composer would quote answers the question (best ``answers`` below ``ANSWERS_FLOOR``), or the
    question wants a version, date or number that none of them gives (``untyped_reason``). Only in
    corpus mode: a selection the question is about is answered from (``selection_support.py``)."""
    if support.basis != "corpus" or composed is None or not composed.picked:
        return None
    claims = [p.unit.plain if p.unit is not None else p.span.text for p in composed.picked]
    best = max(claim_scores(encoder, question, claims), default=0.0)
    if best < ANSWERS_FLOOR:
        return (f"nothing the answer would quote answers the question (answers {best:.2f} < {ANSWERS_FLOOR:.2f}: "
                "the closest sentences share too little with it)")
    return untyped_reason(question, claims)
