"""Recording a run: ``Engine.stream`` events → a notebook :class:`Run`, also when cut off."""

from __future__ import annotations

import time
from typing import Any, Mapping

from ragcore.types import Answer, Event, Validation

from .model import Run, cited_passages


class RunRecorder:
    """Collects ``Engine.stream`` events into a :class:`Run`, also when the stream is cut off.

    Feed every event; call :meth:`finish` at the end. When the stream never reached ``done``
    (the analyst pressed Stop, the page reran, the browser went away) ``finish(cancelled=True)``
    builds a partial Answer from what arrived: the evidence, the text so far.
    """

    def __init__(
        self, question: str, *, context_mode: str, collection: str, config: Mapping[str, Any],
        corpus_version: str | None = None, built_at: str | None = None, generator: str = "extractive",
    ) -> None:
        self.question = question
        self.context_mode = context_mode
        self.base_meta: dict[str, Any] = {
            "context": context_mode, "collection": collection, "config": dict(config),
            "corpus_version": corpus_version, "built_at": built_at, "generator": generator,
        }
        self.parts: list[str] = []
        self.final_text: str | None = None
        self.evidence: tuple = ()
        self.candidates: tuple = ()
        self.errors: list[str] = []
        self.answer: Answer | None = None
        self.done_status: str | None = None
        self.request_id: str | None = None
        self._t0 = time.perf_counter()
        self._latency: dict[str, float] = {}

    @property
    def text(self) -> str:
        return self.final_text if self.final_text is not None else "".join(self.parts)

    @property
    def has_sources(self) -> bool:
        return "sources" in self._latency

    def feed(self, ev: Event) -> None:
        self.request_id = ev.request_id
        if ev.type == "sources":
            self.evidence = tuple(ev.data.get("evidence") or ())
            self.candidates = tuple(ev.data.get("candidates") or ())
            self._latency["sources"] = (time.perf_counter() - self._t0) * 1e3
        elif ev.type == "token":
            self.parts.append(str(ev.data.get("text", "")))
        elif ev.type == "message":
            self.final_text = str(ev.data.get("text", ""))
        elif ev.type == "error":
            self.errors.append(str(ev.data.get("message", "")))
        elif ev.type == "done":
            self.answer = ev.data.get("answer")
            self.done_status = str(ev.data.get("status"))

    def finish(self, *, cancelled: bool = False) -> Run:
        if self.answer is not None:
            outcome = "cancelled" if self.done_status == "cancelled" else self.answer.status
            answer = self.answer.to_dict()
            # the cited lines are kept apart from the evidence: an export shows them even if
            # a later notebook format stops storing whole chunks
            return Run(answer=answer, outcome=outcome, passages=cited_passages(answer))  # type: ignore[arg-type]
        self._latency["total"] = (time.perf_counter() - self._t0) * 1e3
        text = "".join(self.parts)
        if cancelled:
            words = len(text.split())
            message = f"Stopped by the analyst after {words} word{'s' if words != 1 else ''}; the text so far is kept."
        else:
            message = "; ".join(self.errors) or "The answer ended without a result. Re-run the cell."
        meta = {
            **self.base_meta, "request_id": self.request_id, "cancelled": cancelled,
            "chunks_retrieved": len(self.candidates), "chunks_used": len(self.evidence),
            "latency_ms": {k: round(v, 2) for k, v in self._latency.items()},
        }
        ans = Answer(
            question=self.question, answer=text, status="partial" if cancelled else "error", evidence=self.evidence,
            candidates=self.candidates, validation=Validation(), metadata=meta, error_message=message,
        )
        return Run(answer=ans.to_dict(), outcome="cancelled" if cancelled else "error", passages={})
