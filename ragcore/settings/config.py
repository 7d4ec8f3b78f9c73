"""Settings: one frozen, validated object, read from the environment (prefix RAGCORE_) or built in code.

Nothing here runs at import time; call :func:`RagcoreSettings.from_env` where a process starts
(the CLI, the app) and pass the object down explicitly.

Every value is checked in one place, whatever its origin: a ``RAGCORE_*`` / ``OPENAI_*``
variable (:meth:`RagcoreSettings.from_env`), ``RagcoreSettings(...)`` or ``LlmSettings(...)`` in
code, ``.with_(...)`` / ``dataclasses.replace``, or a secrets.toml
(:mod:`ragcore.settings.secrets_file`, read by the one resolver, :mod:`ragcore.settings.resolve`). Each field's rule sits next to the field
(``metadata["rule"]``); a bad value raises :class:`ConfigError`, whose message names the
variable (or field), the value and what is allowed, e.g.
``RAGCORE_TOP_K=-3 is not allowed: top_k must be an integer from 1 to 1000``. Secret values are never shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, Mapping

from ragcore.settings.redact import redact_url
from ragcore.settings.models import spec_problem

RetrievalMode = Literal["dense", "sparse", "hybrid"]
Fusion = Literal["rrf", "weighted"]
EmbeddedEngine = Literal["edge", "local"]

from ragcore.settings.rules import (  # noqa: F401  (re-exported: the settings' public names)
    ENV_PREFIX, LLM_ENV_PREFIX, OTHER_VARIABLES, RENAMED_VARIABLES, ConfigError,
    _check_fields, _choice, _no_unknown, _rules, _safe_repr, _setting, check_names, check_value, chunk_problem, default_data_dir,
    env_values,
)
from ragcore.settings.llm import LlmApi, LlmSettings, UnsupportedPolicy  # noqa: F401  (re-exported)
from ragcore.settings.resolve import check_variable_names, known_variables as _known_variables, resolve


def __getattr__(name: str) -> Any:
    # SERVICE_VARIABLES, `ragcore serve`'s variables (ServiceSettings' fields), computed when asked: the
    # service's settings stay off the CLI's cold path
    if name == "SERVICE_VARIABLES":
        from ragcore.settings.service import service_variables

        return service_variables()
    raise AttributeError(name)


# --------------------------------------------------------------------------- all settings


@dataclass(frozen=True, repr=False)
class RagcoreSettings:
    # storage
    data_dir: Path = _setting(
        default_data_dir, "path", flag="--data-dir", shown_default="`~/.local/share/ragcore`, or `$XDG_DATA_HOME/ragcore`",
        help="Folder for the embedded Qdrant store (`qdrant-edge/`, or `qdrant/` in local mode), the query snapshots "
             "(`snapshots/`) and saved notebooks (`notebooks/`). A path that exists and is not a folder (a file) stops every "
             "`ragcore` command with exit code 2, naming the variable or `--data-dir`.")
    qdrant_url: str | None = _setting(
        None, "url", optional=True, shown_default="not set (embedded store)",
        help="URL of a Qdrant server, such as `http://localhost:6333`. When set, the server is used instead of the "
             "embedded store.")
    qdrant_api_key: str | None = _setting(
        None, "str", optional=True, secret=True,
        help="API key for the Qdrant server. Never shown or logged.")
    collection: str = _setting(
        "guide", "str", label="Collection", flag="--collection", app=True, request="collection", sweep=True,
        help="Collection used when `--collection` is not given.")
    # queries read <data dir>/snapshots, not embedded Qdrant (snapshot.py)
    snapshots: bool = _setting(
        True, "bool",
        help="Questions read the collection's query snapshot (`snapshots/` in the data folder) instead of opening the "
             "embedded store, so the app and `ragcore ingest` can work on one data folder at once. Off: every process "
             "opens the embedded store, one at a time. Not used with a Qdrant server.")
    # the embedded store of record: Qdrant's engine in process (edge_client.py) or qdrant-client's local mode
    embedded_engine: EmbeddedEngine = _choice(
        "edge", EmbeddedEngine,
        help="The embedded store of record. `edge`: Qdrant's engine run in process (`qdrant-edge-py`), segments on disk, "
             "so writing a million chunks takes a few GB; on first use it copies a `qdrant/` folder written by an older "
             "version. `local`: qdrant-client's local mode, which holds every point in memory (about 42 KB per chunk) and "
             "loads them all on open. Not used with a Qdrant server.")

    # ingestion
    # words per chunk (MiniLM reads at most 256 word pieces)
    chunk_size: int = _setting(
        180, "int", ge=1, label="Chunk size (words)", flag="--chunk-size", commands=("ingest",), app=True, sweep=True, widget=(20, 2000, 10),
        help="Words per chunk.")
    # words carried over between neighbouring chunks of one section
    chunk_overlap: int = _setting(
        30, "int", ge=0, label="Overlap (words)", flag="--chunk-overlap", commands=("ingest",), app=True, sweep=True, widget=(0, 1000, 5),
        help="Words carried over between neighbouring chunks of one section; less than `chunk_size`.")
    max_file_bytes: int = _setting(
        20_000_000, "int", ge=1, shown_default="`20000000` (20 MB)",
        help="Larger files are skipped as over the size limit.")
    # full-length texts' worth of tokens per model run (512 tokens): on 2 cores, a composer's 41 sentences
    # embed in 0.33 s against 0.55 s with 8, 400 headings in 0.75 s against 0.93 s, chunks alike (12.2 s
    # against 12.7 s for 300): bigger runs thrash the cache
    embed_batch_size: int = _setting(
        2, "int", ge=1,
        help="Full-length texts' worth of tokens (× 256) per model run; shorter texts go more to a run. On 2 cores 2 was "
             "fastest: short sentences and headings embed 20–40% faster than with 8, chunks alike.")
    # hard cap on one chunk's text, whatever the file's shape
    max_chunk_chars: int = _setting(
        4000, "int", ge=1,
        help="Hard cap on the characters of one chunk, whatever the file's shape.")
    # a file that needs more is reported as too large
    max_file_chunks: int = _setting(
        5000, "int", ge=1,
        help="A file that needs more chunks is reported as too large and not ingested.")

    # models (settings/models.py; docs/19-choosing-models.md): the embedding model of new collections
    # (a collection keeps the one it was built with), its endpoint, and the optional reranker
    # minilm | openai:<model> | onnx:<folder> | fastembed:<name>; not set: minilm for a new collection, and an
    # existing one is updated with its own model (set: another model than the collection's is refused)
    embed_model: str | None = _setting(
        None, "str", optional=True, label="embedding model of a new collection: minilm (default), openai:<model>, onnx:<folder> or fastembed:<name>", flag="--embed-model", commands=("ingest",), shown_default="not set (`minilm`)",
        help="The embedding model of new collections: `minilm`, `openai:<model>`, `onnx:<folder>` or `fastembed:<name>` "
             "(also `ragcore ingest --embed-model`); not set, new collections get "
             "the bundled offline `minilm` and existing ones are updated with their own model. Set, an ingest into a "
             "collection built with another model is refused.")
    # else OPENAI_BASE_URL
    embed_base_url: str | None = _setting(
        None, "url", optional=True,
        help="The OpenAI-compatible endpoint for `openai:` models, up to `/v1` (`/embeddings` is added).")
    # else OPENAI_API_KEY
    embed_api_key: str | None = _setting(
        None, "str", optional=True, secret=True,
        help="Sent as a bearer token; never shown or saved.")
    # else the model folder's own
    embed_query_prefix: str | None = _setting(
        None, "str", optional=True, shown_default="the model folder's",
        help="Put before each question (e5: `query:`, bge: its instruction); a space is added after it.")
    embed_document_prefix: str | None = _setting(
        None, "str", optional=True, shown_default="the model folder's",
        help="Put before each chunk (e5: `passage:`).")
    embed_timeout_s: float = _setting(
        60.0, "float", gt=0.0,
        help="The most seconds one embeddings request may take (each request's own timeout follows its size, at least "
             "10 s); 429, 5xx and timeouts are retried 4 times, smaller.")
    # requests in flight
    embed_concurrency: int = _setting(
        4, "int", ge=1, le=64,
        help="The most embeddings requests in flight (they start at 2 and adapt to the server).")
    # texts per request
    embed_request_size: int = _setting(
        64, "int", ge=1, le=2048,
        help="The most texts per embeddings request (requests start at about 512 tokens and adapt to the server).")
    # endpoint:<model> | onnx:<folder> | llm (off)
    rerank: str | None = _setting(
        None, "str", optional=True, shown_default="not set (off)",
        help="Rescore the best of the fused pool before the cuts: `endpoint:<model>`, `onnx:<folder>` or `llm`.")
    # else the embedding endpoint's
    rerank_base_url: str | None = _setting(
        None, "url", optional=True, shown_default="`embed_base_url`",
        help="The rerank endpoint (`/rerank` or `/v1/rerank` is added).")
    rerank_api_key: str | None = _setting(
        None, "str", optional=True, secret=True, shown_default="`embed_api_key`",
        help="Sent as a bearer token.")
    # best of the fused pool that are rescored
    rerank_candidates: int = _setting(
        30, "int", ge=1, le=500,
        help="How many of the pool's best are rescored.")
    # then: the fused order, with a note
    rerank_timeout_s: float = _setting(
        10.0, "float", gt=0.0,
        help="After this the fused order is kept and the answer carries a note.")
    # cut reranked chunks scoring below (0: off)
    rerank_threshold: float = _setting(
        0.0, "float", ge=0.0, le=1.0, shown_default="`0` (off)",
        help='Reranked chunks scoring below it are cut (reason "threshold").')

    # retrieval
    retrieval_mode: RetrievalMode = _choice(
        "hybrid", RetrievalMode, label="Retrieval mode", flag="--mode", commands=("ask", "eval"), app=True, request="mode", sweep=True, share="mode", ab=True,
        help="Retrieval mode.")
    # capped so a request cannot send any size of integer (the pool holds at most 2 × candidates anyway)
    top_k: int = _setting(
        6, "int", ge=1, le=1000, label="Top-K", flag="--top-k", commands=("ask", "eval"), app=True, request="top_k", sweep=True, share="k", ab=True, widget=(1, 50, 1),
        help="Chunks kept as evidence after all other cuts.")
    # on cosine similarity (question vs chunk), every mode; -1 keeps everything (cosines go down to -1)
    threshold: float = _setting(
        0.0, "float", ge=0.0, le=1.0, also=(-1.0,), label="Threshold (cosine)", flag="--threshold", commands=("ask", "eval"), app=True, request="threshold", sweep=True, share="thr", ab=True, widget=(0.0, 1.0, 0.01),
        help="Minimum cosine similarity between question and chunk, in every mode. `-1` keeps every chunk, whatever its "
             "cosine.")
    fusion: Fusion = _choice(
        "rrf", Fusion, label="Fusion", flag="--fusion", commands=("ask", "eval"), app=True, sweep=True, share="fusion", ab=True,
        help="Hybrid fusion.")
    # tuned on django-docs-qa: k=60 let chunks deep in both lists beat either top hit
    rrf_k: int = _setting(
        10, "int", ge=1, label="RRF k", flag="--rrf-k", commands=("ask", "eval"), app=True, sweep=True, share="rrf_k", ab=True, widget=(1, 1000, 10),
        help="The k in the RRF score 1/(k + rank).")
    # for fusion="weighted"
    dense_weight: float = _setting(
        0.6, "float", ge=0.0, le=1.0, label="Dense weight (weighted fusion)", app=True, sweep=True, share="dw", ab=True, widget=(0.0, 1.0, 0.05),
        help="Weight of the dense score in weighted fusion; the sparse score gets 1 minus this.")
    # per branch, before cuts
    candidates: int = _setting(
        50, "int", ge=1, label="Candidates per branch", flag="--candidates", commands=("eval",), app=True, sweep=True, share="cand", widget=(5, 1000, 5),
        help="Candidates per branch before any cut.")
    # best chunk per (path, section) wins
    dedupe: bool = _setting(
        True, "bool", label="Dedupe (best chunk per section)", app=True, sweep=True, share="dedupe", ab=True,
        help="Keep only the best chunk of each section of each file.")
    # globs on the relative path
    path_filter: str | None = _setting(
        None, "str", optional=True, label="Path filter", flag="--path-filter", commands=("ask",), request="path_filter",
        help="Comma-separated globs on the relative path; chunks of other files are not searched (never candidates).")
    # What documents say about themselves (retrieval/fields.py): weight of question terms found in a
    # chunk's title, section headings, anchor and file name, added to its BM25 score (0: off; off by
    # default: it helped on django-docs-qa but lowered nDCG@10 on git-docs-qa)
    field_weight: float = _setting(
        0.0, "float", ge=0.0, le=10.0, label="Field weight (titles, sections, anchors, file names)", sweep=True, share="fw", lab=True, widget=(0.0, 10.0, 0.1),
        help="Weight of question terms found in a chunk's title, section headings, anchor and file name, added to its BM25 "
             "score. Off: it helped on one test corpus and hurt on the other.")
    # Rank documents, then passages (retrieval/documents.py): a document's score is its best chunk's
    # plus doc_decay × its second's plus doc_decay² × its third's (0: rank chunks alone). 1.0 raised
    # nDCG@10 and citation precision on both django-docs-qa and git-docs-qa (bench/results/eval-signals.md)
    doc_decay: float = _setting(
        1.0, "float", ge=0.0, le=1.0, label="Document decay", sweep=True, share="decay", lab=True, widget=(0.0, 1.0, 0.1),
        help="Rank documents, then passages: a document scores its best chunk + decay × its second + decay² × its third; a "
             "document with fewer than three chunks among the candidates whose chunk is first in both the dense and the "
             "BM25 ranking (a scanned page, a short note) scores as much as the best document and leads. `0` ranks chunks "
             "alone.")
    # at most this many chunks of one document before every other document's best chunks (0: off)
    per_doc: int = _setting(
        0, "int", ge=0, label="Chunks per document first (0 = off)", sweep=True, share="per_doc", lab=True, widget=(0, 20, 1),
        help="At most this many chunks of one document before every other document's best chunks. `0`: no cap.")
    # the evidence keeps at most this many chunks of one document unless one document clearly holds
    # the answer (retrieval/cutrules.py; cut reason "per_doc"; 0: off). Off by default: 2 raised the
    # evidence's document recall on all four sets but lowered citation precision on git-docs-qa
    # (0.386 -> 0.371) and sqlalchemy-docs-qa (0.500 -> 0.485; bench/results/issue28-trust.md)
    evidence_per_doc: int = _setting(
        0, "int", ge=0, sweep=True,
        help="The evidence keeps at most this many chunks of one document when no document clearly holds the answer; the "
             "others are cut with the reason `per_doc` and the next documents' chunks take their places. A document "
             "clearly holds the answer when it holds the passage ranking's best three chunks, or when it ranks first with "
             "a document score at least 1.2 times the second's: then its chunks are not capped. `0`: no cap. `2` raised "
             "the share of relevant documents in the evidence on the Django, Git, Scrapy and SQLAlchemy question sets and "
             "citation precision on Django and Scrapy, but lowered citation precision on Git (0.386 → 0.371) and "
             "SQLAlchemy (0.500 → 0.485; `bench/results/issue28-trust.md`), so it is off by default.")
    # the evidence adds the best passage of up to this many documents the top-K lacks, even when the
    # document ranking put their page behind top-K chunks of another (retrieval/passage_seats.py; 0: off)
    evidence_seats: int = _setting(
        1, "int", ge=0, sweep=True,
        help="The evidence adds, after the top-K, the best passage of up to this many documents the top-K does not hold, "
             "taken from the passage ranking's first top-K chunks (one per document). Documents are ranked first, so a "
             "long page's sections can otherwise fill the evidence while the page holding one of the best passages ranks "
             "second. The top-K and the ranking do not change; a seated chunk is marked `seated` in the answer's evidence "
             "and candidates and `kept [n] seat` in the Retrieval lab. The extractive answer quotes a seated chunk only "
             "when its best sentence scores at least 0.2 above the best sentence of the top-K, so the seat widens what the "
             "evidence shows (and what a language model reads) without moving the answer to another page on a small lead. "
             "With `1`, the share of relevant documents in the evidence rose on the Django, Git, Scrapy, SQLAlchemy, guide "
             "and PDF question sets (SQLAlchemy 0.375 → 0.451), no answer's citation precision fell, and one more Scrapy "
             "question was answered (`bench/results/issue28-recall15.md`). `0`: the top-K only.")
    # Pseudo-relevance feedback (retrieval/expansion.py): terms taken from the best prf_docs chunks of
    # a first pass and added to the BM25 query with weight prf_weight (prf_terms 0: off; off by
    # default: it helped on git-docs-qa, not on django-docs-qa)
    prf_terms: int = _setting(
        0, "int", ge=0, le=50, label="Expansion terms (0 = off)", sweep=True, share="prf", lab=True, widget=(0, 50, 1),
        help="Pseudo-relevance feedback: terms taken from the best chunks of a first pass and added to the BM25 query. "
             "`0`: off.")
    prf_docs: int = _setting(
        3, "int", ge=1, le=20, label="Feedback chunks", sweep=True, share="prf_docs", lab=True, widget=(1, 20, 1),
        help="Chunks the feedback terms are taken from.")
    prf_weight: float = _setting(
        0.3, "float", ge=0.0, le=1.0, label="Expansion weight", sweep=True, share="prf_w", lab=True, widget=(0.0, 1.0, 0.05),
        help="Weight of the feedback terms in the BM25 query.")
    # Document signals, fused with the chunk evidence when documents are ranked (retrieval/docsignals.py;
    # 0: off). The weight of cosine(question, document title) and of cosine(question, document centroid),
    # added to the document's evidence score over the pool's best (title 0.3 on by default: it raised nDCG@10,
    # recall@1 and citation precision on both test sets, answer/abstain rates level; bench/results/eval-signals-r.md):
    doc_title_weight: float = _setting(
        0.3, "float", ge=0.0, le=10.0, label="Title cosine", sweep=True, share="title", lab=True, widget=(0.0, 10.0, 0.1),
        help="Weight of cosine(question, document title) in the document score. At 0.3 it raised nDCG@10, recall@1 and "
             "citation precision a little on both test corpora with every other measure level "
             "(`bench/results/eval-signals-r.md`); at 0.5 and above it lowered one. `0`: off.")
    doc_centroid_weight: float = _setting(
        0.0, "float", ge=0.0, le=10.0, sweep=True,
        help="Weight of cosine(question, the document's mean chunk vector). Off: it did not help.")
    # Documents the question or its best named_evidence passages name (a command page such as git-clone,
    # an identifier heading such as DJANGO_SETTINGS_MODULE) join the document ranking by RRF with this
    # weight (on by default: it raised nDCG@10 on both sets; the title and centroid cosines did not)
    named_weight: float = _setting(
        0.6, "float", ge=0.0, le=10.0, label="Named pages", sweep=True, share="named", lab=True, widget=(0.0, 10.0, 0.1),
        help="Weight of documents the question or its best passages name (a command page such as `git-clone`, an "
             "identifier heading such as `AUTH_USER_MODEL`) in the document ranking. `0`: off.")
    named_evidence: int = _setting(
        10, "int", ge=1, le=50, sweep=True,
        help="How many of the best passages are read for names.")

    # answering
    # support below this: abstain (answerability.py; tuned on django-docs-qa)
    abstain_bar: float = _setting(
        0.50, "float", ge=0.0, le=1.0, label="Abstain bar", flag="--abstain-bar", commands=("eval",), app=True, sweep=True, widget=(0.0, 1.0, 0.01),
        help="Support score below this: abstain, for collections without a calibrated bar.")
    # Use the collection's own calibrated bar when it has one (ragcore eval --calibrate):
    # cosine levels differ between corpora, so one bar does not fit every collection.
    calibrated_bar: bool = _setting(
        True, "bool", label="Use the collection's calibrated abstain bar", app=True,
        help="Use the collection's calibrated abstain bar when it has one.")
    min_selection_chars: int = _setting(
        40, "int", ge=0,
        help="Shortest selection accepted in selected-text mode.")
    max_answer_sentences: int = _setting(
        4, "int", ge=1, label="Max answer sentences", app=True, sweep=True, widget=(1, 20, 1),
        help="Most sentences in an extractive answer.")
    # The extractive composer quotes at most answer_docs documents, those of its best units (0: any)
    answer_docs: int = _setting(
        1, "int", ge=0, sweep=True,
        help="The extractive composer quotes at most N documents, those of its best-scoring sentences (`0`: any of the "
             "evidence's). A selection's sentences are always allowed. With `1`, every citation of an answer points into "
             "the page its best sentence comes from: on the Django and Git test sets citation precision rose from 0.481 to "
             "0.596 and from 0.307 to 0.370, token F1 stayed level (0.188 → 0.189, 0.215 → 0.212), and no answer or "
             "abstention changed (`bench/results/eval-*-s7.md`). The evidence is the same either way; the language-model "
             "generator reads all of it.")
    # one page beyond answer_docs for units close to the best (composer._second_page_takes); off: on the six
    # labelled sets 0.9 gained one SQLAlchemy answer and cost Git's citation precision (bench/results/reader.md)
    answer_second_page: float = _setting(
        0.0, "float", ge=0.0, le=1.0, sweep=True,
        help="Let the extractive answer quote one page beyond `answer_docs` too, but only its sentences scoring at least "
             "this share of the best sentence's score (`0`: off). At `0.9` on the six labelled sets one SQLAlchemy answer "
             "more quoted the answering sentence, and Git's citations into a page the reference links fell from 40% to "
             "35% (`bench/results/reader.md`).")
    # abstain in corpus mode when the question names a rare word no chunk contains (answerability.py)
    abstain_unseen_words: bool = _setting(
        True, "bool",
        help="In full-corpus mode, abstain when the question names a rare word (not a whole word of the model's "
             "vocabulary) that no chunk contains, and name it; see [Abstaining](07-abstaining-and-answer-validation.md).")
    # a named subject (name, quoted term, identifier, version) no chunk mentions: abstain near the bar,
    # answer with a hedge naming it above (abstain/coverage.py)
    abstain_uncovered: bool = _setting(
        True, "bool", sweep=True,
        help="In full-corpus mode, name the question's subjects (a capitalised or quoted term, an identifier, a version) "
             "that no chunk mentions: in the reason when ragcore abstains, as a hedge (`hedged: the corpus never mentions "
             "…`) when it answers; a name of several capitalised words no chunk holds together (“Microsoft Word”) "
             "abstains; see [Abstaining](07-abstaining-and-answer-validation.md).")
    # abstain on one within bar + this
    uncovered_margin: float = _setting(
        0.0, "float", ge=0.0, le=1.0, sweep=True,
        help="With such a subject, abstain when the support score is below the bar plus this margin (0: the score alone "
             "decides; 0.05 changed no decision on the Scrapy, Git and Django sets).")
    conversation_turns: int = _setting(
        0, "int", ge=0,
        help="Earlier turns a configured language model reads to condense a follow-up into a standalone question. Whatever "
             'the value, a short follow-up that leans on the previous question ("And how do I change it?") takes that '
             "question's subject without a model (its names and identifiers, else its content words); the answer's "
             "`metadata.standalone_question` says how the question was read.")
    boundary_rules: tuple[str, ...] = _setting(
        (), "strs",
        help="Extra answer rules.")

    llm: LlmSettings = field(default_factory=LlmSettings)

    def __post_init__(self) -> None:
        _check_fields(self)
        if not isinstance(self.llm, LlmSettings):
            raise ConfigError(f"llm={type(self.llm).__name__} is not allowed: llm must be an LlmSettings")
        problem = chunk_problem(self.chunk_size, self.chunk_overlap, {}) or \
            spec_problem("embed_model", self.embed_model) or spec_problem("rerank", self.rerank)
        if problem:
            raise ConfigError(problem)

    def __repr__(self) -> str:
        return _safe_repr(self)

    def with_(self, **changes: Any) -> "RagcoreSettings":
        """A copy with ``changes`` applied, validated like any other settings."""
        _no_unknown(type(self), changes)
        return replace(self, **changes)

    @property
    def qdrant_path(self) -> Path:
        """qdrant-client's local-mode folder (``embedded_engine="local"``, and what older versions wrote)."""
        return Path(self.data_dir) / "qdrant"

    @property
    def edge_path(self) -> Path:
        """Qdrant Edge's folder, one shard per collection (``embedded_engine="edge"``)."""
        return Path(self.data_dir) / "qdrant-edge"

    @property
    def store_path(self) -> Path:
        """The embedded store of record's folder, for the engine in use."""
        return self.edge_path if self.embedded_engine == "edge" else self.qdrant_path

    @property
    def notebooks_dir(self) -> Path:
        return Path(self.data_dir) / "notebooks"

    def public_dict(self) -> dict[str, Any]:
        """Settings as saved with an Answer: JSON-friendly, no secrets (keys → "set"/None,
        credentials removed from URLs). Every float is finite, so ``allow_nan=False`` holds."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("qdrant_api_key", "embed_api_key", "rerank_api_key"):
                v = "set" if v else None
            elif f.name in ("qdrant_url", "embed_base_url", "rerank_base_url"):
                v = redact_url(v)
            elif f.name == "llm":
                v = v.public_dict()
            elif isinstance(v, Path):
                v = str(v)
            elif isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
        return out

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, *, secrets: bool | None = None,
                 **overrides: Any) -> "RagcoreSettings":
        """Settings from the one resolver (:mod:`ragcore.settings.resolve`): defaults, the app's settings
        file, ``.streamlit/secrets.toml``, the environment (RAGCORE_*, OPENAI_API_KEY / OPENAI_BASE_URL),
        then ``overrides`` (``llm`` may be an LlmSettings, which replaces the endpoint, or a mapping of its
        fields applied on top). Empty variables are ignored; unknown or renamed RAGCORE_* variables and bad
        values raise ConfigError. ``secrets``: also read the files (secrets.toml and the settings file); by
        default when ``env`` is the process's environment (a mapping passed in is read alone).
        """
        from_files = env is None if secrets is None else secrets
        return resolve(cls, env, overrides=overrides, read_files=from_files).settings


def known_variables() -> frozenset[str]:
    """Every RAGCORE_* variable ragcore reads."""
    return _known_variables(RagcoreSettings)


def check_env_names(env: Mapping[str, str], prefix: str = ENV_PREFIX) -> None:
    """ConfigError naming every renamed or unknown variable starting with ``prefix``: a typo
    such as RAGCORE_TOPK would otherwise be ignored without a word."""
    check_variable_names(RagcoreSettings, env, prefix)
