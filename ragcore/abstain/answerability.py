"""Should the engine answer at all? One support score, compared with ``abstain_bar``.

For the corpus the score weighs three signals of the question against the corpus:

* **evidence** (0.4): the mean cosine of the closest ``EVIDENCE_N`` chunks, over the whole
  candidate pool before top-K and the threshold, so the live sliders do not move the decision;
* **topic** (0.4): the cosine of the corpus's closest section heading (``topics.py``): does the
  corpus have a section *about* this?
* **lexical** (0.2): the share of the question's content words found in the top-ranked chunk
  (text and heading path; ranked as a passage, before documents are ranked). MiniLM reads identifiers such as ``AUTH_USER_MODEL`` poorly; the
  words themselves do not lie.

On django-docs-qa the two cosines averaged separate answerable from unanswerable questions
better than either alone or than the best evidence sentence (the previous rule); the lexical
part adds a little and keeps identifier questions answered. The 0.4/0.4/0.2 split and the bar
were chosen on that data set (``bench/results/eval-django-analysis.md``, with leave-one-out
numbers).

Apart from the score, a question that names a rare word no chunk contains ("Does Flask support
websockets?" on docs that never say "websockets") is not answered in corpus mode: the closest
passages can score well on the question's other words while the thing asked about is absent.
Rare means not a whole word of the embedding model's vocabulary (30,522 WordPiece entries), so
common words a corpus happens not to use ("summer", "explain") are left to the score: they may
be paraphrases; another form of a word the corpus uses ("tokenized" for "tokenizer") counts as
used. A misspelt word ("confgure") is rare too, and the reason names it. On the Django
and Git sets no answerable question has such a word; 4 of 40 and 12 of 31 unanswerable ones do
(all of which the score already declined); ``abstain_unseen_words`` turns the rule off.

For a selection (selected-text mode) the score is the best sentence score of the extractive
composer: there are no headings, and the user has already chosen the passage. When the composer
judged the question against the selection (``selection_support.py``), that verdict decides
instead of the bar: a selection is declined only when it is clearly about something else, and in
"both" mode a selection the question is about carries the answer (else the corpus's score counts).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, replace
from typing import Any, Callable, Literal, Mapping, Protocol, Sequence

from ragcore.encoders.sparse import tokenize
from ragcore.textutil import content_terms
from ragcore.abstain.selection_support import SelectionFit
from ragcore.abstain.topics import TopicMatch
from ragcore.types import Candidate, RetrievalResult

EVIDENCE_N = 5
WEIGHTS = {"evidence": 0.4, "topic": 0.4, "lexical": 0.2}

Basis = Literal["corpus", "selection", "none"]
# a plain word of 4+ letters, not part of an identifier (settings.X, run_x(), x_y): identifiers are
# split into terms by BM25 and judged by the other signals
_WORD = re.compile(r"(?<![\w.])[^\W\d_]{4,}(?![\w(]|\.\w)")
# BM25's stemmer is light ("tokenized" -> "tokeniz", "tokenizer" stays): a word counts as seen when
# any form of its root is, so the corpus's "tokenizer" covers a question's "tokenized"
_SUFFIXES = ("", "e", "s", "es", "ed", "ing", "er", "ers", "or", "ize", "ise", "ized", "izer", "ization", "ation",
             "ion", "ions", "al", "ally", "ly", "ment", "ness", "ity", "able", "ive")


@dataclass(frozen=True)
class Support:
    score: float
    basis: Basis
    evidence_cosine: float | None = None  # mean cosine of the closest chunks
    topic: TopicMatch | None = None
    lexical: float | None = None  # share of the question's content words in the top chunk
    best_sentence: float | None = None  # the composer's best score among the selection's sentences
    unseen: tuple[str, ...] = ()  # rare question words no chunk of the corpus contains (abstains)
    uncovered: tuple[str, ...] = ()  # subjects and plain words the corpus never mentions, answered with a hedge (coverage.py)
    selection_fit: Mapping[str, Any] | None = None  # SelectionFit.as_dict() with its "reason" (decides)

    def as_dict(self) -> dict[str, Any]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}

    def explain(self, bar: float) -> str:
        """One line for the answer's guardrail actions: the score, its parts and the bar."""
        return describe(self.as_dict(), bar)


def describe(support: Mapping[str, Any], bar: float) -> str:
    """``Support.explain`` for the dict form an Answer's metadata carries (``as_dict``)."""
    rel = "<" if support["score"] < bar else "≥"
    parts = []
    if support.get("evidence_cosine") is not None:
        parts.append(f"closest passages {support['evidence_cosine']:.2f}")
    if support.get("topic"):
        t = support["topic"]
        parts.append(f"closest section “{t['heading']}” in {t['path']} {t['score']:.2f}")
    if support.get("lexical") is not None:
        parts.append(f"question words in the top passage {support['lexical']:.0%}")
    if support.get("basis") == "selection" and support.get("best_sentence") is not None:
        parts.append(f"best selected sentence {support['best_sentence']:.2f}")
    detail = f" ({'; '.join(parts)})" if parts else ""
    line = f"support {support['score']:.2f} {rel} abstain bar {bar:.2f}{detail}"
    if (support.get("selection_fit") or {}).get("reason"):
        line += "; " + support["selection_fit"]["reason"]
    if support.get("unseen"):
        line += "; the corpus never mentions " + ", ".join(f"“{w}”" for w in support["unseen"])
    if support.get("uncovered"):  # answered all the same (coverage.judge_coverage): the caveat stays visible
        line += "; answered with a hedge: the corpus never mentions " + ", ".join(f"“{w}”" for w in support["uncovered"])
    return line


def hedge_note(support: Mapping[str, Any]) -> str | None:
    """The caveat an answer carries when the question names what the corpus never mentions."""
    if not support.get("uncovered"):
        return None
    names = ", ".join(f"“{w}”" for w in support["uncovered"])
    return f"hedged: the corpus never mentions {names}; the answer is about the rest of the question"


def unseen_words(question: str, *, has_term: Callable[[tuple[str, ...]], bool],
                 is_common: Callable[[str], bool]) -> tuple[str, ...]:
    """The question's rare plain words that the corpus never uses, in question order, each once.

    ``has_term(terms)``: whether any chunk contains any of these BM25 terms; a word is looked up as
    the forms of its root (``word_forms``), not the parts BM25 also splits a CamelCase word into:
    a corpus that says "graph" does not mention "GraphQL".
    ``is_common(word)``: whether the word is a whole word of the model's vocabulary."""
    return absent_in_corpus(question, has_term, lambda word: not is_common(word))


def absent_in_corpus(question: str, has_term: Callable[[tuple[str, ...]], bool],
                     judged: Callable[[str], bool]) -> tuple[str, ...]:
    """The question's plain words that ``judged`` keeps and no chunk holds in any form (``has_term``)."""
    out: dict[str, str] = {}  # lower case -> the word as the question wrote it
    for m in _WORD.finditer(question):
        word = m.group(0)
        if word.lower() in out or not judged(word):  # the cheap tests first: forms cost ~25 lookups
            continue
        terms = word_forms(word)
        if terms and not has_term(terms):
            out[word.lower()] = word
    return tuple(out.values())


def word_forms(word: str) -> tuple[str, ...]:
    """The BM25 terms of ``word`` and of the other forms of its root (see ``_SUFFIXES``)."""
    first = tuple(tokenize(word))[:1]
    if not first:
        return ()
    low = word.lower()
    roots = {low, *(low[: -len(s)] for s in _SUFFIXES if s and low.endswith(s) and len(low) - len(s) >= 4)}
    forms = {t for r in roots for s in _SUFFIXES for t in tokenize(r + s)[:1]}
    return tuple(sorted(forms | set(first)))


def evidence_cosine(candidates: Sequence[Candidate], n: int = EVIDENCE_N) -> float | None:
    cos = sorted((c.dense_score for c in candidates if c.dense_score is not None and c.origin == "corpus"), reverse=True)
    return sum(cos[:n]) / len(cos[:n]) if cos else None


def lexical_coverage(question: str, candidates: Sequence[Candidate]) -> float | None:
    terms = content_terms(question)
    ranked = [c for c in candidates if c.origin == "corpus"]
    if not terms or not ranked:
        return None
    # the chunk the passages' own ranking puts first: ranking documents (documents.py) reorders the
    # evidence, but whether the corpus answers must not depend on how its pages are ordered
    top = min(ranked, key=lambda c: c.chunk_rank if c.chunk_rank is not None else c.rank)
    return len(terms & content_terms(f"{top.chunk.text} {' '.join(top.chunk.section)}")) / len(terms)


def corpus_support(question: str, candidates: Sequence[Candidate], topic: TopicMatch | None) -> Support:
    ev = evidence_cosine(candidates)
    lex = lexical_coverage(question, candidates)
    parts = {"evidence": ev, "topic": topic.score if topic else None, "lexical": lex}
    present = {k: v for k, v in parts.items() if v is not None}
    if not present:
        return Support(0.0, "none", ev, topic, lex)
    # a missing part (no headings, no content words) leaves the others' weights in proportion
    total = sum(WEIGHTS[k] for k in present)
    score = sum(WEIGHTS[k] * v for k, v in present.items()) / total
    return Support(score, "corpus", ev, topic, lex)


def assess(
    mode: str, question: str, candidates: Sequence[Candidate], topic: TopicMatch | None, best_selection: float | None,
    fit: SelectionFit | None = None,
) -> Support:
    """The support score for ``mode`` ("corpus", "selection" or "both").

    ``best_selection`` is the composer's best score among the selection's sentences; ``fit`` its
    verdict on whether the question is about the selection (then it decides, not the bar).
    """
    fit_d = {**fit.as_dict(), "reason": fit.reason} if fit is not None else None
    selection = Support(best_selection if best_selection is not None else 0.0, "selection", best_sentence=best_selection,
                        selection_fit=fit_d)
    if mode == "selection":
        return selection
    corpus = corpus_support(question, candidates, topic)
    if mode == "both" and (fit.on_topic if fit is not None else selection.score > corpus.score):
        return Support(selection.score, "selection", corpus.evidence_cosine, corpus.topic, corpus.lexical, best_selection,
                       selection_fit=fit_d)
    return corpus


def selection_decides(support: Support) -> bool:
    """Whether the selection verdict, not the bar, decides (selection basis, verdict known)."""
    return support.basis == "selection" and support.selection_fit is not None


class CorpusSignals(Protocol):
    """What the corpus side of the support score reads of a collection (``engine/view.py``)."""

    def closest_topic(self, question: str, q_vec: Any, path_filter: str | None) -> TopicMatch | None: ...

    def unseen_words(self, question: str) -> tuple[str, ...]: ...

    def uncovered_subjects(self, question: str, skip: Sequence[str]) -> tuple[str, ...]: ...


def question_support(
    mode: str, question: str, retrieval: RetrievalResult | None, corpus: CorpusSignals | None, *,
    path_filter: str | None, check_unseen: bool, best_selection: float | None = None, check_uncovered: bool = False,
    selection_fit: SelectionFit | None = None,
) -> Support:
    """The support score of a question, the one function both answers (``engine/answerer.py``) and
    calibration (``Engine.support``: ``autocalibrate.py``, ``eval/calibration.py``) call, so a
    calibrated bar is measured exactly as answers are judged.

    ``retrieval``: the question's retrieval (its candidates, and its query vector for the topic
    match); ``corpus``: the collection's headings and terms (None in selection mode);
    ``check_unseen``: settings.abstain_unseen_words (the rare-word rule, corpus basis only);
    ``check_uncovered``: settings.abstain_uncovered (named subjects no chunk mentions, recorded in
    ``uncovered``; coverage.judge_coverage weighs them once the bar is known)."""
    candidates = retrieval.candidates if retrieval is not None else ()
    topic = None
    if mode != "selection" and corpus is not None:
        q_vec = retrieval.query_vector if retrieval is not None else None
        topic = corpus.closest_topic(question, q_vec, path_filter)
    support = assess(mode, question, candidates, topic, best_selection, selection_fit)
    if support.basis == "corpus" and check_unseen and corpus is not None:
        support = replace(support, unseen=corpus.unseen_words(question))
    if support.basis == "corpus" and check_uncovered and corpus is not None:
        support = replace(support, uncovered=corpus.uncovered_subjects(question, support.unseen))
    return support
