"""Evaluation metrics: pure functions over plain values, plus a per-run summary.

Retrieval metrics are document-level. A retriever returns chunks, so its ranking, mapped to
document paths, may name a document several times (``["a", "a", "b"]``). Every retrieval
metric here first removes repeats, keeping each document's first (best) rank, and only then
cuts at ``k``: "top-k" means the first ``k`` *distinct* documents, so a document split into
many chunks cannot push the others out of the window. Consequence: the numbers are comparable
across chunk sizes, and recall@k counts a document found at chunk rank > k as long as it is
among the first k distinct documents.

Questions without relevance judgements: the pure functions return ``0.0`` for an empty
``relevant_docs`` (nothing can be found, and a float keeps them total); :func:`summarize`
leaves such questions out of the retrieval means instead, so they neither help nor hurt.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Collection, Iterable, Mapping, Sequence

import numpy as np

__all__ = [
    "ANSWERED_STATUSES",
    "NOT_ANSWERED_STATUSES",
    "QuestionResult",
    "Summary",
    "abstain_rate",
    "answer_rate",
    "citation_precision",
    "dedupe_ranking",
    "mrr_at_k",
    "ndcg_at_k",
    "normalize_answer",
    "percentile",
    "recall_at_k",
    "strip_citation_markers",
    "summarize",
    "token_f1",
]

NOT_ANSWERED_STATUSES = frozenset({"abstained", "error"})
ANSWERED_STATUSES = frozenset({"ok", "partial"})
RECALL_KS = (1, 5, 10, 20)

# --------------------------------------------------------------------------- retrieval


def dedupe_ranking(retrieved_docs: Iterable[str]) -> list[str]:
    """Distinct documents in rank order, each at its first occurrence."""
    return list(dict.fromkeys(retrieved_docs))


def _top_k(retrieved_docs: Sequence[str], k: int) -> list[str]:
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return dedupe_ranking(retrieved_docs)[:k]


def recall_at_k(retrieved_docs: Sequence[str], relevant_docs: Collection[str], k: int) -> float:
    """Document recall at k.

    ``recall@k = |set(relevant_docs) ∩ D_k| / |set(relevant_docs)|`` where ``D_k`` is the first
    ``k`` distinct documents of ``retrieved_docs`` (deduplicated before the cut). ``k`` larger
    than the ranking uses the whole ranking. Empty ``relevant_docs`` gives ``0.0``.
    """
    relevant = set(relevant_docs)
    top = _top_k(retrieved_docs, k)
    if not relevant:
        return 0.0
    return len(relevant.intersection(top)) / len(relevant)


def mrr_at_k(retrieved_docs: Sequence[str], relevant_docs: Collection[str], k: int = 10) -> float:
    """Reciprocal rank at k: ``1 / r`` where ``r`` is the 1-based rank, among the first ``k``
    distinct documents, of the first relevant one; ``0.0`` when none is there (or nothing is
    relevant). Averaged over questions this is MRR@k."""
    relevant = set(relevant_docs)
    for rank, doc in enumerate(_top_k(retrieved_docs, k), start=1):
        if doc in relevant:
            return 1.0 / rank
    return 0.0


def ndcg_at_k(retrieved_docs: Sequence[str], relevant_docs: Collection[str], k: int = 10) -> float:
    """Normalised discounted cumulative gain at k with binary gains.

    ``DCG@k = Σ_{r=1..k} rel(d_r) / log2(r + 1)`` over the first ``k`` distinct documents
    ``d_r`` (``rel`` is 1 for a relevant document, else 0);
    ``IDCG@k = Σ_{r=1..m} 1 / log2(r + 1)`` with ``m = min(|set(relevant_docs)|, k)``;
    ``nDCG@k = DCG@k / IDCG@k``, and ``0.0`` when nothing is relevant.
    """
    relevant = set(relevant_docs)
    top = _top_k(retrieved_docs, k)
    if not relevant:
        return 0.0
    dcg = sum(1.0 / math.log2(r + 1) for r, d in enumerate(top, start=1) if d in relevant)
    idcg = sum(1.0 / math.log2(r + 1) for r in range(1, min(len(relevant), k) + 1))
    return dcg / idcg


# --------------------------------------------------------------------------- answers

# [1]  [2, 3]  [1-3]  [1–3]  [1,2-4]
_CITATION_RE = re.compile(r"\[\s*\d+(?:\s*[-–,]\s*\d+)*\s*\]")
_ARTICLES_RE = re.compile(r"\b(a|an|the)\b")


def strip_citation_markers(text: str) -> str:
    """Remove numbered citation markers: ``[1]``, ``[2, 3]``, ``[1-3]``, ``[1–3]``."""
    return _CITATION_RE.sub(" ", text)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lowercase, drop punctuation, drop articles (a, an, the), collapse
    whitespace. Punctuation is every Unicode ``P*`` character (so ’ “ ” – go too, which
    SQuAD's ASCII-only ``string.punctuation`` would keep) plus ASCII symbols ``$+<=>^`|~``."""
    text = text.lower()
    text = "".join(
        " " if unicodedata.category(ch).startswith("P") or ch in "$+<=>^`|~" else ch
        for ch in text
    )
    text = _ARTICLES_RE.sub(" ", text)
    return " ".join(text.split())


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1 between a predicted and a reference answer.

    Citation markers are stripped from ``prediction``, then both are normalised
    (:func:`normalize_answer`) and split on whitespace. With ``common`` the multiset overlap
    ``Σ_t min(count_pred(t), count_ref(t))``: ``P = common / |pred|``, ``R = common / |ref|``,
    ``F1 = 2PR / (P + R)``; ``0.0`` when ``common = 0``. If either side has no tokens the
    score is ``1.0`` when both are empty, else ``0.0``.

    Punctuation is replaced by a space rather than deleted (SQuAD deletes it), so
    ``"isn't"`` gives the tokens ``isn t`` on both sides alike.
    """
    pred = normalize_answer(strip_citation_markers(prediction)).split()
    ref = normalize_answer(reference).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    p, r = common / len(pred), common / len(ref)
    return 2 * p * r / (p + r)


def citation_precision(cited_docs: Sequence[str], relevant_docs: Collection[str]) -> float | None:
    """Share of citations into a relevant document: ``|{c ∈ cited : c ∈ relevant}| / |cited|``.

    Every citation counts (two markers pointing into the same document count twice);
    ``None`` when there are no citations.
    """
    if not cited_docs:
        return None
    relevant = set(relevant_docs)
    return sum(1 for d in cited_docs if d in relevant) / len(cited_docs)


# --------------------------------------------------------------------------- rates, latency


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0..100) with linear interpolation between closest ranks
    (numpy's default): position ``(n - 1) * q / 100`` in the sorted values. ``None`` for no
    values."""
    if not 0 <= q <= 100:
        raise ValueError(f"q must be within 0..100, got {q}")
    if len(values) == 0:
        return None
    return float(np.percentile(np.asarray(values, dtype=float), q))


def answer_rate(statuses: Sequence[str]) -> float:
    """Share of statuses that are an answer: not ``"abstained"`` and not ``"error"``.
    ``0.0`` for no statuses."""
    if not statuses:
        return 0.0
    return sum(1 for s in statuses if s not in NOT_ANSWERED_STATUSES) / len(statuses)


def abstain_rate(statuses: Sequence[str]) -> float:
    """Share of statuses that are ``"abstained"``. ``0.0`` for no statuses."""
    if not statuses:
        return 0.0
    return sum(1 for s in statuses if s == "abstained") / len(statuses)


# --------------------------------------------------------------------------- per run


@dataclass(frozen=True)
class QuestionResult:
    """What one question of an evaluation run produced, reduced to what the metrics need.

    ``retrieved_docs`` is the ranking as document paths (one per retrieved chunk, in rank
    order, repeats allowed); ``cited_docs`` one path per citation of the answer;
    ``supported_sentences``/``total_sentences`` count the answer's sentences and those the
    citation checker found supported; ``latency_ms`` maps stage -> milliseconds.
    """

    id: str
    question: str
    answerable: bool
    status: str  # ok | partial | abstained | error
    retrieved_docs: tuple[str, ...] = ()
    relevant_docs: tuple[str, ...] = ()
    cited_docs: tuple[str, ...] = ()
    supported_sentences: int = 0
    total_sentences: int = 0
    answer: str = ""
    reference: str = ""
    latency_ms: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("retrieved_docs", "relevant_docs", "cited_docs"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "latency_ms", dict(self.latency_ms))

    @property
    def answered(self) -> bool:
        return self.status not in NOT_ANSWERED_STATUSES


@dataclass(frozen=True)
class Summary:
    """Aggregate metrics of a run; see :func:`summarize` for what each one averages over.
    A metric is ``None`` when there was nothing to average."""

    n_answerable: int
    n_unanswerable: int
    recall_at_1: float | None
    recall_at_5: float | None
    recall_at_10: float | None
    recall_at_20: float | None
    mrr_at_10: float | None
    ndcg_at_10: float | None
    answer_rate: float | None
    abstain_rate: float | None
    citation_precision: float | None
    supported_share: float | None
    token_f1: float | None
    latency_p50_ms: Mapping[str, float] = field(default_factory=dict)
    latency_p95_ms: Mapping[str, float] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict keyed by field name (latencies as nested dicts)."""
        return asdict(self) | {
            "latency_p50_ms": dict(self.latency_p50_ms),
            "latency_p95_ms": dict(self.latency_p95_ms),
        }


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarize(results: Sequence[QuestionResult]) -> Summary:
    """Aggregate per-question results into a :class:`Summary`.

    Groups: ``A`` = answerable questions, ``U`` = unanswerable ones.

    - ``recall_at_{1,5,10,20}``, ``mrr_at_10``, ``ndcg_at_10``: macro means over the questions
      of ``A`` that have relevance judgements (non-empty ``relevant_docs``); questions without
      judgements are left out rather than scored 0.
    - ``answer_rate``: :func:`answer_rate` over the statuses of ``A`` (abstaining on an
      answerable question is a miss).
    - ``abstain_rate``: :func:`abstain_rate` over the statuses of ``U`` (the wanted behaviour
      there; an error is not counted as an abstention).
    - ``citation_precision``: micro average over every citation of the questions of ``A`` with
      judgements: ``Σ relevant citations / Σ citations``, so a question with many citations
      weighs more; ``None`` when there are no citations at all. Citations on ``U`` are not
      counted (there is no relevant document to hit).
    - ``supported_share``: ``Σ supported_sentences / Σ total_sentences`` over the answered
      questions of ``A`` (pooled by sentence); ``None`` when they have no sentences.
    - ``token_f1``: mean :func:`token_f1` over the questions of ``A`` with a non-empty
      reference; an abstained or failed question scores ``0.0`` whatever its text, so that
      abstaining never raises F1.
    - ``latency_p50_ms``/``latency_p95_ms``: per stage, :func:`percentile` over every result
      (``A`` and ``U``) that reports that stage.

    A rate or mean is ``None`` when its group is empty.
    """
    ans = [r for r in results if r.answerable]
    una = [r for r in results if not r.answerable]
    judged = [r for r in ans if r.relevant_docs]
    ranking = _ranking_means(judged)
    latency = _stage_latencies(results)
    return Summary(
        n_answerable=len(ans),
        n_unanswerable=len(una),
        recall_at_1=ranking.recall[1],
        recall_at_5=ranking.recall[5],
        recall_at_10=ranking.recall[10],
        recall_at_20=ranking.recall[20],
        mrr_at_10=ranking.mrr_at_10,
        ndcg_at_10=ranking.ndcg_at_10,
        answer_rate=answer_rate([r.status for r in ans]) if ans else None,
        abstain_rate=abstain_rate([r.status for r in una]) if una else None,
        citation_precision=_pooled_citation_precision(judged),
        supported_share=_supported_share([r for r in ans if r.answered]),
        token_f1=_mean([token_f1(r.answer, r.reference) if r.answered else 0.0 for r in ans if r.reference]),
        latency_p50_ms=latency.p50,
        latency_p95_ms=latency.p95,
    )


@dataclass(frozen=True)
class _RankingMeans:
    """The retrieval means of :func:`summarize` over the judged answerable questions."""

    recall: Mapping[int, float | None]  # k -> mean recall@k, for k in RECALL_KS
    mrr_at_10: float | None
    ndcg_at_10: float | None


def _ranking_means(judged: Sequence[QuestionResult]) -> _RankingMeans:
    return _RankingMeans(
        recall={k: _mean([recall_at_k(r.retrieved_docs, r.relevant_docs, k) for r in judged]) for k in RECALL_KS},
        mrr_at_10=_mean([mrr_at_k(r.retrieved_docs, r.relevant_docs, 10) for r in judged]),
        ndcg_at_10=_mean([ndcg_at_k(r.retrieved_docs, r.relevant_docs, 10) for r in judged]),
    )


def _pooled_citation_precision(judged: Sequence[QuestionResult]) -> float | None:
    """``Σ relevant citations / Σ citations`` (micro average: a question with more citations
    weighs more, unlike a mean of :func:`citation_precision`)."""
    n_cites = sum(len(r.cited_docs) for r in judged)
    n_hit = sum(1 for r in judged for d in r.cited_docs if d in set(r.relevant_docs))
    return n_hit / n_cites if n_cites else None


def _supported_share(answered: Sequence[QuestionResult]) -> float | None:
    """Supported sentences over all sentences, pooled by sentence."""
    total = sum(r.total_sentences for r in answered)
    return sum(r.supported_sentences for r in answered) / total if total else None


@dataclass(frozen=True)
class _StageLatencies:
    p50: Mapping[str, float]  # stage -> ms
    p95: Mapping[str, float]


def _stage_latencies(results: Sequence[QuestionResult]) -> _StageLatencies:
    """Per stage, the 50th and 95th percentile over every result that reports the stage."""
    stages: dict[str, list[float]] = {}
    for r in results:
        for stage, ms in r.latency_ms.items():
            stages.setdefault(stage, []).append(float(ms))
    return _StageLatencies(
        p50={s: float(np.percentile(ms, 50)) for s, ms in stages.items()},
        p95={s: float(np.percentile(ms, 95)) for s, ms in stages.items()},
    )
