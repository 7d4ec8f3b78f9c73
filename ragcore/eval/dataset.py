"""Evaluation data sets: questions with reference answers and document-level relevance.

Format (one JSON object per line, the layout of ``shared/data/django-docs-qa``)::

    {"id": "dj-faq-0001", "question": "...", "answer": "...",
     "relevant": ["page.html#anchor", "other.html"], "relevant_docs": ["page.html", "other.html"],
     "source": "faq/page.html#anchor", "answerable": true}

Only ``question`` is required. Defaults: ``id`` = ``<file stem>-<line number>``, ``answer`` =
``""``, ``relevant`` = ``[]``, ``relevant_docs`` = ``relevant`` without ``#anchor``
(deduplicated, first occurrence kept), ``source`` = ``None``, ``answerable`` =
``bool(relevant_docs)``. Paths in ``relevant``/``relevant_docs`` are POSIX paths relative to
the data set's ``corpus/`` folder, the same form as ``Chunk.path`` when that folder is ingested.

A data set is either a directory holding ``questions.jsonl`` and optionally
``unanswerable.jsonl`` and ``corpus/``, or a single ``.jsonl`` file (its folder's ``corpus/``
is used when present). Blank lines are skipped; anything else that is wrong raises
:class:`DatasetError` naming the file and the 1-based line number.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

__all__ = ["DatasetError", "EvalQuestion", "EvalDataset", "load_dataset", "load_dataset_bytes"]

QUESTIONS_FILE = "questions.jsonl"
UNANSWERABLE_FILE = "unanswerable.jsonl"
CORPUS_DIR = "corpus"


class DatasetError(ValueError):
    """A data set that cannot be read: missing file, malformed line, wrong field type."""


@dataclass(frozen=True)
class EvalQuestion:
    id: str
    question: str
    answer: str  # reference answer ("" when the data set has none)
    relevant: tuple[str, ...]  # "path#anchor" or "path", relative to corpus/
    relevant_docs: tuple[str, ...]  # the same paths without anchors, deduplicated
    answerable: bool
    source: str | None = None


@dataclass(frozen=True)
class EvalDataset:
    name: str
    root: Path | None  # the data set folder (None for an upload)
    corpus_dir: Path | None  # root/corpus when it exists
    questions: tuple[EvalQuestion, ...]

    @property
    def answerable(self) -> tuple[EvalQuestion, ...]:
        return tuple(q for q in self.questions if q.answerable)

    @property
    def unanswerable(self) -> tuple[EvalQuestion, ...]:
        return tuple(q for q in self.questions if not q.answerable)

    def __len__(self) -> int:
        return len(self.questions)


def load_dataset(path: Path | str) -> EvalDataset:
    """Load a data set folder (``questions.jsonl`` [+ ``unanswerable.jsonl``] [+ ``corpus/``])
    or a single ``.jsonl`` file."""
    p = Path(path).expanduser()
    if p.is_dir():
        qfile = p / QUESTIONS_FILE
        if not qfile.is_file():
            raise DatasetError(f"{p}: no {QUESTIONS_FILE} in this folder")
        files = [qfile] + [f for f in (p / UNANSWERABLE_FILE,) if f.is_file()]
        root, name = p, p.name
    elif p.is_file():
        files, root, name = [p], p.parent, p.stem
    else:
        raise DatasetError(f"{p}: no such file or folder")
    questions: list[EvalQuestion] = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as e:
            raise DatasetError(f"{f}: not UTF-8 text ({e})") from e
        questions.extend(_parse_lines(text.splitlines(), label=str(f), stem=f.stem))
    corpus = root / CORPUS_DIR
    return EvalDataset(
        name=name,
        root=root,
        corpus_dir=corpus if corpus.is_dir() else None,
        questions=_check_unique(questions, label=str(p)),
    )


def load_dataset_bytes(data: bytes, name: str) -> EvalDataset:
    """Load an uploaded ``.jsonl`` file; ``name`` (the upload's file name) labels errors and
    names the data set (without a ``.jsonl`` suffix). There is no corpus folder."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise DatasetError(f"{name}: not UTF-8 text ({e})") from e
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    questions = _parse_lines(text.splitlines(), label=name, stem=stem)
    return EvalDataset(
        name=stem,
        root=None,
        corpus_dir=None,
        questions=_check_unique(questions, label=name),
    )


# --------------------------------------------------------------------------- parsing


def _parse_lines(lines: Iterable[str], *, label: str, stem: str) -> list[EvalQuestion]:
    out: list[EvalQuestion] = []
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{label}, line {no}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise DatasetError(f"{where}: malformed JSON ({e.msg} at column {e.colno})") from e
        if not isinstance(obj, dict):
            raise DatasetError(f"{where}: expected a JSON object, got {type(obj).__name__}")
        out.append(_parse_question(obj, where=where, default_id=f"{stem}-{no}"))
    return out


def _parse_question(obj: dict[str, Any], *, where: str, default_id: str) -> EvalQuestion:
    question = obj.get("question")
    if not isinstance(question, str) or not question.strip():
        raise DatasetError(f"{where}: missing or empty 'question'")
    qid = obj.get("id", default_id)
    if not isinstance(qid, (str, int)) or isinstance(qid, bool):
        raise DatasetError(f"{where}: 'id' must be a string")
    answer = obj.get("answer") or ""
    if not isinstance(answer, str):
        raise DatasetError(f"{where}: 'answer' must be a string")
    source = obj.get("source")
    if source is not None and not isinstance(source, str):
        raise DatasetError(f"{where}: 'source' must be a string or null")
    relevant = _str_list(obj.get("relevant"), "relevant", where)
    if obj.get("relevant_docs") is not None:
        relevant_docs = _dedupe(_str_list(obj["relevant_docs"], "relevant_docs", where))
    else:
        relevant_docs = _dedupe(r.split("#", 1)[0] for r in relevant)
    relevant_docs = tuple(d for d in relevant_docs if d)  # a bare "#anchor" names no page
    answerable = obj.get("answerable", bool(relevant_docs))
    if not isinstance(answerable, bool):
        raise DatasetError(f"{where}: 'answerable' must be true or false")
    return EvalQuestion(
        id=str(qid),
        question=question.strip(),
        answer=answer,
        relevant=relevant,
        relevant_docs=relevant_docs,
        answerable=answerable,
        source=source,
    )


def _str_list(value: Any, field: str, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DatasetError(f"{where}: '{field}' must be a list of strings")
    for v in value:
        if v.startswith("/") or "\\" in v:
            raise DatasetError(
                f"{where}: '{field}' entry {v!r} must be a POSIX path relative to corpus/"
            )
    return tuple(value)


def _dedupe(items: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(items))


def _check_unique(questions: list[EvalQuestion], *, label: str) -> tuple[EvalQuestion, ...]:
    seen: set[str] = set()
    for q in questions:
        if q.id in seen:
            raise DatasetError(f"{label}: duplicate question id {q.id!r}")
        seen.add(q.id)
    return tuple(questions)
