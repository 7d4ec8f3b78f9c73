"""Run an evaluation data set against an :class:`~ragcore.engine.engine.Engine` for one configuration.

:func:`run_config` asks every question of a data set with one :class:`RagcoreSettings` and turns each
:class:`~ragcore.types.Answer` into a :class:`~ragcore.eval.metrics.QuestionResult` (what the
metrics need) inside a :class:`QuestionRecord` (plus what a person needs to see why a question
failed: the best chunk of each retrieved document, the composer's best support score, the
error). The run's :class:`~ragcore.eval.metrics.Summary` comes from
:func:`~ragcore.eval.metrics.summarize`.

What counts as "retrieved" (the ranking the retrieval metrics read)
    every candidate of the answer's pool, in rank order (``settings.candidates`` per branch,
    so recall@20 is measurable whatever ``top_k`` is), except candidates cut by the cosine
    threshold: a chunk the threshold removes is not retrieved. ``top_k`` decides the evidence
    the composer sees, so it moves the answer metrics; the extra :attr:`EvalRun.evidence_recall`
    reports recall over the kept evidence alone.

Paths
    ragcore stores a chunk's path relative to the folder that was ingested; the data set's
    ``relevant_docs`` are relative to its ``corpus/`` folder. When the two differ by a leading
    folder (``corpus/topics/x.html`` after ingesting the data set folder itself) the prefix is
    inferred once per collection (:func:`infer_prefix`) and stripped (:class:`DocPathMapper`).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

from ragcore.settings.catalog import config_keys
from ragcore.settings.config import RagcoreSettings
from ragcore.types import Answer
from ragcore.eval.answering import passage_flags, passage_rates
from ragcore.eval.dataset import EvalDataset, EvalQuestion
from ragcore.eval.metrics import QuestionResult, Summary, dedupe_ranking, recall_at_k, summarize

__all__ = [
    "DocHit",
    "DocPathMapper",
    "EvalRun",
    "Progress",
    "QuestionRecord",
    "RUN_KINDS",
    "abstain_curve",
    "corpus_docs",
    "infer_prefix",
    "mapper_for",
    "record_from_answer",
    "run_config",
    "summarize_records",
]

Progress = Callable[[int, int, str], None]  # (questions done, questions total, current label)
RunKind = Literal["ragcore", "llamaindex"]
RUN_KINDS: tuple[str, ...] = ("ragcore", "llamaindex")

# the Settings fields that describe a configuration in reports (the rest is plumbing): the catalog's
CONFIG_KEYS = config_keys()


# --------------------------------------------------------------------------- paths


def corpus_docs(corpus_dir: Path | None) -> frozenset[str]:
    """Every file under a data set's ``corpus/`` folder as a POSIX path relative to it."""
    if corpus_dir is None or not Path(corpus_dir).is_dir():
        return frozenset()
    root = Path(corpus_dir)
    return frozenset(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def infer_prefix(stored_paths: Iterable[str], known_docs: Iterable[str]) -> str:
    """The leading folder (``""`` or ``"a/b/"``) whose removal makes most stored paths name a
    known data-set document. ``""`` wins ties, so a collection ingested from ``corpus/`` itself
    keeps its paths as they are."""
    known = set(known_docs)
    paths = list(dict.fromkeys(stored_paths))
    if not known or not paths:
        return ""
    votes: Counter[str] = Counter()
    for p in paths:
        parts = PurePosixPath(p).parts
        for i in range(len(parts)):
            if "/".join(parts[i:]) in known:
                votes["/".join(parts[:i]) + ("/" if i else "")] += 1
    if not votes:
        return ""
    best = max(votes.values())
    return "" if votes.get("", 0) == best else max(votes, key=lambda k: (votes[k], -len(k)))


@dataclass(frozen=True)
class DocPathMapper:
    """Stored chunk path -> data-set document path (strips ``prefix`` when present)."""

    prefix: str = ""

    def __call__(self, stored_path: str) -> str:
        if self.prefix and stored_path.startswith(self.prefix):
            return stored_path[len(self.prefix) :]
        return stored_path

    def stored(self, doc_path: str) -> str:
        """The reverse: a data-set document path as the collection stores it."""
        return self.prefix + doc_path


def mapper_from_records(records: Iterable["QuestionRecord"]) -> DocPathMapper:
    """The mapping a finished run used, read back from its hits (stored vs data-set path)."""
    for rec in records:
        for h in rec.hits:
            if h.stored_path.endswith(h.path):
                return DocPathMapper(h.stored_path[: len(h.stored_path) - len(h.path)])
    return DocPathMapper()


def mapper_for(engine: Any, collection: str, dataset: EvalDataset) -> DocPathMapper:
    """Infer the path mapping between a collection and a data set (see the module docstring)."""
    known = set(corpus_docs(dataset.corpus_dir))
    for q in dataset.questions:
        known.update(q.relevant_docs)
    try:
        stored = [p for p, _ in engine.documents(collection)]
    except Exception:  # an unknown collection: every question will report the error anyway
        stored = []
    return DocPathMapper(infer_prefix(stored, known))


# --------------------------------------------------------------------------- records

STORED_DOCS = 20  # distinct documents of a ranking kept in saved results (recall@20 is the deepest metric)
STORED_HITS = 10  # retrieved documents with their lines kept in saved results


@dataclass(frozen=True)
class DocHit:
    """A retrieved document at its first (best) rank, with the lines of that best chunk."""

    path: str  # data-set form (mapped)
    stored_path: str  # as the collection stores it (for source-viewer links)
    rank: int  # 1-based among distinct documents
    chunk_rank: int  # 1-based rank of its best chunk among the retrieved chunks
    start_line: int
    end_line: int
    page: int | None = None
    kept: bool = True  # that chunk was among the evidence (not cut by top_k/dedupe)
    relevant: bool = False


@dataclass(frozen=True)
class QuestionRecord:
    """One question's outcome: the metric inputs plus what explains them."""

    result: QuestionResult
    best_support: float | None = None  # the support score the abstain bar is compared with
    hits: tuple[DocHit, ...] = ()  # distinct retrieved documents, best first (first 20)
    evidence_docs: tuple[str, ...] = ()  # documents of the kept evidence, in rank order
    relevant: tuple[str, ...] = ()  # "path#anchor" judgements, as in the data set
    error_message: str | None = None
    closest_section: str | None = None  # the corpus heading closest to the question ("heading — path")
    passage: Mapping[str, bool] | None = None  # where the answering passage went (eval/answering.py)

    @property
    def id(self) -> str:
        return self.result.id

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready; the ranking is kept as its first ``STORED_DOCS`` distinct documents
        (every metric looks at 20 at most) and the first ``STORED_HITS`` hits."""
        r = self.result
        return {
            "id": r.id, "question": r.question, "answerable": r.answerable, "status": r.status,
            "answer": r.answer, "reference": r.reference, "relevant_docs": list(r.relevant_docs),
            "relevant": list(self.relevant), "retrieved_docs": list(dedupe_ranking(r.retrieved_docs))[:STORED_DOCS],
            "cited_docs": list(r.cited_docs), "supported_sentences": r.supported_sentences,
            "total_sentences": r.total_sentences, "latency_ms": {k: round(v, 2) for k, v in r.latency_ms.items()},
            "best_support": self.best_support, "evidence_docs": list(self.evidence_docs),
            "hits": [h.__dict__ for h in self.hits[:STORED_HITS]], "error_message": self.error_message,
            "closest_section": self.closest_section, "passage": dict(self.passage) if self.passage else None,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "QuestionRecord":
        """Read back what :meth:`as_dict` wrote (saved runs; ``retrieved_docs`` is then the
        deduplicated ranking, which gives the same document-level metrics)."""
        result = QuestionResult(
            id=str(d["id"]), question=d.get("question", ""), answerable=bool(d.get("answerable")),
            status=d.get("status", "error"), retrieved_docs=tuple(d.get("retrieved_docs", ())),
            relevant_docs=tuple(d.get("relevant_docs", ())), cited_docs=tuple(d.get("cited_docs", ())),
            supported_sentences=int(d.get("supported_sentences", 0)), total_sentences=int(d.get("total_sentences", 0)),
            answer=d.get("answer", ""), reference=d.get("reference", ""), latency_ms=dict(d.get("latency_ms", {})),
        )
        hits = tuple(DocHit(**h) for h in d.get("hits", ()))
        return cls(result=result, best_support=d.get("best_support"), hits=hits,
                   evidence_docs=tuple(d.get("evidence_docs", ())), relevant=tuple(d.get("relevant", ())),
                   error_message=d.get("error_message"), closest_section=d.get("closest_section"), passage=d.get("passage"))


@dataclass(frozen=True)
class EvalRun:
    """One configuration run over a data set."""

    label: str
    kind: RunKind
    collection: str
    config: Mapping[str, Any]  # CONFIG_KEYS of the settings (or the baseline's own description)
    records: tuple[QuestionRecord, ...]
    summary: Summary
    retrieval_only: bool = False  # no answer composer (the LlamaIndex baseline)
    seconds: float = 0.0
    notes: tuple[str, ...] = ()

    @property
    def results(self) -> list[QuestionResult]:
        return [r.result for r in self.records]

    @property
    def evidence_recall(self) -> float | None:
        """Mean recall over the documents of the kept evidence (what the composer saw), over
        the judged answerable questions; ``None`` for retrieval-only runs."""
        if self.retrieval_only:
            return None
        vals = [recall_at_k(r.evidence_docs, r.result.relevant_docs, 10_000)
                for r in self.records if r.result.answerable and r.result.relevant_docs]
        return sum(vals) / len(vals) if vals else None

    @property
    def citable(self) -> tuple[int, int, int] | None:
        """Over the answered, judged, answerable questions: (answers citing a relevant document,
        answers whose evidence holds one, answers). The second bounds the first whatever page the
        composer picks to cite: a ceiling set by retrieval. ``None`` for retrieval-only runs."""
        if self.retrieval_only:
            return None
        answered = [r for r in self.records if r.result.answerable and r.result.relevant_docs and r.result.answered]
        cited = sum(1 for r in answered if set(r.result.cited_docs) & set(r.result.relevant_docs))
        held = sum(1 for r in answered if set(r.evidence_docs) & set(r.result.relevant_docs))
        return cited, held, len(answered)

    def metrics(self) -> dict[str, Any]:
        """The summary as a flat dict (plus ``evidence_recall``; answer metrics are ``None``
        for retrieval-only runs)."""
        m = self.summary.as_dict()
        m["evidence_recall"] = self.evidence_recall
        m.update(passage_rates(r.passage for r in self.records if r.result.answerable and not self.retrieval_only))
        if self.retrieval_only:
            for k in ANSWER_METRICS:
                m[k] = None
        return m


ANSWER_METRICS = ("answer_rate", "abstain_rate", "citation_precision", "supported_share", "token_f1")


def summarize_records(records: Sequence[QuestionRecord]) -> Summary:
    return summarize([r.result for r in records])


def settings_config(settings: RagcoreSettings) -> dict[str, Any]:
    return {k: getattr(settings, k) for k in CONFIG_KEYS}


# --------------------------------------------------------------------------- one answer


def record_from_answer(q: EvalQuestion, answer: Answer, mapper: DocPathMapper, *, max_hits: int = 20,
                       encoder: Any = None) -> QuestionRecord:
    """Reduce an :class:`Answer` to a :class:`QuestionRecord` (see the module docstring for
    what counts as retrieved)."""
    relevant = set(q.relevant_docs)
    ranking: list[str] = []
    hits: list[DocHit] = []
    seen: set[str] = set()
    evidence_docs: list[str] = []
    pool = [c for c in sorted(answer.candidates, key=lambda c: c.rank) if c.dropped_reason != "threshold"]
    for chunk_rank, c in enumerate(pool, start=1):
        doc = mapper(c.chunk.path)
        ranking.append(doc)
        if c.kept:
            evidence_docs.append(doc)
        if doc not in seen:
            seen.add(doc)
            if len(hits) < max_hits:
                hits.append(DocHit(
                    path=doc, stored_path=c.chunk.path, rank=len(seen), chunk_rank=chunk_rank,
                    start_line=c.chunk.start_line, end_line=c.chunk.end_line, page=c.chunk.page,
                    kept=c.kept, relevant=doc in relevant,
                ))
    sentences = answer.validation.sentences if answer.status not in ("abstained", "error") else ()
    supported = sum(1 for s in sentences if "unsupported" not in s.flags and "uncited" not in s.flags)
    latency = {k: float(v) for k, v in (answer.metadata.get("latency_ms") or {}).items()}
    result = QuestionResult(
        id=q.id, question=q.question, answerable=q.answerable, status=answer.status,
        retrieved_docs=tuple(ranking), relevant_docs=q.relevant_docs,
        cited_docs=tuple(mapper(c.path) for c in answer.citations if c.origin == "corpus"),
        supported_sentences=supported, total_sentences=len(sentences),
        answer=answer.answer if answer.status != "error" else "", reference=q.answer, latency_ms=latency,
    )
    best = answer.metadata.get("best_support")
    topic = (answer.metadata.get("support") or {}).get("topic")
    return QuestionRecord(
        result=result, best_support=float(best) if best is not None else None, hits=tuple(hits),
        evidence_docs=tuple(dict.fromkeys(evidence_docs)), relevant=q.relevant,
        error_message=answer.error_message if answer.status == "error" else None,
        closest_section=f"{topic['heading']} — {mapper(topic['path'])} ({topic['score']:.2f})" if topic else None,
        passage=passage_flags(q.question, q.answer, answer, encoder=encoder) if q.answerable and answer.status != "error" else None,
    )


# --------------------------------------------------------------------------- one configuration


def run_config(
    engine: Any,
    dataset: EvalDataset,
    settings: RagcoreSettings,
    *,
    collection: str | None = None,
    label: str | None = None,
    progress: Progress | None = None,
    mapper: DocPathMapper | None = None,
    questions: Sequence[EvalQuestion] | None = None,
    notes: Sequence[str] = (),
    cold_cache: bool = False,
) -> EvalRun:
    """Ask every question of ``dataset`` (or ``questions``) with ``settings`` and score the run.

    ``engine`` is a :class:`~ragcore.engine.engine.Engine` (anything with ``ask`` and
    ``documents``). ``progress(done, total, label)`` is called before each question and once
    at the end. A question that fails is recorded with status ``error`` and its message; the
    run goes on.

    ``cold_cache``: empty the encoder's vector cache (query and sentence vectors) first, so
    that each configuration's latency is measured from the same cold state instead of
    depending on which configuration ran before it. Leave it off on a shared engine (the app),
    where the cache is what keeps answers fast.
    """
    name = collection or settings.collection
    qs = list(questions if questions is not None else dataset.questions)
    mapper = mapper or mapper_for(engine, name, dataset)
    label = label or default_label(settings)
    s = settings.with_(collection=name)
    if s.calibrated_bar:  # record the bar actually in force, whichever its source
        s = s.with_(abstain_bar=engine.abstain_bar_info(name, s).value, calibrated_bar=False)
    records: list[QuestionRecord] = []
    labeller = _label_encoder(engine)
    if cold_cache:
        clear_encoder_cache(engine)
    t0 = time.perf_counter()
    for i, q in enumerate(qs):
        if progress:
            progress(i, len(qs), f"{label}: {q.id}")
        try:
            answer = engine.ask(q.question, collection=name, settings=s)
        except Exception as exc:  # Engine.ask reports its own errors; this is a last resort
            answer = Answer(question=q.question, answer="", status="error", error_message=f"{type(exc).__name__}: {exc}")
        records.append(record_from_answer(q, answer, mapper, encoder=labeller))
    if progress:
        progress(len(qs), len(qs), f"{label}: done")
    return EvalRun(
        label=label, kind="ragcore", collection=name, config=settings_config(s), records=tuple(records),
        summary=summarize_records(records), seconds=time.perf_counter() - t0, notes=tuple(notes),
    )


def _label_encoder(engine: Any) -> Any:
    """The encoder the answering-passage labels weigh meaning with: the engine's when it is the
    bundled MiniLM (the labels' cosine bars were set on it, eval/answering.py), else none (words only)."""
    from ragcore.encoders.minilm import OnnxMiniLM

    enc = getattr(engine, "encoder", None)
    return enc if isinstance(enc, OnnxMiniLM) else None


def clear_encoder_cache(engine: Any) -> bool:
    """Empty the engine's encoder cache (:class:`~ragcore.encoders.minilm.OnnxMiniLM` keeps query
    and sentence vectors) through its public ``clear_cache()``; ``False`` when the encoder has
    no cache to clear (another encoder class, or no encoder)."""
    clear = getattr(getattr(engine, "encoder", None), "clear_cache", None)
    if not callable(clear):
        return False
    clear()
    return True


def default_label(settings: RagcoreSettings) -> str:
    return f"ragcore {settings.retrieval_mode}"


# --------------------------------------------------------------------------- abstain bar


@dataclass(frozen=True)
class AbstainPoint:
    bar: float
    answer_rate: float  # on answerable questions
    abstain_rate: float  # on unanswerable questions


def abstain_curve(records: Sequence[QuestionRecord], bars: Iterable[float]) -> list[AbstainPoint]:
    """What answer/abstain rates each abstain bar would give, from the recorded best support
    scores (the composer abstains exactly when best support < bar; the score does not depend
    on the bar). Questions without a score (errors, routed messages) count as not answered
    and not abstained."""
    return _curve([(r.result.answerable, r.best_support) for r in records], bars)


def _curve(scores: Sequence[tuple[bool, float | None]], bars: Iterable[float]) -> list[AbstainPoint]:
    ans = [b for answerable, b in scores if answerable]
    una = [b for answerable, b in scores if not answerable]
    out = []
    for bar in bars:
        a = sum(1 for b in ans if b is not None and b >= bar) / len(ans) if ans else 0.0
        u = sum(1 for b in una if b is not None and b < bar) / len(una) if una else 0.0
        out.append(AbstainPoint(round(float(bar), 4), a, u))
    return out


@dataclass(frozen=True)
class BarChoice:
    bar: float
    answer_rate: float
    abstain_rate: float
    both_met: bool  # answer_rate >= target and abstain_rate >= target


def recommend_bar(records: Sequence[QuestionRecord], target: float = 0.8, step: float = 0.005) -> BarChoice | None:
    """The abstain bar that maximises the smaller of (answer rate, abstain rate), then their
    sum; among equally good bars, the one in the middle of the plateau (away from both edges).
    ``None`` without scores."""
    return recommend_bar_for_scores([(r.result.answerable, r.best_support) for r in records], target, step)


def recommend_bar_for_scores(
    scores: Sequence[tuple[bool, float | None]], target: float = 0.8, step: float = 0.005,
) -> BarChoice | None:
    """``recommend_bar`` over (answerable, support score) pairs."""
    scored = [b for _, b in scores if b is not None]
    if not scored:
        return None
    lo = min(scored) - step
    hi = max(scored) + step
    n = int((hi - lo) / step) + 1
    curve = _curve(scores, [lo + i * step for i in range(n)])
    def key(p: AbstainPoint) -> tuple[float, float]:
        return (round(min(p.answer_rate, p.abstain_rate), 9), round(p.answer_rate + p.abstain_rate, 9))

    best = max(key(p) for p in curve)
    plateau = [p for p in curve if key(p) == best]
    mid = plateau[len(plateau) // 2]
    bar = min(max(mid.bar, 0.0), 1.0)  # the scan runs a little past the scores; a bar is a 0..1 value
    return BarChoice(bar, mid.answer_rate, mid.abstain_rate, mid.answer_rate >= target and mid.abstain_rate >= target)


__all__ += ["clear_encoder_cache", "AbstainPoint", "BarChoice", "recommend_bar", "recommend_bar_for_scores", "settings_config", "ANSWER_METRICS", "CONFIG_KEYS"]


# --------------------------------------------------------------------------- explaining a question


def failure_reasons(record: QuestionRecord, *, k: int = 10) -> list[str]:
    """Why a question counts as failed ("" list = it did not): for an answerable question,
    an error, no relevant document among the first ``k`` retrieved documents, an abstention,
    unsupported or uncited sentences, citations of which none is relevant; for an
    unanswerable one, answering instead of abstaining."""
    r = record.result
    if r.status == "error":
        return [f"error: {record.error_message or 'unknown'}"]
    out: list[str] = []
    if not r.answerable:
        if r.status != "abstained" and r.total_sentences:
            out.append("answered an unanswerable question")
        return out
    if r.relevant_docs and recall_at_k(r.retrieved_docs, r.relevant_docs, k) == 0.0:
        out.append(f"retrieval: no relevant document in the top {k}")
    if r.status == "abstained":
        out.append("abstained")
    elif r.total_sentences and r.supported_sentences < r.total_sentences:
        out.append(f"{r.total_sentences - r.supported_sentences} of {r.total_sentences} sentences unsupported or uncited")
    if r.cited_docs and r.relevant_docs and not set(r.cited_docs) & set(r.relevant_docs):
        out.append("no citation into a relevant document")
    return out


def locate_doc(engine: Any, collection: str, stored_path: str, anchor: str | None = None) -> tuple[int, int, int | None] | None:
    """(start_line, end_line, page) of the chunk of a stored document that carries ``anchor``
    (else its first chunk), for a source-viewer link; ``None`` when the collection does not
    hold the document."""
    try:
        chunks = engine.document_chunks(stored_path, collection)
    except Exception:  # noqa: BLE001 - a link is a convenience
        return None
    if not chunks:
        return None
    hit = next((c for c in chunks if anchor and c.anchor == anchor), chunks[0])
    return hit.start_line, hit.end_line, hit.page


__all__ += ["failure_reasons", "locate_doc", "mapper_from_records"]
