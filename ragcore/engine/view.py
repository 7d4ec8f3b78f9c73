"""What answering a question on one collection reads, handed to the answerer by the Engine.

The answerer used to receive lambdas that called back into the Engine (its topic index, its bar,
its unseen-words check). A :class:`CollectionView` holds the parts themselves (the store, the
search, the topic indexes, the encoder), so the answerer and calibration call only downward:
engine → view → retrieval / abstain / storage.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Sequence

from ragcore.abstain.answerability import Support, question_support, unseen_words
from ragcore.abstain.autocalibrate import AbstainBarInfo, bar_info
from ragcore.abstain.coverage import phrase_covered, uncovered_subjects
from ragcore.abstain.topics import TopicIndex, TopicIndexes, TopicMatch
from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.retrieval import HybridSearch
from ragcore.settings.config import RagcoreSettings
from ragcore.storage.store import Store
from ragcore.types import CollectionInfo, RetrievalResult


@dataclass(frozen=True)
class CollectionView:
    name: str
    store: Store
    search: HybridSearch
    topics: TopicIndexes
    encoder: OnnxMiniLM  # the bundled MiniLM: its vocabulary says which words are common
    embedder: Any = None  # the collection's own embedding model (questions and headings); None: ``encoder``

    def info(self) -> CollectionInfo:
        return self.store.info(self.name)

    def retrieve(self, question: str, settings: RagcoreSettings) -> RetrievalResult:
        """The ranked pool, cut per ``settings``; it carries the question's vector."""
        return self.search.search(self.name, question, settings)

    def topic_index(self) -> TopicIndex:
        return self.topics.get(self.name)

    def closest_topic(self, question: str, q_vec: Any, path_filter: str | None) -> TopicMatch | None:
        """The heading closest to the question; ``q_vec``: its vector from retrieval (None: embed it)."""
        if q_vec is None:
            q_vec = (self.embedder or self.encoder).encode_queries([question])[0]
        return self.topic_index().best(q_vec, path_filter)

    def has_any_term(self, terms: Sequence[str]) -> bool:
        """Whether any chunk of the collection contains any of these BM25 terms (a binary search of
        the term columns each; a server is asked rather than the collection loaded)."""
        if self.store.is_embedded:
            return self.search.index(self.name).has_any_term(terms)
        from ragcore.retrieval.pools import server_has_terms

        return server_has_terms(self.store.client, self.name, terms)

    def unseen_words(self, question: str) -> tuple[str, ...]:
        """The question's rare words that no chunk of the collection contains (answerability.py)."""
        # the index is looked up once, not per word form (a word's forms are ~25 lookups)
        has_term = self.search.index(self.name).has_any_term if self.store.is_embedded else self.has_any_term
        return unseen_words(question, has_term=has_term, is_common=self.encoder.in_vocabulary)

    def uncovered_subjects(self, question: str, skip: Sequence[str] = ()) -> tuple[str, ...]:
        """The question's named subjects that no chunk of the collection mentions (coverage.py)."""
        if not self.store.is_embedded:  # a server: words only (a name's phrase would need its chunks' text)
            return uncovered_subjects(question, has_term=self.has_any_term, is_common=self.encoder.in_vocabulary, skip=skip)
        idx = self.search.index(self.name)
        covers = partial(phrase_covered, rows_with=idx.rows_with_any, text_of=lambda row: idx.chunks[int(row)].text)
        return uncovered_subjects(question, has_term=idx.has_any_term, is_common=self.encoder.in_vocabulary, skip=skip,
                                  covers_name=covers)

    def abstain_bar(self, settings: RagcoreSettings) -> AbstainBarInfo:
        """The bar in force with its source (labelled, label-free, settings) and expected rates."""
        return bar_info(self.store.read_meta(self.name), settings)

    def support(self, question: str, settings: RagcoreSettings, retrieval: RetrievalResult | None = None) -> Support:
        """The corpus-mode support score of a question, as an answer would be judged."""
        result = retrieval if retrieval is not None else self.retrieve(question, settings)
        return question_support("corpus", question, result, self, path_filter=settings.path_filter,
                                check_unseen=settings.abstain_unseen_words, check_uncovered=settings.abstain_uncovered)
