"""Answering a question: the stages in order, turned into the event stream.

    route → select context → retrieve → assess (abstain signals; compose) → synthesize → validate

:meth:`Answerer.stream` reads top to bottom; each stage is a method with explicit inputs and a
typed result (``stages.py``). What it reads comes in explicitly from the Engine: the
collection's view (``view.py``: search, topics, bar, unseen-words check), the encoder, the
support scorer and the generators; it calls only downward, never back into the Engine.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import Generator, Iterator

from ragcore.abstain.answer_fit import with_answers
from ragcore.abstain.answerability import Support, question_support, hedge_note
from ragcore.abstain.signals import ABSTAIN_SIGNALS, Case, decide
from ragcore.citations import CitationChecker, SupportScorer, evidence_from_candidates
from ragcore.settings.config import RagcoreSettings
from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.encoders.base import EmbedError
from ragcore.engine.events import EventFactory
from ragcore.engine.generation import Generators
from ragcore.safety.guardrails import is_hedged, route_question
from ragcore.synthesis.llm.echo import only_echo, strip_prompt_echo
from ragcore.synthesis.llm.errors import KEEPS_PARTIAL
from ragcore.safety.injection import defang_images, defang_links, suspicious_evidence
from ragcore.engine.stages import (
    Question, Assessment, Checked, Composition, Retrieved, StageError, answer_status,
    build_answer, cancelled_answer, exempt, failed_answer, failure_message, request_problem, routed_answer,
    selection_evidence,
)
from ragcore.engine.view import CollectionView
from ragcore.storage.store import StoreError
from ragcore.synthesis.base import FixedText, Synthesis, SynthesisJob, Synthesizer
from ragcore.synthesis.extractive.composer import ABSTAIN_TEXTS, ExtractiveComposer, ExtractiveSynthesizer
from ragcore.synthesis.llm.synthesizer import LlmSynthesizer
from ragcore.types import Event, Validation


@dataclass(frozen=True)
class Resources:
    view: CollectionView  # the question's collection: search, topics, abstain bar, unseen-words check
    encoder: OnnxMiniLM
    scorer: SupportScorer
    generators: Generators  # one OpenAI-compatible generator per endpoint, and the follow-up condenser


class Answerer:
    def __init__(self, resources: Resources) -> None:
        self.r = resources

    def stream(self, req: Question, cancel: threading.Event | None = None) -> Iterator[Event]:
        ev = EventFactory(req.request_id)
        t0 = time.perf_counter()
        yield ev("started", question=req.question, context=req.context, collection=req.collection)
        problem = request_problem(req)
        if problem:
            yield from _failed(ev, req, problem)
            return
        route = route_question(req.question, req.settings.boundary_rules)
        if route.kind != "corpus":
            answer = routed_answer(req, route)
            yield ev("sources", evidence=(), candidates=())
            yield ev("message", text=answer.answer)
            yield ev("done", status="ok", answer=answer)
            return
        try:
            retrieved = self.retrieve(req)
            latency = {**retrieved.latency_ms, "sources": _ms(t0)}
            yield ev("sources", evidence=retrieved.evidence, candidates=retrieved.candidates)
            t = time.perf_counter()
            assessment = self.assess(req, retrieved)
            latency["assess"] = _ms(t)
            t = time.perf_counter()
            synthesis = yield from self.synthesize(req, retrieved, assessment, ev, cancel)
            latency["generate"] = _ms(t)
            if synthesis.cancelled:
                yield ev("done", status="cancelled", answer=cancelled_answer(req, retrieved, synthesis, latency))
                return
            t = time.perf_counter()
            checked = self.validate(req, retrieved, assessment, synthesis)
            latency.update(validate=_ms(t), total=_ms(t0))
            answer = build_answer(req, retrieved, assessment, synthesis, checked, latency)
            yield ev("message", text=answer.answer)
            yield ev("done", status="ok", answer=answer)
        except Exception as exc:  # the caller never sees a traceback: it gets a message
            yield from _failed(ev, req, _friendly(exc))

    # ------------------------------------------------------------------ select context + retrieve

    def retrieve(self, req: Question) -> Retrieved:
        s = req.settings
        info = None
        if req.context != "selection":
            info = self.r.view.info()
            if info.problem:  # damaged files, or held by another process past the wait: what to run
                raise StageError(info.problem)
            if info.chunks == 0 and self.r.view.store.first_write_elsewhere(req.collection):
                raise StageError(f"The collection {req.collection!r} is being ingested by another process and has "
                                 "nothing published yet: ask again when its ingest is done.")
            if info.chunks == 0:
                raise StageError(f"The collection {req.collection!r} is empty or does not exist. Ingest documents "
                                 f"first: ragcore ingest PATH --collection {req.collection}")
        standalone = self.r.generators.standalone(req.question, req.history, s)
        evidence = list(selection_evidence(req.selection)) if req.selection and req.context != "corpus" else []
        result = None
        if req.context != "selection":
            result = self.r.view.retrieve(standalone, s)
            evidence.extend(evidence_from_candidates(result.candidates, result.rank_score_kind, start=len(evidence) + 1))
        return Retrieved(standalone, tuple(evidence), result.candidates if result else (), info,
                         dict(result.latency_ms) if result else {}, result)

    # ------------------------------------------------------------------ assess

    def assess(self, req: Question, retrieved: Retrieved) -> Assessment:
        """Answer or abstain, decided before any generation: the support score, then the abstain
        signals in order (abstain/signals.py). A selection is judged by its sentences, so those
        contexts compose first; in corpus mode an abstention composes nothing."""
        s, q = req.settings, retrieved.standalone
        composition = self.compose(req, retrieved)
        composed = composition.get() if req.context != "corpus" and retrieved.evidence else None
        corpus = self.r.view if req.context != "selection" else None
        support: Support = question_support(req.context, q, retrieved.retrieval, corpus, path_filter=s.path_filter,
                                            check_unseen=s.abstain_unseen_words, check_uncovered=s.abstain_uncovered,
                                            best_selection=composed.best_selection if composed else None,
                                            selection_fit=composed.selection_fit if composed else None)
        bar, source = (s.abstain_bar, "settings")
        if corpus is not None:
            info = corpus.abstain_bar(s)
            bar, source = info.value, info.description
        case = Case(q, req.context, retrieved.evidence, support, bar, s.uncovered_margin, s.llm.configured,
                    self.r.encoder, composition.get)
        decision = decide(ABSTAIN_SIGNALS, case)
        return Assessment(decision.case.support, bar, source, decision.reason, composition.result, decision.verdicts)

    # ------------------------------------------------------------------ compose

    def compose(self, req: Question, retrieved: Retrieved) -> Composition:
        """The extractive answer (synthesis/extractive/), as a stage of its own: composed once, when the
        assess stage or the extractive synthesizer first needs it."""
        composer = self._composer(req.settings)
        return Composition(lambda: composer.compose(retrieved.standalone, retrieved.evidence))

    # ------------------------------------------------------------------ synthesize

    def synthesize(self, req: Question, retrieved: Retrieved, assessment: Assessment, ev: EventFactory,
                   cancel: threading.Event | None) -> Generator[Event, None, Synthesis]:
        s = req.settings
        job = SynthesisJob(retrieved.standalone, req.question, retrieved.evidence, req.history, s)
        synth: Synthesizer
        if assessment.abstain_reason:
            synth = FixedText(ABSTAIN_TEXTS[req.context])
        elif s.llm.configured:
            synth = LlmSynthesizer(self.r.generators.for_settings(s))
        else:
            synth = ExtractiveSynthesizer(self._composer(s), assessment.composed)
        result = yield from _pump(synth, job, ev, cancel)
        if result.failure is None or result.cancelled or result.failure.kind in KEEPS_PARTIAL:
            if result.failure is not None:
                yield ev("error", message=result.failure.message, kind=result.failure.kind)
            return result
        # the model failed: the same evidence, quoted
        yield ev("error", message=result.failure.message, kind=result.failure.kind)
        fallback = yield from _pump(ExtractiveSynthesizer(self._composer(s), assessment.composed), job, ev, cancel)
        return replace(fallback, generator=f"extractive (after {result.generator} failed)", failure=result.failure,
                       packing=result.packing)

    def _composer(self, s: RagcoreSettings) -> ExtractiveComposer:
        return ExtractiveComposer(self.r.encoder, max_sentences=s.max_answer_sentences, max_docs=s.answer_docs,
                                  second_page=s.answer_second_page)

    # ------------------------------------------------------------------ validate

    def validate(self, req: Question, retrieved: Retrieved, assessment: Assessment, synthesis: Synthesis) -> Checked:
        s = req.settings
        hedge = is_hedged if synthesis.model_written else None  # extractive sentences are the documents' own words
        # no answer makes a viewer load an image; a model's links also show their target
        text = defang_links(synthesis.text) if synthesis.model_written else defang_images(synthesis.text)
        echoed = 0
        if synthesis.model_written:  # a copied <evidence> block would read as a supported answer citing everything
            text, echoed = strip_prompt_echo(text)
        checked = CitationChecker(self.r.scorer, is_hedged=hedge, exempt=exempt).check(text, retrieved.evidence)
        actions = [f"abstained: {assessment.abstain_reason}"] if assessment.abstain_reason else []
        actions += [f"removed {echoed} echo(es) of the prompt's <evidence> markup from the model's answer"] if echoed else []
        caveat = hedge_note(assessment.support.as_dict()) if not assessment.abstain_reason else None
        actions += [caveat] if caveat else []
        notes = [*(retrieved.retrieval.notes if retrieved.retrieval else ()),
                 *([f"llm_error: {synthesis.failure.kind}"] if synthesis.failure else [])]
        replaced = _replacement_reason(synthesis, checked.validation, s, echoed, text)
        if replaced:
            composed = assessment.composed or self._composer(s).compose(retrieved.standalone, retrieved.evidence)
            checked = CitationChecker(self.r.scorer, exempt=exempt).check(composed.text, retrieved.evidence)
            actions.append(replaced)
        actions.extend(x.describe() + "; sentences citing it are flagged" for x in suspicious_evidence(retrieved.evidence))
        validation = replace(checked.validation, guardrail_actions=tuple(actions), notes=tuple(notes))
        status = answer_status(assessment, synthesis, validation)
        status = "partial" if echoed and not replaced and status == "ok" else status
        citations, fit = with_answers(self.r.encoder, retrieved.standalone, checked.citations if status != "abstained" else (),
                                      validation.sentences)
        return Checked(checked.text, citations, validation, status, failure_message(synthesis), fit)


def _replacement_reason(synthesis: Synthesis, v: Validation, s: RagcoreSettings, echoed: int, left: str) -> str | None:
    """Why the model's answer gives way to the extractive answer from the same evidence (None: it stays).
    An answer that was only an echo of the prompt's markup has nothing left to check or show, so it is
    replaced whatever RAGCORE_LLM_UNSUPPORTED_POLICY says; an unsupported one only under ``extractive``."""
    if not synthesis.model_written:
        return None
    if echoed and only_echo(left):
        return ("replaced the LLM answer with the extractive answer: the model's answer was only an echo of ragcore's "
                "prompt markup, with nothing of its own left")
    if s.llm.unsupported_policy == "extractive" and (v.unsupported or v.injected):
        return (f"replaced the LLM answer ({len(v.unsupported)} unsupported, {len(v.injected)} relying on "
                "instruction-like evidence) with the extractive answer")
    return None


def _pump(synth: Synthesizer, job: SynthesisJob, ev: EventFactory,
          cancel: threading.Event | None) -> Generator[Event, None, Synthesis]:
    """Run a synthesizer: each piece becomes a token event; Stop (``cancel``) closes it at once."""
    gen = synth.stream(job, cancel)
    parts: list[str] = []
    try:
        while True:
            if cancel is not None and cancel.is_set():
                return Synthesis("".join(parts), synth.name, cancelled=True)
            piece = next(gen)
            parts.append(piece)
            yield ev("token", text=piece)
    except StopIteration as stop:
        result: Synthesis = stop.value
        return replace(result, cancelled=True) if cancel is not None and cancel.is_set() else result
    finally:
        gen.close()


def _failed(ev: EventFactory, req: Question, message: str) -> Iterator[Event]:
    yield ev("error", message=message)
    yield ev("done", status="error", answer=failed_answer(req, message))


def _ms(t: float) -> float:
    return (time.perf_counter() - t) * 1e3


def _friendly(exc: Exception) -> str:
    if isinstance(exc, (StoreError, StageError)):
        return str(exc)
    if isinstance(exc, EmbedError):  # the collection's embedding model could not embed the question
        return f"The question could not be embedded: {exc}"
    return (f"Something went wrong while answering ({type(exc).__name__}: {exc}). The question was not answered; "
            "try again, or check the collection with `ragcore collections`.")
