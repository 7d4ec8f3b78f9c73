"""The engine: one per process, holding the store (embedded Qdrant is opened only to write, or
to read a collection without a query snapshot), the ONNX encoder, the search-index cache and one
generator per LLM endpoint.

``Engine.stream()`` yields the event contract and ``Engine.ask()`` returns the final
:class:`~ragcore.types.Answer`; the stages themselves are in ``answering.py``. For LlamaIndex
code, :meth:`Engine.retriever_for` gives the collection's ``BaseRetriever``.
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np

from ragcore.abstain.answerability import Support, assess, unseen_words
from ragcore.abstain.coverage import uncovered_subjects
from ragcore.engine.answerer import Answerer, Resources
from ragcore.abstain.autocalibrate import AbstainBarInfo, bar_info, ensure_auto_calibration
from ragcore.citations import SupportScorer
from ragcore.settings.config import RagcoreSettings
from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.engine.followup import resolve_offline
from ragcore.ingest.writer import UPLOAD_ROOT, Progress, SourceFile, discover, ingest
from ragcore.retrieval import HybridSearch, apply_cuts
from ragcore.retrieval.cutrules import EVIDENCE_PER_DOC
from ragcore.engine.stages import AskRequest, ContextMode, SelectionInput, selection_evidence
from ragcore.storage.store import Store
from ragcore.abstain.topics import TopicIndex, TopicMatch
from ragcore.types import Answer, Chunk, CollectionInfo, Event, IngestReport, RetrievalResult

if TYPE_CHECKING:
    from ragcore.llamaindex.retriever import HybridRetriever

AskMode = ContextMode  # the first version's name
__all__ = ["AskMode", "ContextMode", "Engine", "SelectionInput", "selection_evidence"]


class Engine:
    def __init__(
        self,
        settings: RagcoreSettings,
        *,
        store: Store | None = None,
        encoder: OnnxMiniLM | None = None,
        generator_factory: Callable[[RagcoreSettings], Any] | None = None,
    ) -> None:
        self.settings = settings
        self.encoder = encoder or OnnxMiniLM(batch_size=settings.embed_batch_size)
        self.store = store or Store(settings, embed_headings=self.encoder.encode_uncached)
        self.retriever = HybridSearch(self.store, self.encoder)
        self._generator_factory = generator_factory
        self._scorer = SupportScorer(encoder=self.encoder.encode)
        self._generators: dict[Any, Any] = {}
        self._topics: dict[str, tuple[str, TopicIndex]] = {}
        self._topics_lock = threading.Lock()

    def vector_store(self, collection: str | None = None):
        """The collection as a LlamaIndex vector store: ``SnapshotVectorStore`` on the embedded store
        (queries from its snapshot, writes to Qdrant Edge), LlamaIndex's ``QdrantVectorStore`` on a
        Qdrant server or in local mode."""
        name = collection or self.settings.collection
        if self.store.is_edge:
            from ragcore.llamaindex.vector_store import SnapshotVectorStore

            return SnapshotVectorStore(self.store, name)
        return self.store.vector_store(name)

    def close(self) -> None:
        for gen in self._generators.values():
            getattr(gen, "close", lambda: None)()
        self._generators.clear()
        self.store.close()

    # ------------------------------------------------------------------ corpus

    def ingest(
        self, paths: Sequence[str | Path], collection: str | None = None, *, prune: bool = True,
        progress: Progress | None = None, settings: RagcoreSettings | None = None, calibrate: bool = True,
    ) -> IngestReport:
        """Ingest files or folders; ``calibrate``: set the label-free abstain bar when the corpus changed."""
        s = settings or self.settings
        name = collection or s.collection
        root, files = discover([Path(p) for p in paths])
        # one write session: embedded Qdrant is opened (and its folder locked) once, and released after
        with self.store.session():
            report = ingest(files, root=str(root), collection=name, store=self.store, encoder=self.encoder,
                            settings=s, prune=prune, progress=progress)
            self.retriever.invalidate(name)
            if calibrate:  # a new corpus version gets its own label-free abstain bar (autocalibrate.py)
                ensure_auto_calibration(self, name, s)
        return report

    def ingest_uploads(
        self, files: Sequence[tuple[str, bytes]], collection: str | None = None, *, progress: Progress | None = None,
        settings: RagcoreSettings | None = None, calibrate: bool = True,
    ) -> IngestReport:
        """Add uploaded files (name, bytes) to a collection; other documents stay."""
        s = settings or self.settings
        name = collection or s.collection
        sources = [SourceFile(rel=Path(n).name, data=d) for n, d in files]
        with self.store.session():
            report = ingest(sources, root=UPLOAD_ROOT, collection=name, store=self.store, encoder=self.encoder,
                            settings=s, prune=False, progress=progress)
            self.retriever.invalidate(name)
            if calibrate:
                ensure_auto_calibration(self, name, s)
        return report

    def drop(self, collection: str) -> None:
        """Delete a collection and its metadata (the next ingest starts from scratch)."""
        self.store.drop(collection)
        self.retriever.invalidate(collection)
        with self._topics_lock:
            self._topics.pop(collection, None)

    def collections(self) -> list[CollectionInfo]:
        return [self.store.info(n) for n in self.store.collection_names()]

    def documents(self, collection: str | None = None) -> list[tuple[str, int]]:
        """(path, chunk count) of every document in a collection."""
        name = collection or self.settings.collection
        snap = self.store.snapshot(name) if self.store.exists(name) else None
        if snap is not None:  # the index's document column, not a scan of every chunk
            paths, doc_of = self.retriever.index(name).documents()
            return [(p, int(n)) for p, n in zip(paths, np.bincount(doc_of, minlength=len(paths))) if n]
        paths = [r.path for r in self.store.point_refs(name)]
        counts: dict[str, int] = {}
        for path in paths:
            counts[path] = counts.get(path, 0) + 1
        return sorted(counts.items())

    def document_chunks(self, path: str, collection: str | None = None) -> list[Chunk]:
        return self.store.chunks_of(collection or self.settings.collection, path)

    # ------------------------------------------------------------------ retrieval

    def retrieve(self, question: str, settings: RagcoreSettings | None = None, collection: str | None = None) -> RetrievalResult:
        s = settings or self.settings
        return self.retriever.search(collection or s.collection, question, s)

    def warm(self, collection: str | None = None) -> None:
        """Open what a question on ``collection`` reads first (its search index and its section
        headings), e.g. while the model loads in the background. A missing collection is left for
        the question to report."""
        name = collection or self.settings.collection
        try:
            if self.store.exists(name):
                self.retriever.index(name)
                self.topic_index(name)
        except Exception:  # noqa: BLE001 - only a head start: the question meets the same problem and reports it
            pass

    def topic_index(self, collection: str) -> TopicIndex:
        """The collection's section headings with their vectors: from its query snapshot (swapped
        when a new one is published), else rebuilt from Qdrant when the corpus version changes."""
        snap = self.store.snapshot(collection)
        key = f"snapshot:{snap.version}" if snap is not None else \
            f"qdrant:{self.store.read_meta(collection).get('corpus_version')}"
        with self._topics_lock:
            hit = self._topics.get(collection)
            if hit is None or hit[0] != key:
                idx = TopicIndex.from_snapshot(snap, self.store, self.encoder) if snap is not None else \
                    TopicIndex.build(self.store.section_refs(collection), self.store, self.encoder)
                hit = (key, idx)
                self._topics[collection] = hit
            return hit[1]

    def abstain_bar(self, settings: RagcoreSettings | None = None, collection: str | None = None) -> tuple[float, str]:
        """The bar in force and where it comes from: "calibrated on <data set>" (labelled),
        "calibrated without labels on this corpus (…)" (autocalibrate.py) or "settings"."""
        info = self.abstain_bar_info(collection, settings)
        return info.value, info.description

    def abstain_bar_info(self, collection: str | None = None, settings: RagcoreSettings | None = None) -> AbstainBarInfo:
        """The bar in force with its source, method and expected answer/abstain rates."""
        s = settings or self.settings
        return bar_info(self.store.read_meta(collection or s.collection), s)

    def support(self, question: str, settings: RagcoreSettings | None = None, collection: str | None = None) -> Support:
        """The corpus-mode support score of a question, without composing an answer."""
        s = settings or self.settings
        name = collection or s.collection
        result = self.retriever.search(name, question, s)
        return assess("corpus", question, result.candidates, self.closest_topic(question, s, name), None)

    def unseen_words(self, question: str, collection: str | None = None) -> tuple[str, ...]:
        """The question's rare words that no chunk of the collection contains (answerability.py)."""
        return unseen_words(question, has_term=self._has_term(collection), is_common=self.encoder.in_vocabulary)

    def uncovered_subjects(self, question: str, collection: str | None = None, skip: Sequence[str] = ()) -> tuple[str, ...]:
        """The question's named subjects that no chunk of the collection mentions (coverage.py)."""
        return uncovered_subjects(question, has_term=self._has_term(collection), is_common=self.encoder.in_vocabulary,
                                  skip=skip)

    def _has_term(self, collection: str | None) -> Callable[[Sequence[str]], bool]:
        """Whether any chunk of the collection holds any of these BM25 terms."""
        name = collection or self.settings.collection
        if self.store.is_embedded:
            return self.retriever.index(name).has_any_term
        from ragcore.retrieval.pools import server_has_terms  # a server searches: ask it rather than load the collection

        return lambda terms: server_has_terms(self.store.client, name, terms)

    def closest_topic(self, question: str, settings: RagcoreSettings | None = None, collection: str | None = None) -> TopicMatch | None:
        s = settings or self.settings
        q = self.encoder.encode([question])[0]  # cached: retrieval embedded the same text
        return self.topic_index(collection or s.collection).best(q, s.path_filter)

    @staticmethod
    def recut(result: RetrievalResult, *, top_k: int, threshold: float, dedupe: bool,
              per_doc: int = EVIDENCE_PER_DOC) -> RetrievalResult:
        """Move top-K / threshold / dedupe over an existing pool without querying again."""
        return replace(result, candidates=apply_cuts(result.candidates, top_k=top_k, threshold=threshold, dedupe=dedupe,
                                                          per_doc=per_doc))

    def retriever_for(self, collection: str | None = None, settings: RagcoreSettings | None = None) -> HybridRetriever:
        """The collection's hybrid retriever as a LlamaIndex ``BaseRetriever`` (returns the ranked pool;
        add ragcore's cut post-processors and ``CitationNumberer`` after it)."""
        s = settings or self.settings
        from ragcore.llamaindex.retriever import HybridRetriever  # LlamaIndex loads here, not on the question path

        return HybridRetriever(self.retriever, collection or s.collection, s)

    # ------------------------------------------------------------------ answering

    def ask(self, question: str, **kwargs: Any) -> Answer:
        answer: Answer | None = None
        for ev in self.stream(question, **kwargs):
            if ev.type == "done":
                answer = ev.data["answer"]
        assert answer is not None
        return answer

    def stream(
        self, question: str, *, collection: str | None = None, settings: RagcoreSettings | None = None,
        context: ContextMode = "corpus", selection: SelectionInput | str | None = None, selection_source: str | None = None,
        history: Sequence[tuple[str, str]] = (), cancel: threading.Event | None = None,
    ) -> Iterator[Event]:
        """Yield started → sources → token… → message → done (or error → done).

        Cancelling: set ``cancel`` (the app's Stop button) and the stream closes the LLM
        response and ends with ``done {status: cancelled}``; closing this generator (Ctrl-C
        in the CLI) closes the LLM response at once.
        """
        s = settings or self.settings
        if isinstance(selection, str):
            selection = SelectionInput(selection, selection_source)
        if selection is not None and context == "corpus":
            context = "both"
        req = AskRequest(question=question, context=context, collection=collection or s.collection, settings=s,
                         request_id=uuid.uuid4().hex[:12], selection=selection, history=tuple(history))
        return Answerer(self._resources()).stream(req, cancel)

    def _resources(self) -> Resources:
        return Resources(
            store=self.store, search=self.retriever, encoder=self.encoder, scorer=self._scorer,
            closest_topic=lambda q, s, name: self.closest_topic(q, s, name),
            abstain_bar=lambda s, name: self.abstain_bar(s, name),
            generator_for=self._generator, condense=self._standalone,
            unseen_words=lambda q, name: self.unseen_words(q, name),
            uncovered_subjects=lambda q, name, skip: self.uncovered_subjects(q, name, skip),
        )

    # ------------------------------------------------------------------ helpers

    def _standalone(self, question: str, history: Sequence[tuple[str, str]], s: RagcoreSettings) -> str:
        """A follow-up made standalone: condensed by the LLM when one is configured and
        ``conversation_turns`` > 0, else resolved offline from the previous question (followup.py)."""
        turns = list(history)[-s.conversation_turns :] if s.conversation_turns else []
        if turns and s.llm.configured:
            try:
                from ragcore.synthesis.llm.prompts import condense_messages

                out = self._generator(s).complete(condense_messages(question, turns)).strip()
                if out:
                    return out
            except Exception:
                pass  # a failed condense must not fail the question; resolve it offline instead
        return resolve_offline(question, list(history))

    def _generator(self, s: RagcoreSettings) -> Any:
        """One generator (and HTTP connection pool) per endpoint configuration."""
        gen = self._generators.get(s.llm)
        if gen is None:
            if self._generator_factory is not None:
                gen = self._generator_factory(s)
            else:
                from ragcore.synthesis.llm.generator import OpenAIGenerator

                gen = OpenAIGenerator(s.llm)
            self._generators[s.llm] = gen
        return gen
