"""Metric values computed by hand; the arithmetic is in the comments."""

from __future__ import annotations

import json
import math

import pytest

from ragcore.eval.metrics import (
    QuestionResult,
    abstain_rate,
    answer_rate,
    citation_precision,
    mrr_at_k,
    ndcg_at_k,
    percentile,
    recall_at_k,
    summarize,
    token_f1,
)

# --------------------------------------------------------------------------- recall@k

RANKING = ["a", "a", "b", "a", "c", "d"]  # chunk-level; distinct docs: a, b, c, d


@pytest.mark.parametrize(
    ("k", "expected"),
    [
        (1, 0.0),  # top-1 distinct = [a]            -> 0 of {b, d}
        (2, 0.5),  # top-2 distinct = [a, b]         -> 1/2 (without dedupe [a, a] would give 0)
        (3, 0.5),  # [a, b, c]                       -> 1/2
        (4, 1.0),  # [a, b, c, d]                    -> 2/2
        (100, 1.0),  # k beyond the ranking: all 4 distinct docs -> 2/2
    ],
)
def test_recall_dedupes_before_cutting(k: int, expected: float) -> None:
    assert recall_at_k(RANKING, {"b", "d"}, k) == expected


def test_recall_edge_cases() -> None:
    assert recall_at_k(["a"], [], 5) == 0.0  # no judgements: defined as 0.0
    assert recall_at_k([], ["a"], 5) == 0.0  # nothing retrieved
    assert recall_at_k(["b"], ["b", "b", "c"], 5) == 0.5  # relevant is a set: {b, c} -> 1/2
    with pytest.raises(ValueError):
        recall_at_k(["a"], ["a"], 0)


# --------------------------------------------------------------------------- MRR@k


def test_mrr() -> None:
    assert mrr_at_k(["a", "a", "b"], {"b"}) == 0.5  # distinct [a, b]: b at rank 2 -> 1/2
    assert mrr_at_k(["x", "x", "x", "b"], {"b"}, k=2) == 0.5  # chunk rank 4, distinct rank 2
    assert mrr_at_k(["a", "a", "b"], {"b"}, k=1) == 0.0  # top-1 distinct [a]
    assert mrr_at_k(["x", "y", "c", "d"], {"c", "d"}) == pytest.approx(1 / 3)  # first hit: 3
    assert mrr_at_k(["x"], {"b"}) == 0.0
    assert mrr_at_k(["x"], set()) == 0.0


# --------------------------------------------------------------------------- nDCG@k


def test_ndcg_two_relevant_at_ranks_1_and_3() -> None:
    # DCG  = 1/log2(1+1) + 1/log2(3+1) = 1 + 0.5 = 1.5
    # IDCG = 1/log2(2) + 1/log2(3) = 1 + 0.6309298 = 1.6309298     (m = min(2, 10) = 2)
    expected = (1 + 1 / math.log2(4)) / (1 + 1 / math.log2(3))  # 0.919720...
    assert ndcg_at_k(["r1", "n", "r2", "n2"], {"r1", "r2"}) == pytest.approx(expected)
    # the repeated r1 chunk collapses: distinct [r1, n, r2] -> the same value
    assert ndcg_at_k(["r1", "r1", "n", "r2"], {"r1", "r2"}) == pytest.approx(expected)
    assert expected == pytest.approx(0.9197207891)


def test_ndcg_ideal_uses_min_relevant_k() -> None:
    # 3 relevant, k = 2, both slots relevant: DCG = IDCG = 1 + 1/log2(3) -> 1.0
    assert ndcg_at_k(["a", "b", "c"], {"a", "b", "c"}, k=2) == pytest.approx(1.0)
    # single relevant at rank 3: 1/log2(4) / 1 = 0.5
    assert ndcg_at_k(["x", "y", "c"], {"c"}) == pytest.approx(0.5)
    # relevant doc just outside k=2 -> 0
    assert ndcg_at_k(["x", "y", "c"], {"c"}, k=2) == 0.0
    assert ndcg_at_k(["a"], set()) == 0.0


# --------------------------------------------------------------------------- token F1


def test_token_f1_identical_after_normalisation() -> None:
    # pred "the cat sat [1]." -> markers, punctuation, articles go -> [cat, sat]
    assert token_f1("The cat sat [1].", "the  CAT sat") == 1.0
    # curly and straight apostrophes normalise alike: [isn, t, set] on both sides
    assert token_f1("It isn’t set.", "it isn't set") == 1.0


def test_token_f1_partial_overlap() -> None:
    # pred -> [paris, is, capital] (3); ref -> [capital, is, paris, france] (4); common 3
    # P = 3/3, R = 3/4, F1 = 2 * 1 * 0.75 / 1.75 = 6/7
    assert token_f1("Paris is the capital [1]", "The capital is Paris, France.") == pytest.approx(
        6 / 7
    )


def test_token_f1_strips_every_marker_form() -> None:
    pred = "Set SESSION_COOKIE_DOMAIN [2, 3] to your domain [1-3]."
    ref = "Try setting the SESSION_COOKIE_DOMAIN setting to match your domain."
    # "_" is punctuation: pred -> [set, session, cookie, domain, to, your, domain]         (7)
    # ref -> [try, setting, session, cookie, domain, setting, to, match, your, domain]     (10)
    # common = session 1 + cookie 1 + domain 2 + to 1 + your 1 = 6
    # P = 6/7, R = 6/10, F1 = 2PR/(P+R) = (72/70) / (102/70) = 12/17
    assert token_f1(pred, ref) == pytest.approx(12 / 17)


def test_token_f1_multiset_and_empty() -> None:
    # pred [cat, cat, cat], ref [cat]: common = min(3, 1) = 1, P = 1/3, R = 1, F1 = 0.5
    assert token_f1("the cat cat cat", "cat") == pytest.approx(0.5)
    assert token_f1("dog", "cat") == 0.0
    assert token_f1("[1]", "cat") == 0.0  # only a marker: no tokens left
    assert token_f1("The.", "a") == 1.0  # both empty after normalisation


# --------------------------------------------------------------------------- citations, rates


def test_citation_precision() -> None:
    # 4 citations, 2 of them into the relevant doc a -> 2/4
    assert citation_precision(["a", "a", "b", "c"], {"a"}) == 0.5
    assert citation_precision([], {"a"}) is None
    assert citation_precision(["a"], set()) == 0.0


def test_percentile_linear() -> None:
    values = [40, 10, 30, 20]  # sorted 10 20 30 40, n - 1 = 3
    assert percentile(values, 50) == 25.0  # pos 1.5 -> 20 + 0.5 * 10
    assert percentile(values, 95) == pytest.approx(38.5)  # pos 2.85 -> 30 + 0.85 * 10
    assert percentile(values, 0) == 10.0
    assert percentile(values, 100) == 40.0
    assert percentile([5.0], 95) == 5.0
    assert percentile([], 50) is None
    with pytest.raises(ValueError):
        percentile(values, 101)


def test_rates() -> None:
    statuses = ["ok", "partial", "abstained", "error"]
    assert answer_rate(statuses) == 0.5  # ok + partial = 2 of 4
    assert abstain_rate(statuses) == 0.25  # 1 of 4
    assert answer_rate([]) == 0.0
    assert abstain_rate([]) == 0.0


# --------------------------------------------------------------------------- summarize


def _results() -> list[QuestionResult]:
    return [
        QuestionResult(
            id="q1",
            question="capital?",
            answerable=True,
            status="ok",
            retrieved_docs=("a", "a", "b", "x"),
            relevant_docs=("a", "b"),
            cited_docs=("a", "x"),
            supported_sentences=2,
            total_sentences=3,
            answer="Paris is the capital [1]",
            reference="The capital is Paris, France.",
            latency_ms={"retrieve": 10, "generate": 100},
        ),
        QuestionResult(
            id="q2",
            question="c?",
            answerable=True,
            status="abstained",
            retrieved_docs=("x", "y", "c"),
            relevant_docs=("c",),
            answer="c c c",  # would score > 0, but an abstention counts 0
            reference="c",
            latency_ms={"retrieve": 30, "generate": 300},
        ),
        QuestionResult(
            id="u1",
            question="off topic?",
            answerable=False,
            status="abstained",
            retrieved_docs=("x",),
            latency_ms={"retrieve": 20},
        ),
        QuestionResult(
            id="u2",
            question="off topic 2?",
            answerable=False,
            status="ok",
            retrieved_docs=("y",),
            cited_docs=("y",),  # not counted: unanswerable
            supported_sentences=1,
            total_sentences=1,  # not counted: unanswerable
            answer="y",
            latency_ms={"retrieve": 40, "generate": 200},
        ),
    ]


def test_summarize() -> None:
    s = summarize(_results())
    assert (s.n_answerable, s.n_unanswerable) == (2, 2)
    # q1 distinct [a, b, x] vs {a, b}; q2 distinct [x, y, c] vs {c}
    assert s.recall_at_1 == 0.25  # (1/2 + 0) / 2
    assert s.recall_at_5 == 1.0  # (1 + 1) / 2
    assert s.recall_at_10 == 1.0
    assert s.recall_at_20 == 1.0
    assert s.mrr_at_10 == pytest.approx(2 / 3)  # (1/1 + 1/3) / 2
    assert s.ndcg_at_10 == pytest.approx(0.75)  # (1 + (1/log2(4)) / 1) / 2 = (1 + 0.5) / 2
    assert s.answer_rate == 0.5  # answerable statuses [ok, abstained]
    assert s.abstain_rate == 0.5  # unanswerable statuses [abstained, ok]
    assert s.citation_precision == 0.5  # q1: a relevant, x not; q2 none; u2 ignored -> 1/2
    assert s.supported_share == pytest.approx(2 / 3)  # answered answerable: q1 only, 2/3
    assert s.token_f1 == pytest.approx(3 / 7)  # (6/7 [see test above] + 0 [abstained]) / 2
    # retrieve over all four: 10 20 30 40; generate over three: 100 200 300
    assert s.latency_p50_ms == {"retrieve": 25.0, "generate": 200.0}
    assert s.latency_p95_ms["retrieve"] == pytest.approx(38.5)  # 30 + 0.85 * 10
    assert s.latency_p95_ms["generate"] == pytest.approx(290.0)  # pos 1.9: 200 + 0.9 * 100

    d = s.as_dict()
    assert d["recall_at_1"] == 0.25 and d["latency_p50_ms"]["generate"] == 200.0
    json.dumps(d)  # plain JSON types


def test_summarize_unjudged_and_empty() -> None:
    # answerable without judgements: out of retrieval means and citation precision,
    # still in answer_rate and supported_share; no reference -> out of token_f1
    r = QuestionResult(
        id="q", question="?", answerable=True, status="partial",
        retrieved_docs=["z"], cited_docs=["z"], supported_sentences=1, total_sentences=2,
    )
    s = summarize([r])
    assert r.retrieved_docs == ("z",)  # lists are stored as tuples
    assert s.recall_at_10 is None and s.mrr_at_10 is None and s.ndcg_at_10 is None
    assert s.citation_precision is None and s.token_f1 is None
    assert s.answer_rate == 1.0 and s.abstain_rate is None
    assert s.supported_share == 0.5

    e = summarize([])
    assert (e.n_answerable, e.n_unanswerable) == (0, 0)
    assert e.recall_at_1 is None and e.answer_rate is None and e.supported_share is None
    assert e.latency_p50_ms == {}
