"""An abstain signal (an example of the recipe): a question of one word is too vague to answer."""

from __future__ import annotations

from ragcore.abstain.verdicts import Case, Signal, Verdict

TOO_VAGUE = "the question is one word: too vague to answer; ask a whole question"


class ShortQuestion(Signal):
    name = "short question"

    def judge(self, case: Case) -> Verdict:
        words = len(case.question.split())
        return Verdict(self.name, f"{words} word(s)", TOO_VAGUE if words < 2 else None)
