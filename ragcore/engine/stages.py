"""The engine's stages as small typed units: route → select context → retrieve → assess →
synthesize → validate. Each stage's result is a frozen dataclass; the pure rules live here,
the stages that read the collection or a model are the answerer's methods (``answerer.py``),
which return these types."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Literal, Mapping

from ragcore.citations.forge import answer_source, with_permalinks
from ragcore.abstain.answerability import Support
from ragcore.abstain.signals import NOTHING_TO_QUOTE, Verdict, abstain_reason  # noqa: F401  (re-exported)
from ragcore.settings.config import RagcoreSettings
from ragcore.safety.guardrails import Route
from ragcore.ingest.chunking import chunk_id as make_chunk_id
from ragcore.engine.selection import selection_kind, selection_meta, selection_pieces, selection_problem, source_line
from ragcore.synthesis.base import Synthesis
from ragcore.synthesis.extractive.composer import ExtractiveResult
from ragcore.types import (
    Answer, Candidate, Chunk, Citation, CollectionInfo, Evidence, RetrievalResult, Status, Validation,
)

ContextMode = Literal["corpus", "selection", "both"]
# sentences that legitimately carry no citation
_EXEMPT_PREFIXES = ("the corpus does not", "the evidence does not", "the selection does not", "neither the selection",
                    "i could not find", "this may not answer the question")


class StageError(Exception):
    """A request that cannot be answered, with the message the user sees."""


def exempt(sentence: str) -> bool:
    return sentence.strip().lower().startswith(_EXEMPT_PREFIXES)


@dataclass(frozen=True)
class SelectionInput:
    text: str
    source: str | None = None  # e.g. the file the passage was selected from
    start_line: int = 1  # line of the source where the selection starts
    page: int | None = None  # PDF page the passage is on
    line_numbers: tuple[int, ...] = ()  # source line of each text line when they are not consecutive (HTML)


@dataclass(frozen=True)
class Question:
    """One question as the Answerer runs it: the text, where the evidence comes from and the settings
    in force (the HTTP body that may carry it is the service's ``AskRequest``)."""

    question: str
    context: ContextMode
    collection: str
    settings: RagcoreSettings
    request_id: str
    selection: SelectionInput | None = None
    history: tuple[tuple[str, str], ...] = ()

    def base_meta(self) -> dict[str, Any]:
        return {"context": self.context, "collection": self.collection, "config": self.settings.public_dict(),
                "request_id": self.request_id}


@dataclass(frozen=True)
class Retrieved:
    standalone: str  # the question the evidence was retrieved for
    evidence: tuple[Evidence, ...]
    candidates: tuple[Candidate, ...]
    info: CollectionInfo | None
    latency_ms: Mapping[str, float] = field(default_factory=dict)
    retrieval: RetrievalResult | None = None  # None in selection mode; carries the question's vector


@dataclass(frozen=True)
class Assessment:
    support: Support
    bar: float
    bar_source: str
    abstain_reason: str | None
    composed: ExtractiveResult | None  # the extractive answer, when it had to be composed to decide
    signals: tuple[Verdict, ...] = ()  # each abstain signal's line, in order, up to the veto (the lab shows them)


class Composition:
    """The composition stage: the extractive answer from the evidence's own sentences, composed once,
    when first asked (by a selection's support, an abstain signal, or the extractive synthesizer). Not a
    frozen result: it is the stage itself, which keeps what it made (``result``; None: never composed)."""

    def __init__(self, compose: Callable[[], ExtractiveResult]) -> None:
        self._compose = compose
        self.result: ExtractiveResult | None = None

    def get(self) -> ExtractiveResult:
        if self.result is None:
            self.result = self._compose()
        return self.result


@dataclass(frozen=True)
class Checked:
    text: str
    citations: tuple[Citation, ...]
    validation: Validation
    status: Status
    error_message: str | None = None
    answer_fit: Mapping[str, Any] | None = None  # does what is quoted answer the question (answer_fit.py)


# ---------------------------------------------------------------- route / select context


def request_problem(req: Question) -> str | None:
    """Why the request cannot be answered at all, before any work (None: it can)."""
    if not req.question or not req.question.strip():
        return "The question is empty: type a question first."
    if req.context in ("selection", "both"):
        return selection_problem(req.selection.text if req.selection else None, req.settings.min_selection_chars)
    return None


def routed_answer(req: Question, route: Route) -> Answer:
    """Small talk, questions about the tool and boundary rules get a fixed reply, no retrieval."""
    action = f"{route.kind}: {route.rule}" if route.rule else route.kind
    return Answer(question=req.question, answer=route.reply or "", status="ok",
                  metadata={**req.base_meta(), "generator": "router"}, validation=Validation(guardrail_actions=(action,)))


def selection_evidence(sel: SelectionInput) -> list[Evidence]:
    """The selection as evidence, one sentence each, so citations point at exact lines."""
    path = sel.source or "(selection)"
    out: list[Evidence] = []
    kind = selection_kind(sel.source)
    for i, (a, b) in enumerate(selection_pieces(sel.text, kind), 1):  # sentences; code, a definition entry whole
        start, end = source_line(sel, a), source_line(sel, max(b - 1, a))
        raw = sel.text[a:b]
        chunk = Chunk(
            chunk_id=make_chunk_id(path, start, end, raw), text=raw, path=path, doc_hash="selection", kind=kind,
            start_line=start, end_line=end, section=("selection",), page=sel.page, ordinal=i - 1,
        )
        out.append(Evidence(n=i, chunk=chunk, origin="selection", score=None, score_kind="cosine"))
    return out


# ---------------------------------------------------------------- assess


# ---------------------------------------------------------------- validate


def answer_status(assessment: Assessment, synthesis: Synthesis, validation: Validation) -> Status:
    """abstained · partial (a failure, or any sentence uncited, unsupported or relying on
    instruction-like evidence) · ok."""
    if assessment.abstain_reason:
        return "abstained"
    if synthesis.failure is not None or validation.unsupported or validation.uncited or validation.injected:
        return "partial"
    if synthesis.confidence is not None and synthesis.confidence.level == "low" and synthesis.confidence.decides:
        return "partial"  # ok means confident: below the reader's bar the answer says it may not answer
    return "ok"


def failure_message(synthesis: Synthesis) -> str | None:
    f = synthesis.failure
    if f is None:
        return None
    if f.kind == "deadline":
        return f"{f.message} The answer stops where the model was when the deadline passed."
    if f.kind == "too_long":  # the client's reply cap: the cut text is the answer, its note says so
        return f.message
    return f"{f.message} Showing the extractive answer from the same evidence instead."


INCOMPLETE_NOTE = ("incomplete collection: an ingest into it did not finish (cancelled, or its process stopped), so "
                   "documents may be missing from this answer's sources; run the ingest again (or upload the files "
                   "again) to complete it")


def build_answer(req: Question, retrieved: Retrieved, assessment: Assessment, synthesis: Synthesis,
                 checked: Checked, latency_ms: Mapping[str, float]) -> Answer:
    meta: dict[str, Any] = {
        **req.base_meta(),
        "corpus_version": retrieved.info.corpus_version if retrieved.info else None,
        "built_at": retrieved.info.built_at if retrieved.info else None,
        "source": answer_source(retrieved.info.source if retrieved.info else None),  # which commit answered
        "standalone_question": retrieved.standalone if retrieved.standalone != req.question else None,
        "chunks_retrieved": len(retrieved.candidates), "chunks_used": len(retrieved.evidence),
        "best_support": round(assessment.support.score, 4), "support": assessment.support.as_dict(),
        "abstain_bar": {"value": assessment.bar, "source": assessment.bar_source},
        "generator": synthesis.generator, "latency_ms": {k: round(v, 2) for k, v in latency_ms.items()},
    }
    if synthesis.packing is not None:
        meta["packing"] = dict(synthesis.packing)
    if checked.answer_fit is not None:
        meta["answers"] = dict(checked.answer_fit)
    status, validation = checked.status, checked.validation
    if retrieved.info is not None and retrieved.info.incomplete:  # an ingest into it did not finish
        meta["incomplete"] = True
        status = "partial" if status == "ok" else status
        validation = replace(validation, notes=(*validation.notes, INCOMPLETE_NOTE))
    if req.selection is not None and req.context != "corpus":  # the viewer highlights the quoted lines
        meta["selection"] = selection_meta(req.selection.source, req.selection.start_line,
                                           source_line(req.selection, len(req.selection.text)),
                                           [(c.start_line, c.end_line) for c in checked.citations if c.origin == "selection"],
                                           assessment.support.selection_fit)
    return Answer(
        question=req.question, answer=checked.text, status=status,
        citations=with_permalinks(checked.citations, retrieved.info.source if retrieved.info else {}),
        evidence=retrieved.evidence, candidates=retrieved.candidates, validation=validation,
        metadata=meta, error_message=checked.error_message,
        confidence=synthesis.confidence if checked.status != "abstained" else None,
    )


def cancelled_answer(req: Question, retrieved: Retrieved, synthesis: Synthesis, latency_ms: Mapping[str, float]) -> Answer:
    return Answer(question=req.question, answer=synthesis.text, status="partial", evidence=retrieved.evidence,
                  candidates=retrieved.candidates,
                  metadata={**req.base_meta(), "generator": synthesis.generator, "latency_ms": dict(latency_ms)},
                  error_message="Cancelled by the user.")


def failed_answer(req: Question, message: str) -> Answer:
    return Answer(question=req.question, answer="", status="error", metadata=req.base_meta(), error_message=message)

