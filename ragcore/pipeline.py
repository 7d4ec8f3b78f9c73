"""The orchestrator: ``Engine.stream()`` yields the event contract, ``Engine.ask()`` returns
the final :class:`~ragcore.types.Answer`.

One Engine per process holds the Qdrant client (embedded Qdrant locks its folder), the ONNX
encoder and the search-index cache; everything else is passed in per call.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Sequence

from .answerability import Support, assess
from .citations import SupportScorer, check_answer, evidence_from_candidates
from .config import RagcoreSettings
from .embeddings import OnnxMiniLM
from .guardrails import is_hedged, route_question
from .ingest.chunking import chunk_id as make_chunk_id
from .ingest.pipeline import UPLOAD_ROOT, Progress, SourceFile, discover, ingest
from .retrieval import Retriever, apply_cuts
from .store import Store
from .synthesis.extractive import ABSTAIN_TEXT, ExtractiveComposer
from .textutil import line_of_offset, sentence_spans
from .topics import TopicIndex, TopicMatch
from .types import (
    Answer, Candidate, Chunk, CollectionInfo, Event, Evidence, IngestReport, RetrievalResult, Validation,
)

ContextMode = Literal["corpus", "selection", "both"]

# sentences that legitimately carry no citation
_EXEMPT_PREFIXES = ("the corpus does not", "the evidence does not", "the selection does not", "i could not find")


def _exempt(sentence: str) -> bool:
    return sentence.strip().lower().startswith(_EXEMPT_PREFIXES)


@dataclass(frozen=True)
class SelectionInput:
    text: str
    source: str | None = None  # e.g. the file the passage was selected from
    start_line: int = 1  # line of the source where the selection starts
    page: int | None = None  # PDF page the passage is on


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
        self.store = store or Store(settings)
        self.encoder = encoder or OnnxMiniLM(batch_size=settings.embed_batch_size)
        self.retriever = Retriever(self.store, self.encoder)
        self._generator_factory = generator_factory
        self._scorer = SupportScorer(encoder=self.encoder.encode)
        self._generators: dict[Any, Any] = {}
        self._topics: dict[str, tuple[str | None, TopicIndex]] = {}
        self._topics_lock = threading.Lock()

    def close(self) -> None:
        for gen in self._generators.values():
            getattr(gen, "close", lambda: None)()
        self._generators.clear()
        self.store.close()

    # ------------------------------------------------------------------ corpus

    def ingest(
        self, paths: Sequence[str | Path], collection: str | None = None, *, prune: bool = True,
        progress: Progress | None = None, settings: RagcoreSettings | None = None,
    ) -> IngestReport:
        s = settings or self.settings
        name = collection or s.collection
        root, files = discover([Path(p) for p in paths])
        report = ingest(files, root=str(root), collection=name, store=self.store, encoder=self.encoder,
                        settings=s, prune=prune, progress=progress)
        self.retriever.invalidate(name)
        return report

    def ingest_uploads(
        self, files: Sequence[tuple[str, bytes]], collection: str | None = None, *, progress: Progress | None = None,
        settings: RagcoreSettings | None = None,
    ) -> IngestReport:
        """Add uploaded files (name, bytes) to a collection; other documents stay."""
        s = settings or self.settings
        name = collection or s.collection
        sources = [SourceFile(rel=Path(n).name, data=d) for n, d in files]
        report = ingest(sources, root=UPLOAD_ROOT, collection=name, store=self.store, encoder=self.encoder,
                        settings=s, prune=False, progress=progress)
        self.retriever.invalidate(name)
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
        counts: dict[str, int] = {}
        for ref in self.store.point_refs(collection or self.settings.collection):
            counts[ref.path] = counts.get(ref.path, 0) + 1
        return sorted(counts.items())

    def document_chunks(self, path: str, collection: str | None = None) -> list[Chunk]:
        return self.store.chunks_of(collection or self.settings.collection, path)

    # ------------------------------------------------------------------ retrieval

    def retrieve(self, question: str, settings: RagcoreSettings | None = None, collection: str | None = None) -> RetrievalResult:
        s = settings or self.settings
        return self.retriever.search(collection or s.collection, question, s)

    def topic_index(self, collection: str) -> TopicIndex:
        """The collection's section headings with their vectors, rebuilt when the corpus changes."""
        version = self.store.read_meta(collection).get("corpus_version")
        with self._topics_lock:
            hit = self._topics.get(collection)
            if hit is None or hit[0] != version:
                hit = (version, TopicIndex.build(self.store.section_refs(collection), self.store, self.encoder))
                self._topics[collection] = hit
            return hit[1]

    def abstain_bar(self, settings: RagcoreSettings | None = None, collection: str | None = None) -> tuple[float, str]:
        """The bar in force and where it comes from ("calibrated on …" or "settings")."""
        s = settings or self.settings
        if s.calibrated_bar:
            cal = self.store.read_meta(collection or s.collection).get("calibration") or {}
            if isinstance(cal.get("bar"), (int, float)):
                return float(cal["bar"]), f"calibrated on {cal.get('dataset', 'a data set')}"
        return s.abstain_bar, "settings"

    def support(self, question: str, settings: RagcoreSettings | None = None, collection: str | None = None) -> Support:
        """The corpus-mode support score of a question, without composing an answer."""
        s = settings or self.settings
        name = collection or s.collection
        result = self.retriever.search(name, question, s)
        return assess("corpus", question, result.candidates, self.closest_topic(question, s, name), None)

    def closest_topic(self, question: str, settings: RagcoreSettings | None = None, collection: str | None = None) -> TopicMatch | None:
        s = settings or self.settings
        q = self.encoder.encode([question])[0]  # cached: retrieval embedded the same text
        return self.topic_index(collection or s.collection).best(q, s.path_filter)

    @staticmethod
    def recut(result: RetrievalResult, *, top_k: int, threshold: float, dedupe: bool) -> RetrievalResult:
        """Move top-K / threshold / dedupe over an existing pool without querying again."""
        return replace(result, candidates=apply_cuts(result.candidates, top_k=top_k, threshold=threshold, dedupe=dedupe))

    # ------------------------------------------------------------------ answering

    def ask(self, question: str, **kwargs: Any) -> Answer:
        answer: Answer | None = None
        for ev in self.stream(question, **kwargs):
            if ev.type == "done":
                answer = ev.data["answer"]
        assert answer is not None
        return answer

    def stream(
        self,
        question: str,
        *,
        collection: str | None = None,
        settings: RagcoreSettings | None = None,
        context: ContextMode = "corpus",
        selection: SelectionInput | str | None = None,
        selection_source: str | None = None,
        history: Sequence[tuple[str, str]] = (),
        cancel: threading.Event | None = None,
    ) -> Iterator[Event]:
        """Yield started → sources → token… → message → done (or error → done).

        Cancelling: set ``cancel`` (the app's Stop button) and the stream closes the LLM
        response and ends with ``done {status: cancelled}``; closing this generator (Ctrl-C
        in the CLI) closes the LLM response at once.
        """
        s = settings or self.settings
        name = collection or s.collection
        rid = uuid.uuid4().hex[:12]
        seq = iter(range(1_000_000))
        t_start = time.perf_counter()

        def ev(event_type: str, /, **data: Any) -> Event:
            return Event(type=event_type, request_id=rid, seq=next(seq), ts=time.time(), data=data)  # type: ignore[arg-type]

        if isinstance(selection, str):
            selection = SelectionInput(selection, selection_source)
        if selection is not None and context == "corpus":
            context = "both"
        yield ev("started", question=question, context=context, collection=name)
        base_meta: dict[str, Any] = {"context": context, "collection": name, "config": s.public_dict(), "request_id": rid}

        def fail(message: str) -> Iterator[Event]:
            ans = Answer(question=question, answer="", status="error", metadata=base_meta, error_message=message)
            yield ev("error", message=message)
            yield ev("done", status="error", answer=ans)

        if not question or not question.strip():
            yield from fail("The question is empty: type a question first.")
            return
        if context in ("selection", "both") and (selection is None or len(selection.text.strip()) < s.min_selection_chars):
            got = 0 if selection is None else len(selection.text.strip())
            yield from fail(
                f"The selected passage is too short ({got} characters; at least {s.min_selection_chars} are needed). "
                "Select a longer passage, or ask in full-corpus mode."
            )
            return

        route = route_question(question, s.boundary_rules)
        if route.kind != "corpus":
            action = f"{route.kind}: {route.rule}" if route.rule else route.kind
            ans = Answer(
                question=question, answer=route.reply or "", status="ok", metadata={**base_meta, "generator": "router"},
                validation=Validation(guardrail_actions=(action,)),
            )
            yield ev("sources", evidence=(), candidates=())
            yield ev("message", text=ans.answer)
            yield ev("done", status="ok", answer=ans)
            return

        try:
            info = self.store.info(name) if context != "selection" else None
            if context != "selection" and (info is None or info.chunks == 0):
                yield from fail(f"The collection {name!r} is empty or does not exist. Ingest documents first: ragcore ingest PATH --collection {name}")
                return
            latency: dict[str, float] = {}
            standalone = self._standalone(question, history, s)
            evidence: list[Evidence] = []
            candidates: tuple[Candidate, ...] = ()
            if context in ("selection", "both"):
                assert selection is not None
                evidence.extend(selection_evidence(selection))
            if context in ("corpus", "both"):
                result = self.retriever.search(name, standalone, s)
                latency.update(result.latency_ms)
                candidates = result.candidates
                evidence.extend(evidence_from_candidates(candidates, result.rank_score_kind, start=len(evidence) + 1))
            meta = {
                **base_meta,
                "corpus_version": info.corpus_version if info else None,
                "built_at": info.built_at if info else None,
                "standalone_question": standalone if standalone != question else None,
                "chunks_retrieved": len(candidates),
                "chunks_used": len(evidence),
            }
            latency["sources"] = (time.perf_counter() - t_start) * 1e3
            yield ev("sources", evidence=tuple(evidence), candidates=candidates)

            t_gen = time.perf_counter()
            composer = ExtractiveComposer(self.encoder, max_sentences=s.max_answer_sentences)
            # a selection is judged by its sentences, so those modes compose first; in corpus
            # mode the decision needs no composing, and an abstention skips it (0.4–2 s)
            extractive = composer.compose(standalone, evidence) if context != "corpus" else None
            t_assess = time.perf_counter()
            topic = self.closest_topic(standalone, s, name) if context != "selection" else None
            support = assess(context, standalone, candidates, topic, extractive.best_selection if extractive else None)
            meta["best_support"] = round(support.score, 4)
            meta["support"] = support.as_dict()
            latency["assess"] = (time.perf_counter() - t_assess) * 1e3
            bar, bar_source = self.abstain_bar(s, name) if context != "selection" else (s.abstain_bar, "settings")
            meta["abstain_bar"] = {"value": bar, "source": bar_source}
            if extractive is None and evidence and support.score >= bar:
                extractive = composer.compose(standalone, evidence)
            nothing_to_quote = extractive is None or extractive.status == "abstained"
            abstain_reason = _abstain_reason(evidence, support, nothing_to_quote, bar, s)
            notes: list[str] = []
            actions: list[str] = []
            status = "ok"
            error_message = None
            generator_name = "extractive"
            text = ABSTAIN_TEXT if abstain_reason or extractive is None else extractive.text

            def cancelled_answer(text_so_far: str, generator: str) -> Answer:
                return Answer(question=question, answer=text_so_far, status="partial", evidence=tuple(evidence),
                              candidates=candidates, metadata={**meta, "generator": generator, "latency_ms": latency},
                              error_message="Cancelled by the user.")

            use_llm = s.llm.configured and not abstain_reason
            if abstain_reason:
                status = "abstained"
                actions.append(f"abstained: {abstain_reason}")
            if use_llm:
                gen_events, outcome = self._generate_llm(question, evidence, history, s, cancel, ev)
                yield from gen_events
                if outcome["cancelled"]:
                    yield ev("done", status="cancelled", answer=cancelled_answer(outcome["text"], outcome["name"]))
                    return
                generator_name = outcome["name"]
                meta["packing"] = outcome["packing"]
                if outcome["error"] is not None:
                    err = outcome["error"]
                    status = "partial"
                    error_message = f"{err.message} Showing the extractive answer from the same evidence instead."
                    notes.append(f"llm_error: {err.kind}")
                    generator_name = f"extractive (after {outcome['name']} failed)"
                    yield ev("error", message=err.message, kind=err.kind)
                else:
                    text = outcome["text"]
            if not use_llm or error_message:
                # the extractive (or abstain) text streams like any generator's
                sent: list[str] = []
                for tok in _pieces(text):
                    if cancel is not None and cancel.is_set():
                        yield ev("done", status="cancelled", answer=cancelled_answer("".join(sent), generator_name))
                        return
                    sent.append(tok)
                    yield ev("token", text=tok)
            latency["generate"] = (time.perf_counter() - t_gen) * 1e3

            t_val = time.perf_counter()
            # hedges are flagged on model-written text; extractive sentences are the documents' own words
            hedge = is_hedged if generator_name.startswith("openai") else None
            checked = check_answer(text, evidence, scorer=self._scorer, is_hedged=hedge, exempt=_exempt)
            validation = replace(checked.validation, guardrail_actions=tuple(actions), notes=tuple(notes))
            final_text = checked.text
            if generator_name.startswith("openai") and s.llm.unsupported_policy == "extractive" and validation.unsupported:
                assert extractive is not None  # the model answered, so the engine did not abstain
                final_text = extractive.text
                re_checked = check_answer(final_text, evidence, scorer=self._scorer, exempt=_exempt)
                validation = replace(
                    re_checked.validation,
                    guardrail_actions=(*actions, f"replaced the LLM answer ({len(validation.unsupported)} unsupported sentences) with the extractive answer"),
                    notes=tuple(notes),
                )
                checked = re_checked
            elif generator_name.startswith("openai") and validation.unsupported and status == "ok":
                status = "partial"  # annotated: the answer stands, flagged as not fully grounded
            latency["validate"] = (time.perf_counter() - t_val) * 1e3
            latency["total"] = (time.perf_counter() - t_start) * 1e3
            ans = Answer(
                question=question, answer=final_text, status=status,  # type: ignore[arg-type]
                citations=checked.citations if status != "abstained" else (), evidence=tuple(evidence),
                candidates=candidates, validation=validation,
                metadata={**meta, "generator": generator_name, "latency_ms": {k: round(v, 2) for k, v in latency.items()}},
                error_message=error_message,
            )
            yield ev("message", text=final_text)
            yield ev("done", status="ok" if status != "error" else "error", answer=ans)
        except Exception as exc:  # the caller never sees a traceback: it gets a message
            yield from fail(_friendly(exc))

    # ------------------------------------------------------------------ helpers

    def _standalone(self, question: str, history: Sequence[tuple[str, str]], s: RagcoreSettings) -> str:
        turns = list(history)[-s.conversation_turns :] if s.conversation_turns else []
        if not turns:
            return question
        if s.llm.configured:
            try:
                from .synthesis.prompts import condense_messages

                gen = self._generator(s)
                out = gen.complete(condense_messages(question, turns)).strip()
                return out or question
            except Exception:
                pass  # a failed condense must not fail the question; fall through
        return f"{turns[-1][0]} {question}"

    def _generator(self, s: RagcoreSettings) -> Any:
        """One generator (and HTTP connection pool) per endpoint configuration."""
        gen = self._generators.get(s.llm)
        if gen is None:
            if self._generator_factory is not None:
                gen = self._generator_factory(s)
            else:
                from .synthesis.openai_generator import OpenAIGenerator

                gen = OpenAIGenerator(s.llm)
            self._generators[s.llm] = gen
        return gen

    def _generate_llm(self, question, evidence, history, s, cancel, ev):
        """Run the LLM; returns (events, outcome). Events are produced lazily by a generator."""
        from .synthesis.errors import GenerationError
        from .synthesis.packing import evidence_budget, pack_evidence
        from .synthesis.prompts import build_messages

        outcome: dict[str, Any] = {"text": "", "error": None, "cancelled": False, "name": "openai", "packing": None}

        def run() -> Iterator[Event]:
            gen = self._generator(s)
            outcome["name"] = getattr(gen, "name", "openai")
            turns = list(history)[-s.conversation_turns :] if s.conversation_turns else []
            budget = evidence_budget(context_window=s.llm.context_window, max_output_tokens=s.llm.max_output_tokens,
                                     question=question, history=turns)
            packed = pack_evidence(evidence, budget_tokens=budget)
            outcome["packing"] = {"budget_tokens": budget, "tokens": packed.tokens,
                                  "dropped": list(packed.dropped), "truncated": list(packed.truncated)}
            stream = gen.stream(build_messages(question, packed, history=turns), cancel=cancel)
            parts: list[str] = []
            try:
                for delta in stream:
                    if cancel is not None and cancel.is_set():
                        outcome["cancelled"] = True
                        break
                    parts.append(delta)
                    yield ev("token", text=delta)
            except GenerationError as exc:
                if exc.kind == "cancelled":
                    outcome["cancelled"] = True
                else:
                    outcome["error"] = exc
            finally:
                stream.close()  # closes the HTTP response at once
                outcome["text"] = "".join(parts)
            if not outcome["error"] and not outcome["cancelled"] and not outcome["text"].strip():
                outcome["error"] = GenerationError("empty", "The model returned an empty answer. Try again or check the model name.")

        return run(), outcome


def _abstain_reason(evidence: Sequence[Evidence], support: Support, nothing_to_quote: bool, bar: float, s: RagcoreSettings) -> str | None:
    """Why the engine will not answer, or None when it will."""
    if not evidence:
        return "no evidence passed top-K and the threshold"
    if support.score < bar:
        return support.explain(bar)
    if nothing_to_quote and not s.llm.configured:
        return "the evidence has no prose sentence to quote (only code or tables); an LLM could still answer from it"
    return None


def selection_evidence(sel: SelectionInput) -> list[Evidence]:
    """The selection as evidence, one sentence each, so citations point at exact lines."""
    path = sel.source or "(selection)"
    out: list[Evidence] = []
    for i, span in enumerate(sentence_spans(sel.text), 1):
        start = sel.start_line + line_of_offset(sel.text, span.start)
        end = sel.start_line + line_of_offset(sel.text, max(span.end - 1, span.start))
        raw = sel.text[span.start : span.end]
        chunk = Chunk(
            chunk_id=make_chunk_id(path, start, end, raw), text=raw, path=path, doc_hash="selection", kind="text",
            start_line=start, end_line=end, section=("selection",), page=sel.page, ordinal=i - 1,
        )
        out.append(Evidence(n=i, chunk=chunk, origin="selection", score=None, score_kind="cosine"))
    return out


def _pieces(text: str) -> Iterator[str]:
    """Split a finished answer into word-sized tokens so every generator streams alike."""
    words = text.split(" ")
    for i, w in enumerate(words):
        yield w if i == len(words) - 1 else w + " "


def _friendly(exc: Exception) -> str:
    from .store import StoreError

    if isinstance(exc, StoreError):
        return str(exc)
    return f"Something went wrong while answering ({type(exc).__name__}: {exc}). The question was not answered; try again, or check the collection with `ragcore collections`."
