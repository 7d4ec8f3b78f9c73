"""The abstain signals' types: the :class:`Case` they read, the :class:`Verdict` each gives, and
:func:`decide`, which runs them in order (the signals and their order: ``signals.py``)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Protocol, Sequence

from ragcore.abstain.answerability import Support


@dataclass(frozen=True)
class Case:
    """What the signals read: the question as retrieved (standalone), its context and evidence, the
    support score against the bar, and whether a language model will write the answer."""

    question: str
    context: str  # corpus | selection | both
    evidence: tuple[Any, ...]
    support: Support
    bar: float
    uncovered_margin: float
    llm_writes: bool
    encoder: Any  # the bundled MiniLM: scores how well quoted sentences answer
    compose: Callable[[], Any]  # the extractive answer (ExtractiveResult), composed once when first asked

    def evolve(self, **changes: Any) -> "Case":
        return replace(self, **changes)


@dataclass(frozen=True)
class Verdict:
    signal: str
    note: str  # one line for the lab
    veto: str | None = None  # the reason to abstain


class AbstainSignal(Protocol):
    name: str

    def refine(self, case: Case) -> Case: ...

    def judge(self, case: Case) -> Verdict: ...


@dataclass(frozen=True)
class Decision:
    case: Case  # as the signals refined it (its support is the one the answer records)
    reason: str | None  # the first veto, None: answer
    verdicts: tuple[Verdict, ...]  # every signal judged, in order, up to and with the veto


def decide(signals: Sequence[AbstainSignal], case: Case) -> Decision:
    for signal in signals:
        case = signal.refine(case)
    verdicts: list[Verdict] = []
    for signal in signals:
        verdict = signal.judge(case)
        verdicts.append(verdict)
        if verdict.veto:
            return Decision(case, verdict.veto, tuple(verdicts))
    return Decision(case, None, tuple(verdicts))


class Signal:
    """A signal's defaults: a name, and a refine that leaves the case as it is."""

    name = ""

    def refine(self, case: Case) -> Case:
        return case
