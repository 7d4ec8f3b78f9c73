"""The notebook model: a collection's cells, each with its question and its runs (answers).

A notebook is the list of questions asked about one collection. Each :class:`Cell` keeps its
question, its context mode (and selection), and its runs: every run stores the complete
Answer contract (``Answer.to_dict()``) plus how the run ended, so a cell can be re-run and
compared with its previous run, and a saved notebook reproduces what the analyst saw.

A run also keeps each citation's *passage*: the lines of the cited chunk that [n] points to,
as the evidence said them when the answer was given. Exports print them under each citation,
so a reader can check every claim without the app (or the corpus, which may have changed).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

from ragcore.storage.store import utc_now
from ragcore.types import format_locator

FORMAT = "ragcore-notebook/1"
MAX_RUNS = 5  # runs kept per cell (the newest last); older ones are dropped

ContextMode = Literal["corpus", "selection", "both"]
Outcome = Literal["ok", "partial", "abstained", "error", "cancelled"]

CONTEXT_LABELS = {"corpus": "full corpus", "selection": "selected text", "both": "selection + corpus"}


class NotebookError(RuntimeError):
    """A notebook file could not be read or written; the message says what to do."""


# --------------------------------------------------------------------------- model


def locator(d: Mapping[str, Any]) -> str:
    """A stored chunk's or citation's place, human form: ``docs/x.md:12-20`` or ``x.pdf p.3:1-9``."""
    return format_locator(str(d.get("path")), d.get("start_line"), d.get("end_line"), d.get("page"))  # type: ignore[arg-type]


def cited_passages(answer: Mapping[str, Any]) -> dict[str, str]:
    """``{"n": text}``: for each citation, the lines of its evidence chunk that it cites.

    A citation narrowed to some of its chunk's lines gets those lines; when the chunk's text
    lines are not its source lines one for one (HTML), the whole chunk, as the citation itself
    keeps the chunk's whole range (``ragcore/citations/locate.py``). A citation whose evidence
    was not kept gets no entry.
    """
    chunks = {e.get("n"): e.get("chunk") or {} for e in answer.get("evidence") or []}
    out: dict[str, str] = {}
    for cit in answer.get("citations") or []:
        chunk = chunks.get(cit.get("n"))
        if chunk and isinstance(chunk.get("text"), str) and chunk.get("chunk_id") in (None, cit.get("chunk_id")):
            out[str(cit["n"])] = _cited_lines(cit, chunk)
    return out


def _cited_lines(cit: Mapping[str, Any], chunk: Mapping[str, Any]) -> str:
    text: str = chunk["text"]
    lines = text.split("\n")
    first, last = chunk.get("start_line"), chunk.get("end_line")
    start, end = cit.get("start_line"), cit.get("end_line")
    if not all(isinstance(v, int) for v in (first, last, start, end)):
        return text
    if len(lines) == last - first + 1 and first <= start <= end <= last:
        return "\n".join(lines[start - first : end - first + 1])
    return text


@dataclass
class Run:
    """One answer to a cell's question."""

    answer: dict[str, Any]  # the Answer contract, Answer.to_dict()
    outcome: Outcome  # the answer's status, or "cancelled" when the analyst stopped it
    ran_at: str = field(default_factory=utc_now)
    # {"n": cited lines} recorded with the run; None in notebooks saved before passages were kept
    passages: dict[str, str] | None = None

    def passage(self, n: int) -> str | None:
        """The text citation [n] points to: as recorded, else read from the run's own stored
        evidence (older notebooks); None when neither has it."""
        if self.passages is not None and str(n) in self.passages:
            return self.passages[str(n)]
        return cited_passages(self.answer).get(str(n))

    @property
    def text(self) -> str:
        return str(self.answer.get("answer") or "")

    @property
    def citations(self) -> list[dict[str, Any]]:
        return list(self.answer.get("citations") or [])

    @property
    def evidence(self) -> list[dict[str, Any]]:
        return list(self.answer.get("evidence") or [])

    @property
    def metadata(self) -> dict[str, Any]:
        return dict(self.answer.get("metadata") or {})

    @property
    def read_as(self) -> str | None:
        """The standalone question a follow-up was answered as, or None when it was read as typed."""
        value = self.metadata.get("standalone_question")
        return str(value) if value else None

    def to_dict(self) -> dict[str, Any]:
        out = {"outcome": self.outcome, "ran_at": self.ran_at, "answer": self.answer}
        return out if self.passages is None else {**out, "passages": self.passages}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Run":
        answer = dict(d.get("answer") or {})
        stored = d.get("passages")
        passages = {str(k): v for k, v in stored.items() if isinstance(v, str)} if isinstance(stored, Mapping) else None
        return cls(answer=answer, outcome=d.get("outcome") or answer.get("status") or "error", ran_at=d.get("ran_at") or "",
                   passages=passages)


@dataclass
class Cell:
    question: str
    context_mode: ContextMode = "corpus"
    selection: dict[str, Any] | None = None  # {"text", "source", "start_line"}
    runs: list[Run] = field(default_factory=list)
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    created_at: str = field(default_factory=utc_now)

    @property
    def current(self) -> Run | None:
        return self.runs[-1] if self.runs else None

    @property
    def read_as(self) -> str | None:
        """What the latest answer searched for: the follow-up made standalone, else None."""
        return self.current.read_as if self.current else None

    @property
    def previous(self) -> Run | None:
        return self.runs[-2] if len(self.runs) > 1 else None

    def add_run(self, run: Run) -> None:
        """Append a run; older runs keep their evidence (for diffs) but drop the candidate pool."""
        for old in self.runs:
            if old.answer.get("candidates"):
                old.answer = {**old.answer, "candidates": []}
                old.answer.setdefault("metadata", {})
                old.answer["metadata"] = {**old.answer["metadata"], "candidates_trimmed": True}
        self.runs.append(run)
        del self.runs[:-MAX_RUNS]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id, "question": self.question, "context_mode": self.context_mode,
            "selection": self.selection, "created_at": self.created_at, "runs": [r.to_dict() for r in self.runs],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Cell":
        return cls(
            id=str(d.get("id") or uuid.uuid4().hex[:12]), question=str(d.get("question") or ""),
            context_mode=d.get("context_mode") or "corpus", selection=d.get("selection"),
            runs=[Run.from_dict(r) for r in d.get("runs") or []], created_at=d.get("created_at") or "",
        )


@dataclass
class Notebook:
    collection: str
    cells: list[Cell] = field(default_factory=list)

    def get(self, cell_id: str) -> Cell | None:
        return next((c for c in self.cells if c.id == cell_id), None)

    def upsert(self, cell: Cell) -> None:
        for i, c in enumerate(self.cells):
            if c.id == cell.id:
                self.cells[i] = cell
                return
        self.cells.append(cell)

    def remove(self, cell_id: str) -> None:
        self.cells = [c for c in self.cells if c.id != cell_id]

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "collection": self.collection, "cells": [c.to_dict() for c in self.cells]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], collection: str | None = None) -> "Notebook":
        return cls(collection=collection or str(d.get("collection") or ""), cells=[Cell.from_dict(c) for c in d.get("cells") or []])


# --------------------------------------------------------------------------- persistence


def recent_turns(cells: Sequence[Cell], n: int = 3) -> list[tuple[str, str]]:
    """The last ``n`` answered questions with their answers, oldest first: the history a new question
    is asked with, so a follow-up ("and how do I change it?") is read with the previous subject."""
    done = [c for c in cells if c.current is not None]
    return [(c.question, c.current.text) for c in done[-n:]]  # type: ignore[union-attr]
