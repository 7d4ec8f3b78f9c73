"""The example signal: in the list, it vetoes a one-word question and lets a question through."""

from ragcore.abstain.answerability import Support
from ragcore.abstain.short_question import TOO_VAGUE, ShortQuestion
from ragcore.abstain.signals import ABSTAIN_SIGNALS, Case, decide


def _case(question: str) -> Case:
    return Case(question, "corpus", ("evidence",), Support(0.9, "corpus"), 0.5, 0.0, True, None, lambda: None)


def test_a_one_word_question_is_vetoed():
    assert any(isinstance(s, ShortQuestion) for s in ABSTAIN_SIGNALS)
    assert decide(ABSTAIN_SIGNALS, _case("migrations")).reason == TOO_VAGUE
    assert decide(ABSTAIN_SIGNALS, _case("how do migrations work")).reason is None
