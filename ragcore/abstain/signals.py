"""Whether to answer, as an ordered list of signals: each computes what it needs, describes itself in
one line (the lab shows the lines), and may veto the answer with a reason.

The engine's assess stage (``engine/answerer.py``) scores the question's support once
(``answerability.question_support``, the function calibration also calls), builds a :class:`Case` and
hands it to :func:`decide` with ``ABSTAIN_SIGNALS``. First every signal may refine the case (coverage
moves subjects the corpus never mentions into the support's ``unseen``); then the signals judge in
order and the first veto is the reason to abstain. A signal that needs the extractive answer asks the
case for it (``case.compose()``): the engine's composition stage composes it once, only then.

To add a signal: a module with an object that has ``name``, ``refine(case)`` and ``judge(case)`` (the
types are in ``verdicts.py``), and one entry in ``ABSTAIN_SIGNALS`` below (ARCHITECTURE.md, "Where to add …").
"""

from __future__ import annotations

from typing import Any, Sequence

from ragcore.abstain.answer_fit import quoted_answers_reason
from ragcore.abstain.answerability import Support, selection_decides
from ragcore.abstain.coverage import judge_coverage
from ragcore.abstain.verdicts import AbstainSignal, Case, Decision, Verdict, Signal, decide  # noqa: F401  (re-exported)

NO_EVIDENCE = "no evidence passed top-K and the threshold"
NOTHING_TO_QUOTE = "the evidence has no prose sentence to quote (only code or tables); an LLM could still answer from it"


# --------------------------------------------------------------------------- the signals


class AnyEvidence(Signal):
    """Nothing passed the cuts: nothing to answer from."""

    name = "evidence"

    def judge(self, case: Case) -> Verdict:
        n = len(case.evidence)
        return Verdict(self.name, f"{n} piece(s) of evidence", None if n else NO_EVIDENCE)


class Coverage(Signal):
    """Named subjects (a name, quoted term, identifier, version) no chunk mentions (coverage.py): near the
    bar they join the support's unseen words, which the support signal names when it abstains; above
    it they stay a hedge on the answer."""

    name = "coverage"

    def refine(self, case: Case) -> Case:
        return case.evolve(support=judge_coverage(case.support, case.bar, case.uncovered_margin))

    def judge(self, case: Case) -> Verdict:
        s = case.support
        if not (s.uncovered or s.unseen):
            return Verdict(self.name, "every named subject is in the corpus")
        return Verdict(self.name, f"never mentioned: {', '.join((*s.unseen, *s.uncovered))}")


class Bar(Signal):
    """The support score against the collection's bar, the corpus's unseen words; with a selection the
    question is about, the selection's verdict decides instead."""

    name = "support"

    def judge(self, case: Case) -> Verdict:
        s = case.support
        note = s.explain(case.bar)
        if selection_decides(s):  # the analyst chose the passage: declined only when it is about something else
            return Verdict(self.name, note, note if s.selection_fit["reason"] else None)  # type: ignore[index]
        if s.score < case.bar or s.unseen:  # unseen: set in corpus mode only (answerability.question_support)
            return Verdict(self.name, note, note)
        return Verdict(self.name, note)


class NothingToQuote(Signal):
    """The extractive composer found no prose sentence to quote (only when no language model writes)."""

    name = "nothing to quote"

    def judge(self, case: Case) -> Verdict:
        if case.llm_writes:
            return Verdict(self.name, "a language model writes the answer")
        composed = case.compose()
        if composed.status == "abstained":
            return Verdict(self.name, "no prose sentence in the evidence", NOTHING_TO_QUOTE)
        return Verdict(self.name, f"{len(composed.picked)} unit(s) to quote")


class QuotedAnswers(Signal):
    """None of the sentences the composer would quote answers the question, or none gives the version,
    date or number it asks for (answer_fit.py; corpus basis, no language model)."""

    name = "quoted answers"

    def judge(self, case: Case) -> Verdict:
        if case.llm_writes:
            return Verdict(self.name, "a language model writes the answer")
        reason = quoted_answers_reason(case.encoder, case.question, case.compose(), case.support)
        return Verdict(self.name, reason or "the quoted sentences answer the question", reason)


# In order: the first veto is the reason to abstain.
ABSTAIN_SIGNALS: tuple[AbstainSignal, ...] = (AnyEvidence(), Coverage(), Bar(), NothingToQuote(), QuotedAnswers())


def abstain_reason(evidence: Sequence[Any], support: Support, bar: float) -> str | None:
    """Why the engine will not answer on the evidence and support alone (the evidence and support
    signals), or None when it will; for callers that judge a support already refined."""
    case = Case("", "corpus", tuple(evidence), support, bar, 0.0, True, None, lambda: None)
    return decide((AnyEvidence(), Bar()), case).reason
