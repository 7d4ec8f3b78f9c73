"""The contract: every result ragcore hands out is one of these frozen dataclasses.

They are JSON-serialisable through :func:`to_jsonable`; the app, the CLI (``--json``) and
notebook exports all show the same objects.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

DocKind = Literal["markdown", "rst", "text", "html", "pdf", "code"]
Origin = Literal["corpus", "selection"]
ScoreKind = Literal["cosine", "bm25", "rrf", "weighted"]
Status = Literal["ok", "partial", "abstained", "error"]
DropReason = Literal["threshold", "dedupe", "per_doc", "top_k", "filter"]


# --------------------------------------------------------------------------- ingestion


@dataclass(frozen=True)
class SourceLine:
    """One line of a document's extracted text, tied to where it stands in the source file.

    For text, Markdown, reST and code ``text`` is the source line itself. For HTML it is the
    visible text that the source line ``no`` carries; for PDF it is a line of the page's
    extracted text and ``no`` counts lines within that page.
    """

    no: int  # 1-based
    text: str
    section: tuple[str, ...] = ()
    anchor: str | None = None
    page: int | None = None
    page_label: str | None = None  # PDF: the page's printed label (/PageLabels), when it differs from ``page``
    ocr_confidence: float | None = None  # PDF: set when OCR read the line; its words' mean confidence, 0..100


@dataclass(frozen=True)
class LoadedDocument:
    path: str  # relative to the ingest root, POSIX separators
    kind: DocKind
    doc_hash: str  # sha256 of the file's bytes
    lines: tuple[SourceLine, ...]
    title: str | None = None


def format_locator(
    path: str, start: int, end: int, page: int | None = None, anchor: str | None = None, page_label: str | None = None,
) -> str:
    """Where a passage stands, human form: ``docs/x.md:12-20``, ``x.pdf p.3:1-9``, ``a.html:4-9#intro``;
    a PDF page with a printed label other than its number: ``x.pdf p.3 (901):1-9``."""
    shown = f"{page} ({page_label})" if page_label and page_label != str(page) else f"{page}"
    loc = f"{path} p.{shown}:{start}-{end}" if page is not None else f"{path}:{start}-{end}"
    return f"{loc}#{anchor}" if anchor else loc


@dataclass(frozen=True)
class Chunk:
    chunk_id: str  # sha256(path, span, text)[:32]
    text: str
    path: str
    doc_hash: str
    kind: DocKind
    start_line: int
    end_line: int
    section: tuple[str, ...] = ()
    anchor: str | None = None
    page: int | None = None
    ordinal: int = 0  # position within its document
    title: str | None = None
    page_label: str | None = None  # PDF: the printed page label (/PageLabels) when it differs from ``page``
    ocr_confidence: float | None = None  # PDF: the text was read by OCR; the lowest of its lines' confidence, 0..100

    @property
    def section_label(self) -> str:
        return " › ".join(self.section)

    def to_payload(self, **extra: Any) -> dict[str, Any]:
        """The chunk's keys of its Qdrant point payload (and of its LlamaIndex node's metadata), then
        ``extra`` (the writer adds ``doc_chunks``, ``fp``, ``context``). The only Chunk -> payload
        conversion: the key order is the one every stored collection has."""
        return {
            "chunk_id": self.chunk_id, "path": self.path, "doc_hash": self.doc_hash, "kind": self.kind,
            "start_line": self.start_line, "end_line": self.end_line, "section": list(self.section),
            "anchor": self.anchor, "page": self.page, "ordinal": self.ordinal, "title": self.title,
            # PDF-only keys, present only when set: every other payload stays as it always was
            **{k: v for k, v in (("page_label", self.page_label), ("ocr_confidence", self.ocr_confidence)) if v is not None},
            **extra,
        }

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any], text: str | None = None) -> "Chunk":
        """The chunk a stored payload (or a ragcore node's metadata) stands for; the text is ``text``,
        else the payload's ``text``, else the one LlamaIndex keeps inside ``_node_content``."""
        if text is None:
            text = payload.get("text")
        if text is None:
            text = json.loads(payload.get("_node_content") or "{}").get("text", "")
        return cls(
            chunk_id=str(payload["chunk_id"]), text=text, path=str(payload["path"]),
            doc_hash=str(payload.get("doc_hash", "")), kind=payload.get("kind", "text"),
            start_line=int(payload["start_line"]), end_line=int(payload["end_line"]),
            section=tuple(payload.get("section") or ()), anchor=payload.get("anchor"), page=payload.get("page"),
            ordinal=int(payload.get("ordinal") or 0), title=payload.get("title"),
            page_label=payload.get("page_label"), ocr_confidence=payload.get("ocr_confidence"),
        )

    @property
    def locator(self) -> str:
        """Human form: ``docs/x.md:12-20`` plus page or anchor where known."""
        return format_locator(self.path, self.start_line, self.end_line, self.page, self.anchor, self.page_label)


@dataclass(frozen=True)
class FileOutcome:
    path: str
    status: Literal["added", "updated", "unchanged", "removed", "failed", "skipped"]  # skipped: not read (git: submodule, LFS, binary)
    chunks: int = 0
    reason: str | None = None
    ocr_pages: int = 0  # PDF pages whose text was read by OCR (scans)


@dataclass(frozen=True)
class IngestReport:
    collection: str
    root: str
    outcomes: tuple[FileOutcome, ...]
    corpus_version: str
    built_at: str
    seconds: float
    chunks_written: int
    chunks_embedded: int = 0  # written chunks whose vectors had to be computed (others reused)
    skipped: tuple[FileOutcome, ...] = ()  # files of a git tree not read, each with its reason (gitsource.py)
    source: Mapping[str, Any] = field(default_factory=dict)  # where the files came from (SourceRecord.as_meta)
    incremental: bool = False  # a git re-ingest that read only the files changed since the recorded commit
    # an embedding endpoint's ingest: what it sustained (texts/s, tokens/s, request size, in flight;
    # encoders/adaptive.py Sustained); None for a local model
    endpoint: Mapping[str, Any] | None = None

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)

    @property
    def failed(self) -> tuple[FileOutcome, ...]:
        return tuple(o for o in self.outcomes if o.status == "failed")

    @property
    def ocr_pages(self) -> int:
        """Pages of the files read in this ingest whose text came from OCR."""
        return sum(o.ocr_pages for o in self.outcomes)

    def summary(self) -> dict[str, int]:
        return {s: self.count(s) for s in ("added", "updated", "unchanged", "removed", "failed")}


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    documents: int
    chunks: int
    corpus_version: str | None
    built_at: str | None
    root: str | None
    embedding_model: str | None
    settings: Mapping[str, Any] = field(default_factory=dict)
    incomplete: bool = False  # an ingest did not finish (cancelled or killed): answers say so
    snapshot: str | None = None  # its query snapshot: ok | missing | stale | damaged (None: none kept, a server)
    problem: str | None = None  # what cannot be read of it (damaged files, a busy store) and what to run
    source: Mapping[str, Any] = field(default_factory=dict)  # the git source record (ingest/gitsource.py), if any

    @property
    def state(self) -> str:
        """ready · empty (ingested, no chunks) · incomplete (created, never finished: no corpus version) ·
        damaged (its files in the store cannot be read: ``problem`` says what to run) · busy (another process
        holds the store): one word for `ragcore collections`, /api/collections and the app."""
        if self.problem:
            return "busy" if "in use by another process" in self.problem else "damaged"
        if self.corpus_version is None:
            return "incomplete"
        return "empty" if self.chunks == 0 else "ready"


# --------------------------------------------------------------------------- retrieval


@dataclass(frozen=True)
class Candidate:
    """A chunk the retriever considered, with every score it has and why it was cut."""

    chunk: Chunk
    dense_score: float | None  # cosine similarity, -1..1
    sparse_score: float | None  # BM25 with Qdrant's IDF
    fused_score: float | None  # RRF or weighted, per settings
    dense_rank: int | None
    sparse_rank: int | None
    fused_rank: int | None
    rank: int  # 1-based rank in the mode's ordering
    kept: bool = True
    dropped_reason: DropReason | None = None
    origin: Origin = "corpus"
    # Retrieval signals (ragcore/retrieval/fields.py, documents.py); None when the signal is off.
    field_score: float | None = None  # part of sparse_score from title/section/anchor/file-name matches
    matched_fields: tuple[str, ...] = ()  # which, as "field:term" ("section:auth_user_model", "path:settings")
    doc_score: float | None = None  # its document's aggregated score (documents ranked, then passages)
    doc_rank: int | None = None  # its document's rank
    chunk_rank: int | None = None  # its rank before documents were ranked (None: documents not ranked)
    # Document signals (ragcore/retrieval/docsignals.py); None / () when the signal is off.
    doc_title_cosine: float | None = None  # cosine(question, its document's title)
    doc_centroid_cosine: float | None = None  # cosine(question, its document's mean chunk vector)
    named_by: tuple[str, ...] = ()  # what names its document: "question:DJANGO_SETTINGS_MODULE", "evidence:git-clone"
    rerank_score: float | None = None  # the reranker's relevance score (retrieval/rerank.py); None: not reranked
    seated: bool = False  # kept by a passage seat (retrieval/passage_seats.py), not by its document's rank

    def score_for(self, kind: ScoreKind) -> float | None:
        return {"cosine": self.dense_score, "bm25": self.sparse_score}.get(kind, self.fused_score)

    def with_cut(self, reason: DropReason | None) -> "Candidate":
        """This candidate kept (``reason`` None) or cut for ``reason``."""
        return self.evolve(kept=reason is None, dropped_reason=reason)

    def evolve(self, **changes: Any) -> "Candidate":
        """``dataclasses.replace`` without re-running ``__init__``: a pool's re-rank and re-cut copy
        every candidate (80,000 copies in one auto-calibration, a quarter of its time); Candidate
        has no ``__post_init__`` to skip, and a misspelt field still fails."""
        unknown = changes.keys() - _CANDIDATE_FIELDS
        if unknown:
            raise TypeError(f"Candidate has no field {sorted(unknown)[0]!r}")
        new = object.__new__(Candidate)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        return new


_CANDIDATE_FIELDS = frozenset(f.name for f in dataclasses.fields(Candidate))


@dataclass(frozen=True)
class RetrievalResult:
    query: str
    retrieval_mode: str
    rank_score_kind: ScoreKind  # the score that orders candidates in this mode
    candidates: tuple[Candidate, ...]  # all, in rank order, kept and cut
    latency_ms: Mapping[str, float] = field(default_factory=dict)
    # pseudo-relevance feedback: (term, query weight) added to the BM25 query (retrieval/expansion.py)
    expansion_terms: tuple[tuple[str, float], ...] = ()
    notes: tuple[str, ...] = ()  # what went differently, e.g. a reranker that failed (the fused order was kept)
    # the query's dense vector (a numpy array), so later stages (the topic match) need not embed the
    # question again; not part of the JSON form
    query_vector: Any = field(default=None, repr=False, compare=False, metadata={"json": False})

    @property
    def kept(self) -> tuple[Candidate, ...]:
        return tuple(c for c in self.candidates if c.kept)


# --------------------------------------------------------------------------- answers


@dataclass(frozen=True)
class Evidence:
    """A numbered piece of evidence [n] given to the generator."""

    n: int
    chunk: Chunk
    origin: Origin
    score: float | None
    score_kind: ScoreKind
    dense_score: float | None = None
    sparse_score: float | None = None
    fused_score: float | None = None
    # in the evidence by a passage seat only (retrieval/passage_seats.py): it widens the evidence, but
    # the extractive answer does not open its page on its score alone (synthesis/extractive/composer.py)
    seated: bool = False


@dataclass(frozen=True)
class Citation:
    n: int
    chunk_id: str
    path: str
    start_line: int
    end_line: int
    section: tuple[str, ...]
    page: int | None
    anchor: str | None
    url: str  # "?path=…&lines=a-b[&page=p]": the query the app's source viewer opens
    retrieval_score: float | None
    score_kind: ScoreKind
    support: float  # 0..1, how well the citing sentences are supported by this evidence
    origin: Origin = "corpus"
    page_label: str | None = None  # PDF: the printed page label beside the physical ``page``
    answers: float | None = None  # 0..1, how well the citing sentences answer the question (abstain/answer_fit.py)
    permalink: str | None = None  # the cited lines on the forge at the collection's commit (citations/forge.py)


@dataclass(frozen=True)
class SentenceCheck:
    text: str
    citations: tuple[int, ...]
    support: float  # 0..1
    # injected: cites evidence that contains instruction-like text (see injection.py)
    flags: tuple[Literal["uncited", "unsupported", "hedged", "injected"], ...] = ()


@dataclass(frozen=True)
class Validation:
    stripped: tuple[str, ...] = ()  # markers removed because they point at no evidence
    sentences: tuple[SentenceCheck, ...] = ()
    guardrail_actions: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    suspicious_evidence: tuple[int, ...] = ()  # evidence numbers whose text looks like an instruction

    @property
    def unsupported(self) -> tuple[str, ...]:
        return tuple(s.text for s in self.sentences if "unsupported" in s.flags)

    @property
    def uncited(self) -> tuple[str, ...]:
        return tuple(s.text for s in self.sentences if "uncited" in s.flags)

    @property
    def hedged(self) -> tuple[str, ...]:
        return tuple(s.text for s in self.sentences if "hedged" in s.flags)

    @property
    def injected(self) -> tuple[str, ...]:
        return tuple(s.text for s in self.sentences if "injected" in s.flags)


@dataclass(frozen=True)
class Confidence:
    """How sure the answer is that it holds the answer: the extractive reader's probability,
    calibrated leave one corpus out (synthesis/extractive/reader.py, docs/07). ``level`` is
    "high", "medium" or "low"; "low" is below the bar, and such an answer has status partial."""

    value: float  # 0..1
    level: str  # "high" | "medium" | "low"
    # whether the level decides the status: False while the shipped model's calibration has not met
    # its target (bench/results/reader.md), so a "low" answer is shown as it is, its level a hint
    decides: bool = True


@dataclass(frozen=True)
class Answer:
    question: str
    answer: str  # markdown with [n] markers
    status: Status
    citations: tuple[Citation, ...] = ()
    evidence: tuple[Evidence, ...] = ()  # numbered evidence given to the generator
    candidates: tuple[Candidate, ...] = ()  # every retrieved chunk, used or not
    validation: Validation = field(default_factory=Validation)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    error_message: str | None = None
    confidence: Confidence | None = None  # the extractive answer's; None for a model's answer, an abstention, an error

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(self)

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)


# --------------------------------------------------------------------------- events

EventType = Literal["started", "sources", "token", "message", "done", "error"]


@dataclass(frozen=True)
class Event:
    type: EventType
    request_id: str
    seq: int
    ts: float
    data: Mapping[str, Any] = field(default_factory=dict)

    @staticmethod
    def now() -> float:
        return time.time()


# --------------------------------------------------------------------------- helpers


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, tuples, paths and enums to plain JSON types (recursively)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        out = {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.metadata.get("json", True)}
        if isinstance(obj, Validation):
            out["unsupported"] = list(obj.unsupported)
            out["uncited"] = list(obj.uncited)
            out["hedged"] = list(obj.hedged)
            out["injected"] = list(obj.injected)
        return out
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, float):
        return round(obj, 6) if math.isfinite(obj) else None  # JSON has no NaN or infinity
    return obj
