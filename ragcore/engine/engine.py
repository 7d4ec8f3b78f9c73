"""The engine: one per process, holding the store (embedded Qdrant is opened only to write, or
to read a collection without a query snapshot), the ONNX encoder, the search-index cache and one
generator per LLM endpoint.

``Engine.stream()`` yields the event contract and ``Engine.ask()`` returns the final
:class:`~ragcore.types.Answer`; the stages themselves are in ``answerer.py``, which receives a
per-collection view (``view.py``) and the generators (``generation.py``) and calls only downward.
For LlamaIndex code, :meth:`Engine.retriever_for` gives the collection's ``BaseRetriever``.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence

import numpy as np

from ragcore.abstain.answerability import Support
from ragcore.abstain.autocalibrate import AbstainBarInfo, ensure_auto_calibration
from ragcore.abstain.topics import TopicIndex, TopicIndexes, TopicMatch
from ragcore.abstain.verdicts import Verdict
from ragcore.citations import SupportScorer
from ragcore.encoders.base import CachingEncoder
from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.encoders.registry import EncoderPool, ingest_encoder, record_of
from ragcore.engine.answerer import Answerer, Resources
from ragcore.engine.generation import Generators
from ragcore.engine.gitingest import ingest_ref, record_folder_source
from ragcore.engine.stages import Question, ContextMode, SelectionInput, selection_evidence
from ragcore.engine.view import CollectionView
from ragcore.retrieval import HybridSearch, apply_cuts
from ragcore.retrieval.rerank import Rerankers
from ragcore.retrieval.cutrules import EVIDENCE_PER_DOC
from ragcore.retrieval.passage_seats import EVIDENCE_SEATS
from ragcore.settings.config import RagcoreSettings
from ragcore.storage.schema import StoreError, check_collection_name
from ragcore.storage.store import Store
from ragcore.types import Answer, Chunk, CollectionInfo, Event, IngestReport, RetrievalResult

# a listing waits this long for a collection that another process holds (then lists it as busy), not
# the writer's full wait: /v1/models answers while an ingest elsewhere builds a new collection
LIST_WAIT_S = 2.0

if TYPE_CHECKING:
    from ragcore.ingest.run import ChunkProgress, Progress
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
        # one encoder per embedding model; the bundled MiniLM (``encoder``) also scores support and composes
        self.encoders = EncoderPool(self.encoder)
        self.store = store or Store(settings, embed_headings=self.encoder.encode_uncached,
                                    embed_for_model=lambda rec: self.encoders.for_record(rec, self.settings).encode_uncached)
        self.hybrid_search = HybridSearch(self.store, self.encoder, encoder_for=self.embedder)
        self.topics = TopicIndexes(self.store, self.encoder, encoder_for=self.embedder)
        self.generators = Generators(generator_factory)
        # RAGCORE_RERANK=llm: one attempt, as the SDK's retry backoff would spend the rerank's whole timeout
        # on a server that is down and the note would blame the timeout; a failed rerank only keeps the fused order
        self.hybrid_search.rerankers = Rerankers(
            lambda s: self.generators.for_settings(s.with_(llm=replace(s.llm, max_retries=0))))
        self._scorer = SupportScorer(encoder=self.encoder.encode)

    @property
    def retriever(self) -> HybridSearch:
        """The old name of ``hybrid_search``, kept for callers written before the rename: it is not a
        LlamaIndex retriever (``retriever_for()`` returns that)."""
        return self.hybrid_search

    def vector_store(self, collection: str | None = None):
        """The collection as a LlamaIndex vector store: ``SnapshotVectorStore`` on the embedded store
        (queries from its snapshot, writes to Qdrant Edge), LlamaIndex's ``QdrantVectorStore`` on a
        Qdrant server or in local mode."""
        name = collection or self.settings.collection
        if self.store.is_edge:
            from ragcore.llamaindex.vector_store import SnapshotVectorStore

            return SnapshotVectorStore(self.store, name)
        return self.store.vector_store(name)

    def embedder(self, collection: str) -> CachingEncoder:
        """The embedding model ``collection`` was built with (its metadata's record; none: the bundled
        MiniLM). Questions on it always embed with it, whatever ``RAGCORE_EMBED_MODEL`` says now."""
        return self.encoders.for_record(record_of(self.store.read_meta(collection)), self.settings)

    def close(self) -> None:
        self.encoders.close()
        self.generators.close()
        self.store.close()

    def view(self, collection: str | None = None) -> CollectionView:
        """What answering on ``collection`` reads (its search, topics, bar, unseen-words check)."""
        return CollectionView(collection or self.settings.collection, self.store, self.hybrid_search, self.topics,
                              self.encoder, self.embedder(collection or self.settings.collection))

    # ------------------------------------------------------------------ corpus

    def ingest(
        self, paths: Sequence[str | Path], collection: str | None = None, *, prune: bool = True,
        progress: Progress | None = None, settings: RagcoreSettings | None = None, calibrate: bool = True,
        rebuild: bool = False, chunk_progress: ChunkProgress | None = None,
    ) -> IngestReport:
        """Ingest files or folders; ``calibrate``: set the label-free abstain bar when the corpus changed;
        ``rebuild``: drop the collection first (to build it again, e.g. with another embedding model);
        ``chunk_progress(written, queued)`` hears each written batch of chunks."""
        from ragcore.ingest.run import discover, ingest  # writers only: a question never loads the ingest pipeline

        s = settings or self.settings
        name = collection or s.collection
        check_collection_name(name)  # before any folder is made for it: a clear message, not OSError 36
        root, files = discover([Path(p) for p in paths])
        if rebuild and self.store.exists(name):
            self.drop(name)
        encoder = self._loaded_encoder(name, s)
        # one write session: embedded Qdrant is opened (and its folder locked) once, and released after
        with self.store.session():
            report = ingest(files, root=str(root), collection=name, store=self.store, encoder=encoder,
                            settings=s, prune=prune, progress=progress, chunk_progress=chunk_progress)
            source = record_folder_source(self, name, root)  # a folder in a work tree: its HEAD and dirty state
            return replace(self._after_write(name, s, calibrate, report, progress, len(files)), source=source)

    def ingest_ref(self, repository: str | Path, ref: str, collection: str | None = None, **kw: Any) -> IngestReport:
        """Ingest the tree of a git ref (branch, tag, commit) from git objects; a re-ingest reads only
        the files changed since the collection's commit (engine/gitingest.py has the keywords)."""
        return ingest_ref(self, repository, ref, collection, **kw)

    def ingest_uploads(
        self, files: Sequence[tuple[str, bytes]], collection: str | None = None, *, progress: Progress | None = None,
        settings: RagcoreSettings | None = None, calibrate: bool = True, chunk_progress: ChunkProgress | None = None,
    ) -> IngestReport:
        """Add uploaded files (name, bytes) to a collection; other documents stay."""
        from ragcore.ingest.run import UPLOAD_ROOT, SourceFile, ingest

        s = settings or self.settings
        name = collection or s.collection
        check_collection_name(name)  # before any folder is made for it: a clear message, not OSError 36
        sources = [SourceFile(rel=Path(n).name, data=d) for n, d in files]
        encoder = self._loaded_encoder(name, s)
        with self.store.session():
            report = ingest(sources, root=UPLOAD_ROOT, collection=name, store=self.store,
                            encoder=encoder, settings=s, prune=False, progress=progress, chunk_progress=chunk_progress)
            return self._after_write(name, s, calibrate, report, progress, len(sources))

    def _ingest_encoder(self, name: str, s: RagcoreSettings) -> CachingEncoder:
        """``s.embed_model`` for a new collection, the collection's own model for an existing one
        (ModelMismatch when they differ: registry.ingest_encoder)."""
        meta = self.store.read_meta(name) if self.store.exists(name) else {}
        return ingest_encoder(self.encoders, name, meta, s)

    def _loaded_encoder(self, name: str, s: RagcoreSettings) -> CachingEncoder:
        """The ingest's encoder with its model loaded before the write session: the store stays free for
        readers of other processes while the model loads (seconds; far more on a busy machine)."""
        encoder = self._ingest_encoder(name, s)
        encoder.load_in_background()
        encoder.settle()
        return encoder

    def _after_write(
        self, name: str, s: RagcoreSettings, calibrate: bool, report: IngestReport, progress: Progress | None,
        files: int,
    ) -> IngestReport:
        """Calibrate, as a named step, and report the ingest's whole time: the report's ``seconds`` left
        the calibration out (5,206 s reported for ~5,552 s seen on a 772-page corpus)."""
        started = time.perf_counter()
        self.hybrid_search.invalidate(name)
        if calibrate:  # a new corpus version gets its own label-free abstain bar (autocalibrate.py)
            if progress:
                progress(files, files, "calibrating the abstain bar")
            ensure_auto_calibration(self, name, s)
        return replace(report, seconds=report.seconds + time.perf_counter() - started)

    def drop(self, collection: str) -> None:
        """Delete a collection and its metadata (the next ingest starts from scratch)."""
        self.store.drop(collection)
        self.hybrid_search.invalidate(collection)
        self.topics.invalidate(collection)

    def repair_snapshots(self, collection: str | None = None, failed: dict[str, str] | None = None) -> list[str]:
        """The explicit repair step: rewrite the query snapshot of ``collection`` (else of every
        collection) that is missing, stale (a writer died) or damaged, from Qdrant. A writer's step:
        it waits for another writer's lock. Returns the collections whose snapshot was rewritten.
        Reads never do this themselves; they answer from Qdrant until a writer or this step has run.
        ``failed``: collect what could not be repaired (damaged in the store: name -> what to run)
        instead of raising, so one damaged collection does not stop the others' repair."""
        names = [collection] if collection else self.store.collection_names()
        done = []
        for n in names:
            try:
                if self.store.refresh_snapshot(n):
                    done.append(n)
                    self.hybrid_search.invalidate(n)
            except StoreError as exc:  # damage in one collection: its snapshot is left as it was
                if failed is None:
                    raise
                failed[n] = str(exc)
        return done

    def collections(self, wait_s: float | None = LIST_WAIT_S) -> list[CollectionInfo]:
        """Every collection with its stats. A damaged one (or, past ``wait_s``, one without a snapshot while
        another process holds the store; None: a reader's full wait) is listed with its ``problem`` and
        never hides the others: the listing, /api/collections and /v1/models keep working (Store.info)."""
        return [self.store.info(n, wait_s=wait_s) for n in self.store.collection_names()]

    def documents(self, collection: str | None = None) -> list[tuple[str, int]]:
        """(path, chunk count) of every document in a collection."""
        name = collection or self.settings.collection
        snap = self.store.snapshot(name) if self.store.exists(name) else None
        if snap is not None:  # the index's document column, not a scan of every chunk
            paths, doc_of = self.hybrid_search.index(name).documents()
            return [(p, int(n)) for p, n in zip(paths, np.bincount(doc_of, minlength=len(paths))) if n]
        if self.store.first_write_elsewhere(name):
            return []  # its first ingest runs in another process: nothing published yet
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
        return self.hybrid_search.search(collection or s.collection, question, s)

    def warm(self, collection: str | None = None) -> None:
        """Open what a question on ``collection`` reads first (its search index and its section
        headings), e.g. while the model loads in the background. A missing collection is left for
        the question to report."""
        name = collection or self.settings.collection
        try:
            if self.store.exists(name):
                self.hybrid_search.index(name)
                self.topic_index(name)
        except Exception:  # noqa: BLE001 - only a head start: the question meets the same problem and reports it
            pass

    def topic_index(self, collection: str) -> TopicIndex:
        """The collection's section headings with their vectors: from its query snapshot (swapped
        when a new one is published), else rebuilt from Qdrant when the corpus version changes."""
        return self.topics.get(collection)

    def abstain_bar_info(self, collection: str | None = None, settings: RagcoreSettings | None = None) -> AbstainBarInfo:
        """The bar in force with its source ("calibrated on <data set>" labelled, "calibrated without
        labels on this corpus (…)" (autocalibrate.py) or "settings"), method and expected rates."""
        s = settings or self.settings
        return self.view(collection or s.collection).abstain_bar(s)

    def abstain_bar(self, settings: RagcoreSettings | None = None, collection: str | None = None) -> tuple[float, str]:
        """``abstain_bar_info`` as (value, description): the older form, which the app's pages use."""
        info = self.abstain_bar_info(collection, settings)
        return info.value, info.description

    def support(self, question: str, settings: RagcoreSettings | None = None, collection: str | None = None) -> Support:
        """The corpus-mode support score of a question, without composing an answer: the same
        function an answer is judged by (``answerability.question_support``), for calibration."""
        s = settings or self.settings
        return self.view(collection or s.collection).support(question, s)

    def unseen_words(self, question: str, collection: str | None = None) -> tuple[str, ...]:
        """The question's rare words that no chunk of the collection contains (answerability.py)."""
        return self.view(collection).unseen_words(question)

    def closest_topic(self, question: str, settings: RagcoreSettings | None = None, collection: str | None = None) -> TopicMatch | None:
        s = settings or self.settings
        return self.view(collection or s.collection).closest_topic(question, None, s.path_filter)

    @staticmethod
    def recut(result: RetrievalResult, *, top_k: int, threshold: float, dedupe: bool,
              per_doc: int = EVIDENCE_PER_DOC, rerank_threshold: float = 0.0, seats: int = EVIDENCE_SEATS) -> RetrievalResult:
        """Move top-K / threshold / dedupe / the per-document cap / the passage seats over an existing pool without querying again."""
        return replace(result, candidates=apply_cuts(result.candidates, top_k=top_k, threshold=threshold, dedupe=dedupe,
                                                     per_doc=per_doc, rerank_threshold=rerank_threshold, seats=seats))

    @classmethod
    def recut_as(cls, result: RetrievalResult, settings: RagcoreSettings) -> RetrievalResult:
        """The cuts ``settings`` give, over an existing pool: every cut setting the answer's own
        retrieval applies (HybridSearch), so the lab keeps what the answer would keep."""
        return cls.recut(result, top_k=settings.top_k, threshold=settings.threshold, dedupe=settings.dedupe,
                         per_doc=settings.evidence_per_doc, rerank_threshold=settings.rerank_threshold,
                         seats=settings.evidence_seats)

    def retriever_for(self, collection: str | None = None, settings: RagcoreSettings | None = None) -> HybridRetriever:
        """The collection's hybrid retriever as a LlamaIndex ``BaseRetriever`` (returns the ranked pool;
        add ragcore's cut post-processors and ``CitationNumberer`` after it)."""
        s = settings or self.settings
        from ragcore.llamaindex.retriever import HybridRetriever  # LlamaIndex loads here, not on the question path

        return HybridRetriever(self.hybrid_search, collection or s.collection, s)

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
        req = Question(question=question, context=context, collection=collection or s.collection, settings=s,
                         request_id=uuid.uuid4().hex[:12], selection=selection, history=tuple(history))
        return self._answerer(req.collection).stream(req, cancel)

    def abstain_signals(self, question: str, *, collection: str | None = None,
                        settings: RagcoreSettings | None = None) -> tuple[Verdict, ...]:
        """Each abstain signal's line for ``question`` in corpus mode, up to the first veto (the lab shows
        them): retrieval and the assess stage as an answer runs them; nothing is generated."""
        s = settings or self.settings
        req = Question(question=question, context="corpus", collection=collection or s.collection, settings=s,
                         request_id=uuid.uuid4().hex[:12])
        answerer = self._answerer(req.collection)
        return answerer.assess(req, answerer.retrieve(req)).signals

    def _answerer(self, collection: str) -> Answerer:
        return Answerer(Resources(view=self.view(collection), encoder=self.encoder, scorer=self._scorer,
                                  generators=self.generators))
