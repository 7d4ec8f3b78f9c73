"""Notebook cells: the model, persistence (one JSON file per collection), exports and run diffs.

A notebook is the list of questions asked about one collection. Each :class:`Cell` keeps its
question, its context mode (and selection), and its runs: every run stores the complete
Answer contract (``Answer.to_dict()``) plus how the run ended, so a cell can be re-run and
compared with its previous run, and a saved notebook reproduces what the analyst saw.

Pure Python — the app renders these objects; ``ragcore`` never imports Streamlit.

Files: ``settings.notebooks_dir / "<collection>.json"``, written atomically (temporary file +
rename) under an advisory lock, so two browser tabs adding cells do not lose each other's.
"""

from __future__ import annotations

import contextlib
import difflib
import html
import json
import os
import re
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Literal, Mapping, Sequence

from .types import Answer, Event, Validation, to_jsonable

FORMAT = "ragcore-notebook/1"
MAX_RUNS = 5  # runs kept per cell (the newest last); older ones are dropped

ContextMode = Literal["corpus", "selection", "both"]
Outcome = Literal["ok", "partial", "abstained", "error", "cancelled"]

CONTEXT_LABELS = {"corpus": "full corpus", "selection": "selected text", "both": "selection + corpus"}


class NotebookError(RuntimeError):
    """A notebook file could not be read or written; the message says what to do."""


def utc_now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


# --------------------------------------------------------------------------- model


@dataclass
class Run:
    """One answer to a cell's question."""

    answer: dict[str, Any]  # the Answer contract, Answer.to_dict()
    outcome: Outcome  # the answer's status, or "cancelled" when the analyst stopped it
    ran_at: str = field(default_factory=utc_now)

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

    def to_dict(self) -> dict[str, Any]:
        return {"outcome": self.outcome, "ran_at": self.ran_at, "answer": self.answer}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Run":
        answer = dict(d.get("answer") or {})
        return cls(answer=answer, outcome=d.get("outcome") or answer.get("status") or "error", ran_at=d.get("ran_at") or "")


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


class NotebookStore:
    """One JSON file per collection under ``directory`` (``settings.notebooks_dir``)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def path_for(self, collection: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.-]", "_", collection) or "_"
        return self.directory / f"{safe}.json"

    def signature(self, collection: str) -> tuple[int, int] | None:
        """(mtime_ns, size) of the file, to tell whether a cached copy is stale."""
        try:
            st = self.path_for(collection).stat()
        except FileNotFoundError:
            return None
        return (st.st_mtime_ns, st.st_size)

    def load(self, collection: str) -> Notebook:
        path = self.path_for(collection)
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return Notebook(collection)
        except OSError as exc:
            raise NotebookError(f"Could not read the notebook file {path} ({exc.strerror or exc}). Check its permissions.") from exc
        try:
            data = json.loads(raw)
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            return Notebook.from_dict(data, collection)
        except (ValueError, TypeError, AttributeError) as exc:
            # keep the damaged file for inspection and start a fresh notebook
            backup = path.with_suffix(f".corrupt-{int(time.time())}.json")
            with contextlib.suppress(OSError):
                path.replace(backup)
            raise NotebookError(
                f"The notebook file {path} was damaged ({exc}); it was moved to {backup.name} and a new, "
                "empty notebook was started."
            ) from exc

    def save(self, notebook: Notebook) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.path_for(notebook.collection)
        data = json.dumps(notebook.to_dict(), ensure_ascii=False, indent=1)
        try:
            fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=self.directory)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except OSError as exc:
            raise NotebookError(
                f"Could not save the notebook to {path} ({exc.strerror or exc}). Check that the data directory is writable."
            ) from exc

    @contextlib.contextmanager
    def _locked(self, collection: str) -> Iterator[None]:
        self.directory.mkdir(parents=True, exist_ok=True)
        lock_path = self.path_for(collection).with_suffix(".lock")
        with open(lock_path, "a+") as fh:
            try:
                import fcntl

                fcntl.flock(fh, fcntl.LOCK_EX)
            except (ImportError, OSError):  # no advisory locks here: last writer wins
                pass
            yield

    def _modify(self, collection: str, change) -> Notebook:
        with self._locked(collection):
            try:
                nb = self.load(collection)
            except NotebookError:
                nb = Notebook(collection)
            change(nb)
            self.save(nb)
            return nb

    def upsert_cell(self, collection: str, cell: Cell) -> Notebook:
        """Add or replace one cell, keeping cells other sessions added meanwhile."""
        return self._modify(collection, lambda nb: nb.upsert(cell))

    def delete_cell(self, collection: str, cell_id: str) -> Notebook:
        return self._modify(collection, lambda nb: nb.remove(cell_id))

    def clear(self, collection: str) -> Notebook:
        return self._modify(collection, lambda nb: nb.cells.clear())


# --------------------------------------------------------------------------- recording a run


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
            return Run(answer=self.answer.to_dict(), outcome=outcome)  # type: ignore[arg-type]
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
        return Run(answer=ans.to_dict(), outcome="cancelled" if cancelled else "error")


# --------------------------------------------------------------------------- reading a run


def config_stamp(answer: Mapping[str, Any]) -> dict[str, str]:
    """The settings that produced an answer, as short label → value pairs (no secrets)."""
    meta = answer.get("metadata") or {}
    cfg = meta.get("config") or {}
    llm = cfg.get("llm") or {}
    out: dict[str, str] = {"collection": str(meta.get("collection") or cfg.get("collection") or "?")}
    if meta.get("corpus_version"):
        out["corpus version"] = str(meta["corpus_version"])[:12]
    if meta.get("built_at"):
        out["built"] = str(meta["built_at"]).replace("T", " ").replace("+00:00", " UTC")
    out["context"] = CONTEXT_LABELS.get(str(meta.get("context", meta.get("mode"))), str(meta.get("context", meta.get("mode")) or "?"))
    if cfg and meta.get("context", meta.get("mode")) != "selection":  # a selection-only answer retrieves nothing
        out["retrieval"] = str(cfg.get("retrieval_mode", cfg.get("mode", "?")))
        out["top-K"] = str(cfg.get("top_k", "?"))
        thr = cfg.get("threshold")
        out["threshold"] = f"{thr:.2f}" if isinstance(thr, (int, float)) else str(thr)
        fusion = cfg.get("fusion", "?")
        out["fusion"] = f"rrf (k={cfg.get('rrf_k')})" if fusion == "rrf" else f"weighted (dense {cfg.get('dense_weight')})"
        out["dedupe"] = "on" if cfg.get("dedupe") else "off"
    gen = meta.get("generator")
    if not gen:
        gen = f"openai-{llm.get('api', 'chat')}:{llm['model']}" if llm.get("model") else "extractive"
    out["generator"] = str(gen)
    if llm.get("model"):
        out["temperature"] = str(llm.get("temperature"))
        out["API key"] = "set" if llm.get("api_key") else "not set"
    return out


def badges(run: Run) -> list[tuple[str, str]]:
    """(label, severity) for the validation badges: severity is ok | info | warn | error."""
    ans = run.answer
    val = ans.get("validation") or {}
    out: list[tuple[str, str]] = []
    sev = {"ok": "ok", "abstained": "info", "partial": "warn", "cancelled": "warn", "error": "error"}
    out.append((run.outcome, sev.get(run.outcome, "info")))
    for key, label in (("stripped", "stripped"), ("unsupported", "unsupported"), ("uncited", "uncited"), ("hedged", "hedged")):
        n = len(val.get(key) or [])
        if n:
            out.append((f"{n} {label}", "warn" if key != "hedged" else "info"))
    if run.outcome != "abstained" and ans.get("status") == "abstained":
        out.append(("abstained", "info"))
    for action in val.get("guardrail_actions") or []:
        if not str(action).startswith("abstained"):
            out.append((str(action).split(":")[0], "info"))
    return out


# --------------------------------------------------------------------------- diff of two runs


@dataclass(frozen=True)
class EvidenceChange:
    kind: Literal["added", "dropped", "moved", "rescored"]
    chunk_id: str
    locator: str
    old_n: int | None
    new_n: int | None
    old_score: float | None
    new_score: float | None


@dataclass(frozen=True)
class RunDiff:
    answer_changed: bool
    answer_diff: tuple[tuple[str, str], ...]  # (" " | "-" | "+", sentence)
    added: tuple[EvidenceChange, ...]
    dropped: tuple[EvidenceChange, ...]
    moved: tuple[EvidenceChange, ...]
    unchanged_evidence: int  # same chunk, same [n] (its score may have changed: see ``rescored``)
    status_change: tuple[str, str] | None
    config_changes: tuple[tuple[str, Any, Any], ...]  # (key, old, new)
    rescored: tuple[EvidenceChange, ...] = ()  # same chunk, same [n], a different retrieval score

    @property
    def changed(self) -> bool:
        return bool(self.answer_changed or self.added or self.dropped or self.moved or self.rescored or self.status_change
                    or self.config_changes)

    def summary(self) -> str:
        if not self.changed:
            return "No change: same answer, same evidence, same configuration."
        parts = []
        if self.status_change:
            parts.append(f"status {self.status_change[0]} → {self.status_change[1]}")
        parts.append("answer changed" if self.answer_changed else "same answer")
        for name, items in (("added", self.added), ("dropped", self.dropped), ("moved", self.moved), ("rescored", self.rescored)):
            if items:
                parts.append(f"{len(items)} evidence {name}")
        if self.config_changes:
            parts.append(f"{len(self.config_changes)} setting{'s' if len(self.config_changes) != 1 else ''} changed")
        return "; ".join(parts)


_SENT = re.compile(r"(?<=[.!?])\s+")
_IGNORED_KEYS = {"request_id", "config.data_dir", "latency_ms", "chunks_retrieved", "chunks_used", "best_support", "support",
                 "candidates_trimmed", "packing"}


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(text.strip()) if s.strip()]


def _locator(chunk: Mapping[str, Any]) -> str:
    loc = f"{chunk.get('path')}:{chunk.get('start_line')}-{chunk.get('end_line')}"
    if chunk.get("page") is not None:
        loc = f"{chunk.get('path')} p.{chunk.get('page')}:{chunk.get('start_line')}-{chunk.get('end_line')}"
    return loc


def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def diff_runs(old: Run, new: Run) -> RunDiff:
    """What changed between two runs of a cell: answer text, evidence, status, configuration."""
    a, b = _sentences(old.text), _sentences(new.text)
    ops: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            ops.extend((" ", s) for s in a[i1:i2])
        else:
            ops.extend(("-", s) for s in a[i1:i2])
            ops.extend(("+", s) for s in b[j1:j2])

    def index(run: Run) -> dict[str, dict[str, Any]]:
        return {e["chunk"]["chunk_id"]: e for e in run.evidence if e.get("chunk")}

    ea, eb = index(old), index(new)
    added, dropped, moved, rescored = [], [], [], []
    same = 0
    for cid, e in eb.items():
        if cid not in ea:
            added.append(EvidenceChange("added", cid, _locator(e["chunk"]), None, e.get("n"), None, e.get("score")))
        elif ea[cid].get("n") != e.get("n"):
            o = ea[cid]
            moved.append(EvidenceChange("moved", cid, _locator(e["chunk"]), o.get("n"), e.get("n"), o.get("score"), e.get("score")))
        else:
            same += 1
            o = ea[cid]
            if _score_changed(o.get("score"), e.get("score")):
                rescored.append(EvidenceChange("rescored", cid, _locator(e["chunk"]), o.get("n"), e.get("n"), o.get("score"), e.get("score")))
    for cid, e in ea.items():
        if cid not in eb:
            dropped.append(EvidenceChange("dropped", cid, _locator(e["chunk"]), e.get("n"), None, e.get("score"), None))

    ma, mb = _flatten(old.metadata), _flatten(new.metadata)
    changes = []
    for key in sorted(set(ma) | set(mb)):
        if key in _IGNORED_KEYS or key.startswith("latency_ms.") or key.split(".")[0] in _IGNORED_KEYS:
            continue
        if ma.get(key) != mb.get(key):
            changes.append((key.removeprefix("config."), ma.get(key), mb.get(key)))
    status = (old.outcome, new.outcome) if old.outcome != new.outcome else None
    return RunDiff(
        answer_changed=a != b, answer_diff=tuple(ops), added=tuple(added), dropped=tuple(dropped),
        moved=tuple(sorted(moved, key=lambda c: c.new_n or 0)), unchanged_evidence=same, status_change=status,
        config_changes=tuple(changes), rescored=tuple(rescored),
    )


def _score_changed(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) > 1e-6
    return a != b


# --------------------------------------------------------------------------- exports

_MARKER = re.compile(r"\[(\s*\d+(?:\s*[-–]\s*\d+)?(?:\s*,\s*\d+(?:\s*[-–]\s*\d+)?)*\s*)\]")


def _exported_cells(nb: Notebook) -> list[Cell]:
    return [c for c in nb.cells if c.current is not None]


def export_json(nb: Notebook) -> str:
    """Every cell with its current run's complete Answer (as ``ragcore ask --json`` prints it)."""
    cells = []
    for c in _exported_cells(nb):
        run = c.current
        assert run is not None
        cells.append({
            "id": c.id, "question": c.question, "context_mode": c.context_mode, "selection": c.selection,
            "outcome": run.outcome, "ran_at": run.ran_at, "answer": run.answer,
        })
    doc = {"format": FORMAT, "collection": nb.collection, "exported_at": utc_now(), "cells": cells}
    return json.dumps(to_jsonable(doc), ensure_ascii=False, indent=2)


def _md_neutral(text: str) -> str:
    """Document text in a Markdown export: raw HTML is shown, never rendered."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _stamp_line(run: Run) -> str:
    return " · ".join(f"{k}: {v}" for k, v in config_stamp(run.answer).items())


def export_markdown(nb: Notebook) -> str:
    lines = [f"# Notebook — collection `{nb.collection}`", "", f"Exported {utc_now()} · {len(_exported_cells(nb))} cells", ""]
    for i, c in enumerate(_exported_cells(nb), 1):
        run = c.current
        assert run is not None
        lines += [f"## {i}. {_md_neutral(c.question)}", ""]
        lines += [f"*Status:* **{run.outcome}** · {_stamp_line(run)}", ""]
        if c.selection:
            lines += [f"*Selection:* `{c.selection.get('source') or '(pasted text)'}` from line {c.selection.get('start_line', 1)}", ""]
        body = run.text.strip() or "*(no answer text)*"
        lines += ["> " + ln if ln.strip() else ">" for ln in _md_neutral(body).split("\n")]
        lines.append("")
        if run.answer.get("error_message"):
            lines += [f"*Note:* {_md_neutral(str(run.answer['error_message']))}", ""]
        if run.citations:
            lines += ["**Citations**", ""]
            for cit in run.citations:
                loc = _locator(cit)
                section = " › ".join(cit.get("section") or [])
                score = cit.get("retrieval_score")
                score_s = f"{cit.get('score_kind')} {score:.3f}, " if isinstance(score, (int, float)) else ""
                lines.append(
                    f"- [{cit['n']}] `{loc}`" + (f" — {_md_neutral(section)}" if section else "")
                    + f" ({score_s}support {cit.get('support', 0):.2f}, {cit.get('origin', 'corpus')})"
                )
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"


_HTML_CSS = """
body{font:15px/1.55 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:860px;margin:2rem auto;padding:0 1rem;color:#1f2328}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-top:1px solid #d0d7de;padding-top:1rem}
.stamp{color:#57606a;font-size:.85rem}.answer{background:#f6f8fa;border-left:3px solid #0969da;padding:.6rem .9rem;white-space:pre-wrap}
.badge{display:inline-block;border-radius:9px;padding:0 .5rem;font-size:.8rem;background:#ddf4ff;margin-right:.3rem}
.badge.warn{background:#fff8c5}.badge.error{background:#ffebe9}.badge.ok{background:#dafbe1}
code{font-size:.85rem}sup a{text-decoration:none}ol.cites{font-size:.9rem}
"""


def export_html(nb: Notebook) -> str:
    """A self-contained page; every piece of document text is HTML-escaped (no active content)."""
    e = html.escape
    out = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Notebook — {e(nb.collection)}</title><style>{_HTML_CSS}</style></head><body>",
        f"<h1>Notebook — collection <code>{e(nb.collection)}</code></h1>",
        f'<p class="stamp">Exported {e(utc_now())} · {len(_exported_cells(nb))} cells</p>',
    ]
    for i, c in enumerate(_exported_cells(nb), 1):
        run = c.current
        assert run is not None
        out.append(f'<section id="cell-{e(c.id)}"><h2>{i}. {e(c.question)}</h2>')
        out.append("<p>" + "".join(f'<span class="badge {e(sev)}">{e(label)}</span>' for label, sev in badges(run)) + "</p>")
        out.append(f'<p class="stamp">{e(_stamp_line(run))}</p>')
        known = {cit["n"] for cit in run.citations}

        def link(m: re.Match[str], cell_id: str = c.id, known: set[int] = known) -> str:
            nums = re.findall(r"\d+", m.group(1))
            return "".join(
                f'<sup><a href="#c-{e(cell_id)}-{n}">[{n}]</a></sup>' if int(n) in known else f"[{n}]" for n in nums
            )

        text = run.text.strip()
        pieces, last = [], 0
        for m in _MARKER.finditer(text):
            pieces.append(e(text[last : m.start()]))
            pieces.append(link(m))
            last = m.end()
        pieces.append(e(text[last:]))
        out.append(f'<div class="answer">{"".join(pieces) or "<em>(no answer text)</em>"}</div>')
        if run.answer.get("error_message"):
            out.append(f"<p><em>{e(str(run.answer['error_message']))}</em></p>")
        if run.citations:
            out.append('<ol class="cites">')
            for cit in run.citations:
                section = " › ".join(cit.get("section") or [])
                out.append(
                    f'<li id="c-{e(c.id)}-{int(cit["n"])}" value="{int(cit["n"])}"><code>{e(_locator(cit))}</code>'
                    + (f" — {e(section)}" if section else "")
                    + f' <span class="stamp">({e(str(cit.get("origin", "corpus")))}, support {float(cit.get("support", 0)):.2f})</span></li>'
                )
            out.append("</ol>")
        out.append("</section>")
    out.append("</body></html>")
    return "\n".join(out)


def export_filename(collection: str, ext: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M")
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", collection) or "notebook"
    return f"notebook-{safe}-{stamp}.{ext}"


def cells_from_export(data: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """The cells of a JSON export (for scripts that read exports back)."""
    if data.get("format") != FORMAT:
        raise NotebookError(f"Not a ragcore notebook export (format {data.get('format')!r}, expected {FORMAT!r}).")
    return list(data.get("cells") or [])
