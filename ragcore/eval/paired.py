"""Each configuration against the base, question by question.

A mean over 28 or 57 questions hides whether a change moved every question a little or
reshuffled a few: +0.02 nDCG@10 can be three questions up and two down. For each run after
the first this counts, on the same questions, how many rank better, worse or the same
(nDCG@10), how many answerable questions it newly answers or newly abstains on, how many
unanswerable ones it newly abstains on or newly answers, and the exact two-sided sign-test
p-value of better vs worse (ties dropped), so an analyst can tell a change from noise before
keeping it. "Best of both" is the mean if each question could take the better of the two
rankings: an upper bound on what choosing between them per question (query routing) can gain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ragcore.eval.metrics import ndcg_at_k
from ragcore.eval.runner import EvalRun

EPS = 1e-9  # nDCG differences below this are ties (float noise from equal rankings)


@dataclass(frozen=True)
class PairedDelta:
    """One run against the base on the questions both answered for (see the module docstring)."""

    label: str
    judged: int  # answerable questions with relevance judgements in both runs
    better: int
    worse: int
    same: int
    ndcg_base: float | None
    ndcg_run: float | None
    ndcg_best_of_both: float | None
    sign_p: float | None  # exact two-sided sign test, better vs worse; None when all tie
    answers_gained: int  # answerable: abstained in the base, answered here
    answers_lost: int
    abstains_gained: int  # unanswerable: answered in the base, abstained here
    abstains_lost: int


def sign_test_p(better: int, worse: int) -> float | None:
    """Exact two-sided binomial sign test (p = 0.5, scipy's); None without a non-tied pair."""
    if better + worse == 0:
        return None
    from scipy.stats import binomtest  # ~0.3 s to import: only when a report compares runs

    return float(binomtest(better, better + worse, 0.5).pvalue)


def _mean(vals: Sequence[float]) -> float | None:
    return sum(vals) / len(vals) if vals else None


def paired_delta(base: EvalRun, run: EvalRun) -> PairedDelta:
    """``run`` against ``base`` on the questions both hold (matched by id)."""
    other = {r.id: r.result for r in run.records}
    pairs = [(r.result, other[r.id]) for r in base.records if r.id in other]
    judged = [(b, o) for b, o in pairs if b.answerable and b.relevant_docs]
    nb = [ndcg_at_k(b.retrieved_docs, b.relevant_docs, 10) for b, _ in judged]
    no = [ndcg_at_k(o.retrieved_docs, o.relevant_docs, 10) for _, o in judged]
    better = sum(1 for x, y in zip(nb, no) if y > x + EPS)
    worse = sum(1 for x, y in zip(nb, no) if y < x - EPS)
    ans = [(b.answered, o.answered) for b, o in pairs if b.answerable]
    una = [(b.answered, o.answered) for b, o in pairs if not b.answerable]
    # a retrieval-only run (the LlamaIndex baseline) composes no answer: no answer flips to count
    answers = not run.retrieval_only and not base.retrieval_only
    return PairedDelta(
        label=run.label, judged=len(judged), better=better, worse=worse, same=len(judged) - better - worse,
        ndcg_base=_mean(nb), ndcg_run=_mean(no), ndcg_best_of_both=_mean([max(x, y) for x, y in zip(nb, no)]),
        sign_p=sign_test_p(better, worse),
        answers_gained=sum(1 for b, o in ans if not b and o) if answers else 0,
        answers_lost=sum(1 for b, o in ans if b and not o) if answers else 0,
        abstains_gained=sum(1 for b, o in una if b and not o) if answers else 0,
        abstains_lost=sum(1 for b, o in una if not b and o) if answers else 0,
    )


def paired_deltas(runs: Sequence[EvalRun]) -> list[PairedDelta]:
    """Every run after the first against the first (the base configuration)."""
    return [paired_delta(runs[0], r) for r in runs[1:]] if runs else []
