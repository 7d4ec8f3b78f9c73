"""Baselines evaluated in the same run as ragcore, on the same questions.

LlamaIndex ``VectorStoreIndex`` (retrieval only)
    A plain LlamaIndex index as a user would build it from the docs: one ``Document`` per
    corpus file, LlamaIndex's default ingestion (``SentenceSplitter()``: 1024-token chunks,
    200 overlap, metadata-aware), the default in-memory ``SimpleVectorStore``, and the same
    embedding model as ragcore (:class:`~ragcore.llamaindex.embedding.OnnxEmbedding` over the same ONNX
    MiniLM, which reads at most 256 word pieces of each chunk, as it does for ragcore).

    The text of each file comes from ragcore's own loaders (:func:`~ragcore.ingest.read.loaders.load_file`),
    so both sides read the same visible text and the baseline does not embed HTML markup —
    what differs is chunking, the embedded text and the ranking, not HTML extraction. Each
    document carries one metadata field, ``path`` (its path relative to ``corpus/``), which
    LlamaIndex includes in the embedded text by default ("path: ref/settings.html" + text),
    as it does with ``SimpleDirectoryReader``'s ``file_path``. Two more fields,
    ``start_line``/``end_line`` (the source lines a node spans, for the source viewer), are set
    after splitting and excluded from the embedded text.

    The index takes minutes to embed for a corpus like Django's, so it is persisted
    (``index.storage_context.persist``) under ``settings.data_dir / "eval_cache"`` in a folder
    keyed by a hash of the corpus files (paths and bytes), the splitter settings, the model and
    the loaders' source: a re-run with the same corpus loads it in seconds.

    There is no answer composer: only the retrieval metrics (and latency) are reported.

BM25 alone
    ragcore's sparse mode, ``settings.with_(retrieval_mode="sparse")``: BM25 over ragcore's chunks with
    ragcore's tokeniser and Qdrant's IDF, through the normal answering path (so it has answer
    metrics too).
"""

from __future__ import annotations

import hashlib
import time
from bisect import bisect_right
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from ragcore.settings.config import RagcoreSettings
from ragcore.eval.dataset import EvalDataset, EvalQuestion
from ragcore.eval.metrics import QuestionResult
from ragcore.eval.runner import (
    ANSWER_METRICS, DocHit, DocPathMapper, EvalRun, Progress, QuestionRecord, run_config, summarize_records,
)

__all__ = [
    "BASELINES",
    "BaselineAnswer",
    "BaselineHit",
    "BM25_LABEL",
    "LLAMAINDEX_LABEL",
    "LlamaIndexBaseline",
    "baseline_cache_key",
    "baseline_record",
    "bm25_settings",
    "run_bm25_baseline",
    "run_llamaindex_baseline",
]

BASELINES = ("llamaindex", "bm25")
LLAMAINDEX_LABEL = "LlamaIndex VectorStoreIndex"
BM25_LABEL = "BM25 alone"
CACHE_DIR = "eval_cache"
_FORMAT = "1"  # bump when what is persisted changes


def bm25_settings(settings: RagcoreSettings) -> RagcoreSettings:
    return settings.with_(retrieval_mode="sparse")


def run_bm25_baseline(engine: Any, dataset: EvalDataset, settings: RagcoreSettings, **kwargs: Any) -> EvalRun:
    """BM25 alone: ragcore's sparse mode, everything else as ``settings``."""
    kwargs.setdefault("label", BM25_LABEL)
    return run_config(engine, dataset, bm25_settings(settings), **kwargs)


# --------------------------------------------------------------------------- LlamaIndex


def _source_hash() -> str:
    """The loaders' source: a change of HTML extraction changes the baseline's text."""
    from ragcore.ingest.read import html, loaders

    h = hashlib.sha256()
    for mod in (loaders, html):
        h.update(Path(mod.__file__).read_bytes())
    return h.hexdigest()[:12]


def baseline_cache_key(files: Sequence[tuple[str, Path]], splitter: dict[str, Any]) -> str:
    """Hash of the corpus files (relative path + bytes), the splitter, the model, the loaders."""
    from ragcore.encoders.minilm import MODEL_NAME

    h = hashlib.sha256()
    for rel, path in files:
        h.update(rel.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    h.update(repr(sorted(splitter.items())).encode())
    h.update(f"{MODEL_NAME}\0{_source_hash()}\0{_FORMAT}".encode())
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class BaselineHit:
    path: str
    score: float
    start_line: int
    end_line: int


class LlamaIndexBaseline:
    """A plain LlamaIndex ``VectorStoreIndex`` over a corpus folder, persisted on disk."""

    def __init__(self, corpus_dir: Path, encoder: Any, cache_root: Path | None, *, max_file_bytes: int = 20_000_000) -> None:
        self.corpus_dir = Path(corpus_dir)
        self.encoder = encoder
        self.cache_root = Path(cache_root) if cache_root is not None else None
        self.max_file_bytes = max_file_bytes
        self._index: Any = None
        self.built = False  # True when this process embedded the corpus (not loaded from cache)
        self.build_seconds = 0.0
        self.cache_dir: Path | None = None
        self.failed: list[tuple[str, str]] = []  # (path, reason) of files the loaders refused

    def _files(self) -> list[tuple[str, Path]]:
        from ragcore.ingest.read.loaders import kind_for
        from ragcore.ingest.discover import discover

        root, sources = discover([self.corpus_dir])
        return [(s.rel, s.path) for s in sources if s.path is not None and kind_for(s.path) is not None]

    @staticmethod
    def _splitter():
        from llama_index.core.node_parser import SentenceSplitter

        return SentenceSplitter()  # LlamaIndex's defaults (1024 / 200 tokens)

    @classmethod
    def splitter_sizes(cls) -> tuple[int, int]:
        """(chunk_size, chunk_overlap) in tokens of the splitter the index is built with."""
        sp = cls._splitter()
        return sp.chunk_size, sp.chunk_overlap

    def index(self, progress: Callable[[str], None] | None = None) -> Any:
        """Load the persisted index for this corpus, or build (and persist) it."""
        if self._index is not None:
            return self._index
        from llama_index.core import StorageContext, VectorStoreIndex, load_index_from_storage

        from ragcore.llamaindex.embedding import OnnxEmbedding

        say = progress or (lambda _msg: None)
        t0 = time.perf_counter()
        files = self._files()
        splitter = self._splitter()
        key = baseline_cache_key(files, {"chunk_size": splitter.chunk_size, "chunk_overlap": splitter.chunk_overlap})
        embed = OnnxEmbedding(self.encoder)
        if self.cache_root is not None:
            self.cache_dir = self.cache_root / f"llamaindex-{key}"
            if (self.cache_dir / "docstore.json").is_file():
                say(f"loading the cached LlamaIndex baseline index from {self.cache_dir}")
                ctx = StorageContext.from_defaults(persist_dir=str(self.cache_dir))
                self._index = load_index_from_storage(ctx, embed_model=embed)
                self.build_seconds = time.perf_counter() - t0
                return self._index
        say(f"building the LlamaIndex baseline index over {len(files)} files (embedding; cached afterwards)")
        nodes = self._nodes(files, splitter, say)
        self._index = VectorStoreIndex(nodes, embed_model=embed, show_progress=False)
        self.built = True
        if self.cache_dir is not None:
            tmp = self.cache_dir.with_name(self.cache_dir.name + ".tmp")
            self._index.storage_context.persist(persist_dir=str(tmp))
            if self.cache_dir.exists():  # another run finished first: keep its copy
                import shutil

                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.rename(self.cache_dir)
        self.build_seconds = time.perf_counter() - t0
        return self._index

    def _nodes(self, files: list[tuple[str, Path]], splitter: Any, say: Callable[[str], None]) -> list[Any]:
        from llama_index.core import Document

        from ragcore.ingest.read.loaders import LoadError, load_file

        out = []
        for i, (rel, path) in enumerate(files):
            if i % 50 == 0:
                say(f"reading {i}/{len(files)} files")
            try:
                doc = load_file(path, self.corpus_dir.resolve(), max_bytes=self.max_file_bytes)
            except LoadError as exc:
                self.failed.append((rel, exc.reason))
                continue
            texts = [line.text for line in doc.lines]
            nos = [line.no for line in doc.lines]
            starts, pos = [], 0
            for t in texts:
                starts.append(pos)
                pos += len(t) + 1
            document = Document(text="\n".join(texts), metadata={"path": rel})
            for node in splitter.get_nodes_from_documents([document]):
                a = node.start_char_idx or 0
                b = max((node.end_char_idx or a + 1) - 1, a)
                lo = nos[max(bisect_right(starts, a) - 1, 0)] if nos else 1
                hi = nos[max(bisect_right(starts, b) - 1, 0)] if nos else 1
                node.metadata["start_line"] = lo
                node.metadata["end_line"] = max(hi, lo)
                for k in ("start_line", "end_line"):
                    node.excluded_embed_metadata_keys.append(k)
                    node.excluded_llm_metadata_keys.append(k)
                out.append(node)
        say(f"embedding {len(out)} LlamaIndex nodes")
        return out

    @property
    def node_count(self) -> int:
        idx = self.index()
        return len(idx.index_struct.nodes_dict)

    def retrieve(self, question: str, k: int) -> list[BaselineHit]:
        retriever = self.index().as_retriever(similarity_top_k=k)
        out = []
        for nws in retriever.retrieve(question):
            md = nws.node.metadata
            out.append(BaselineHit(str(md.get("path")), float(nws.score or 0.0), int(md.get("start_line", 1)), int(md.get("end_line", 1))))
        return out


def run_llamaindex_baseline(
    baseline: LlamaIndexBaseline,
    dataset: EvalDataset,
    *,
    k: int = 50,
    collection: str = "",
    mapper: DocPathMapper | None = None,
    label: str = LLAMAINDEX_LABEL,
    progress: Progress | None = None,
    questions: Sequence[EvalQuestion] | None = None,
) -> EvalRun:
    """Retrieval metrics of the LlamaIndex baseline: the top ``k`` nodes of each question
    (``k`` = ragcore's ``candidates``, so both rank pools of the same depth). ``mapper`` maps
    the corpus-relative paths to the collection's (for source-viewer links only)."""
    qs = list(questions if questions is not None else dataset.questions)
    mapper = mapper or DocPathMapper()
    t0 = time.perf_counter()
    baseline.index(progress=(lambda msg: progress(0, len(qs), f"{label}: {msg}")) if progress else None)
    records: list[QuestionRecord] = []
    for i, q in enumerate(qs):
        if progress:
            progress(i, len(qs), f"{label}: {q.id}")
        records.append(baseline_record(q, _ask(baseline, q.question, k), mapper))
    if progress:
        progress(len(qs), len(qs), f"{label}: done")
    splitter = LlamaIndexBaseline.splitter_sizes()
    return EvalRun(
        label=label, kind="llamaindex", collection=collection,
        config={"index": "VectorStoreIndex", "splitter": f"SentenceSplitter({splitter[0]}/{splitter[1]})",
                "similarity_top_k": k, "embedding": "OnnxEmbedding (same MiniLM)"},
        records=tuple(records), summary=replace(summarize_records(records), **{m: None for m in ANSWER_METRICS}),
        retrieval_only=True, seconds=time.perf_counter() - t0, notes=_baseline_notes(baseline, splitter),
    )


@dataclass(frozen=True)
class BaselineAnswer:
    """What the baseline returned for one question: its ranked hits, or the error."""

    hits: tuple[BaselineHit, ...]
    error: str | None
    ms: float  # retrieval time


def _ask(baseline: LlamaIndexBaseline, question: str, k: int) -> BaselineAnswer:
    t = time.perf_counter()
    try:
        got, error = tuple(baseline.retrieve(question, k)), None
    except Exception as exc:  # noqa: BLE001 - reported per question
        got, error = (), f"{type(exc).__name__}: {exc}"
    return BaselineAnswer(got, error, (time.perf_counter() - t) * 1e3)


def baseline_record(q: EvalQuestion, answer: BaselineAnswer, mapper: DocPathMapper) -> QuestionRecord:
    """A :class:`QuestionRecord` with retrieval only: the ranking, no answer, no support score."""
    result = QuestionResult(
        id=q.id, question=q.question, answerable=q.answerable, status="error" if answer.error else "ok",
        retrieved_docs=tuple(h.path for h in answer.hits), relevant_docs=q.relevant_docs, reference=q.answer,
        latency_ms={"retrieve": answer.ms, "total": answer.ms},
    )
    hits = _distinct_hits(answer.hits, set(q.relevant_docs), mapper)
    return QuestionRecord(result=result, hits=hits, relevant=q.relevant, error_message=answer.error)


def _distinct_hits(got: Sequence[BaselineHit], relevant: set[str], mapper: DocPathMapper,
                   max_hits: int = 20) -> tuple[DocHit, ...]:
    """Each document at its first (best) node, as ragcore's runner records its hits."""
    hits: list[DocHit] = []
    seen: set[str] = set()
    for r, h in enumerate(got, start=1):
        if h.path in seen:
            continue
        seen.add(h.path)
        if len(hits) < max_hits:
            hits.append(DocHit(path=h.path, stored_path=mapper.stored(h.path), rank=len(seen), chunk_rank=r,
                               start_line=h.start_line, end_line=h.end_line, relevant=h.path in relevant))
    return tuple(hits)


def _baseline_notes(baseline: LlamaIndexBaseline, splitter: tuple[int, int]) -> tuple[str, ...]:
    notes = [
        f"{baseline.node_count} nodes; SentenceSplitter defaults ({splitter[0]}/{splitter[1]} tokens); "
        f"text from ragcore's loaders; retrieval metrics only (no answer composer)",
        ("index built and embedded in this run" if baseline.built else "index loaded from cache")
        + f" ({baseline.build_seconds:.1f} s){f', {baseline.cache_dir}' if baseline.cache_dir else ''}",
    ]
    if baseline.failed:
        notes.append(f"{len(baseline.failed)} files the loaders refused were left out")
    return tuple(notes)
