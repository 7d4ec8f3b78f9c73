"""Settings: one frozen, validated object, read from the environment (prefix RAGCORE_) or built in code.

Nothing here runs at import time; call :func:`RagcoreSettings.from_env` where a process starts
(the CLI, the app) and pass the object down explicitly.

Every value is checked in one place, whatever its origin: a ``RAGCORE_*`` / ``OPENAI_*``
variable (:meth:`RagcoreSettings.from_env`), ``RagcoreSettings(...)`` or ``LlmSettings(...)`` in
code, ``.with_(...)`` / ``dataclasses.replace``, or a secrets.toml
(:mod:`ragcore.settings.llm_config`). Each field's rule sits next to the field
(``metadata["rule"]``); a bad value raises :class:`ConfigError`, whose message names the
variable (or field), the value and what is allowed, e.g.
``RAGCORE_TOP_K=-3 is not allowed: top_k must be an integer from 1 to 1000``. Secret values are never shown.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, Mapping

from ragcore.settings.redact import redact_url
from ragcore.settings.models import spec_problem

RetrievalMode = Literal["dense", "sparse", "hybrid"]
Fusion = Literal["rrf", "weighted"]
UnsupportedPolicy = Literal["annotate", "extractive"]
LlmApi = Literal["chat", "responses"]
EmbeddedEngine = Literal["edge", "local"]

from ragcore.settings.rules import (  # noqa: F401  (re-exported: the settings' public names)
    ENV_PREFIX, LLM_ENV_PREFIX, OTHER_VARIABLES, RENAMED_VARIABLES, ConfigError,
    _check_fields, _choice, _rules, _setting, check_value, default_data_dir,
)

# `ragcore serve`'s variables, read by ragcore/settings/service.py (ServiceSettings; a test keeps
# this list equal to its fields): named here so that the unknown-variable check lets them through
SERVICE_VARIABLES = frozenset({
    "RAGCORE_API_KEYS", "RAGCORE_SERVE_HOST", "RAGCORE_SERVE_PORT", "RAGCORE_SERVE_WORKERS",
    "RAGCORE_SERVE_MAX_BODY_BYTES", "RAGCORE_SERVE_MAX_UPLOAD_BYTES", "RAGCORE_SERVE_DEADLINE_S",
    "RAGCORE_SERVE_MAX_CONCURRENT", "RAGCORE_SERVE_MAX_QUEUED", "RAGCORE_SERVE_RETRY_AFTER_S",
    "RAGCORE_SERVE_CORS_ORIGINS", "RAGCORE_SERVE_MAX_JOBS", "RAGCORE_SERVE_ALLOWED_HOSTS",
})


@dataclass(frozen=True, repr=False)
class LlmSettings:
    """An OpenAI-compatible endpoint. Empty ``model`` means: no LLM, use the extractive composer."""

    base_url: str | None = _setting(None, "url", optional=True)
    api_key: str | None = _setting(None, "str", optional=True, secret=True)  # never printed
    model: str | None = _setting(None, "str", optional=True)
    api: LlmApi = _choice("chat", LlmApi)
    temperature: float = _setting(0.1, "float", ge=0.0, le=2.0)
    max_output_tokens: int = _setting(512, "int", ge=1)
    context_window: int = _setting(8192, "int", ge=1)
    timeout_s: float = _setting(30.0, "float", gt=0.0)
    max_retries: int = _setting(2, "int", ge=0)
    # whole-answer deadline: a server that trickles tokens cannot hold an answer open forever
    deadline_s: float = _setting(120.0, "float", gt=0.0)
    unsupported_policy: UnsupportedPolicy = _choice("annotate", UnsupportedPolicy)

    def __post_init__(self) -> None:
        _check_fields(self)

    def __repr__(self) -> str:
        return _safe_repr(self)

    @property
    def configured(self) -> bool:
        return bool(self.model)

    def public_dict(self) -> dict[str, Any]:
        """A dict safe to show or save: the key is reduced to whether one is set, and the
        base URL loses any ``user:password@``."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["api_key"] = "set" if self.api_key else None
        d["base_url"] = redact_url(self.base_url)
        return d


# --------------------------------------------------------------------------- all settings


@dataclass(frozen=True, repr=False)
class RagcoreSettings:
    # storage
    data_dir: Path = _setting(default_data_dir, "path")
    qdrant_url: str | None = _setting(None, "url", optional=True)
    qdrant_api_key: str | None = _setting(None, "str", optional=True, secret=True)
    collection: str = _setting("guide", "str")
    snapshots: bool = _setting(True, "bool")  # queries read <data dir>/snapshots, not embedded Qdrant (snapshot.py)
    # the embedded store of record: Qdrant's engine in process (edge_client.py) or qdrant-client's local mode
    embedded_engine: EmbeddedEngine = _choice("edge", EmbeddedEngine)

    # ingestion
    chunk_size: int = _setting(180, "int", ge=1)  # words per chunk (MiniLM reads at most 256 word pieces)
    chunk_overlap: int = _setting(30, "int", ge=0)  # words carried over between neighbouring chunks of one section
    max_file_bytes: int = _setting(20_000_000, "int", ge=1)
    # full-length texts' worth of tokens per model run (512 tokens): on 2 cores, a composer's 41 sentences
    # embed in 0.33 s against 0.55 s with 8, 400 headings in 0.75 s against 0.93 s, chunks alike (12.2 s
    # against 12.7 s for 300): bigger runs thrash the cache
    embed_batch_size: int = _setting(2, "int", ge=1)
    max_chunk_chars: int = _setting(4000, "int", ge=1)  # hard cap on one chunk's text, whatever the file's shape
    max_file_chunks: int = _setting(5000, "int", ge=1)  # a file that needs more is reported as too large

    # models (settings/models.py; docs/19-choosing-models.md): the embedding model of new collections
    # (a collection keeps the one it was built with), its endpoint, and the optional reranker
    # minilm | openai:<model> | onnx:<folder> | fastembed:<name>; not set: minilm for a new collection, and an
    # existing one is updated with its own model (set: another model than the collection's is refused)
    embed_model: str | None = _setting(None, "str", optional=True)
    embed_base_url: str | None = _setting(None, "url", optional=True)  # else OPENAI_BASE_URL
    embed_api_key: str | None = _setting(None, "str", optional=True, secret=True)  # else OPENAI_API_KEY
    embed_query_prefix: str | None = _setting(None, "str", optional=True)  # else the model folder's own
    embed_document_prefix: str | None = _setting(None, "str", optional=True)
    embed_timeout_s: float = _setting(60.0, "float", gt=0.0)
    embed_concurrency: int = _setting(4, "int", ge=1, le=64)  # requests in flight
    embed_request_size: int = _setting(64, "int", ge=1, le=2048)  # texts per request
    rerank: str | None = _setting(None, "str", optional=True)  # endpoint:<model> | onnx:<folder> | llm (off)
    rerank_base_url: str | None = _setting(None, "url", optional=True)  # else the embedding endpoint's
    rerank_api_key: str | None = _setting(None, "str", optional=True, secret=True)
    rerank_candidates: int = _setting(30, "int", ge=1, le=500)  # best of the fused pool that are rescored
    rerank_timeout_s: float = _setting(10.0, "float", gt=0.0)  # then: the fused order, with a note
    rerank_threshold: float = _setting(0.0, "float", ge=0.0, le=1.0)  # cut reranked chunks scoring below (0: off)

    # retrieval
    retrieval_mode: RetrievalMode = _choice("hybrid", RetrievalMode)
    # capped so a request cannot send any size of integer (the pool holds at most 2 × candidates anyway)
    top_k: int = _setting(6, "int", ge=1, le=1000)
    # on cosine similarity (question vs chunk), every mode; -1 keeps everything (cosines go down to -1)
    threshold: float = _setting(0.0, "float", ge=0.0, le=1.0, also=(-1.0,))
    fusion: Fusion = _choice("rrf", Fusion)
    rrf_k: int = _setting(10, "int", ge=1)  # tuned on django-docs-qa: k=60 let chunks deep in both lists beat either top hit
    dense_weight: float = _setting(0.6, "float", ge=0.0, le=1.0)  # for fusion="weighted"
    candidates: int = _setting(50, "int", ge=1)  # per branch, before cuts
    dedupe: bool = _setting(True, "bool")  # best chunk per (path, section) wins
    path_filter: str | None = _setting(None, "str", optional=True)  # globs on the relative path
    # What documents say about themselves (retrieval/fields.py): weight of question terms found in a
    # chunk's title, section headings, anchor and file name, added to its BM25 score (0: off; off by
    # default: it helped on django-docs-qa but lowered nDCG@10 on git-docs-qa)
    field_weight: float = _setting(0.0, "float", ge=0.0, le=10.0)
    # Rank documents, then passages (retrieval/documents.py): a document's score is its best chunk's
    # plus doc_decay × its second's plus doc_decay² × its third's (0: rank chunks alone). 1.0 raised
    # nDCG@10 and citation precision on both django-docs-qa and git-docs-qa (bench/results/eval-signals.md)
    doc_decay: float = _setting(1.0, "float", ge=0.0, le=1.0)
    # at most this many chunks of one document before every other document's best chunks (0: off)
    per_doc: int = _setting(0, "int", ge=0)
    # the evidence keeps at most this many chunks of one document unless one document clearly holds
    # the answer (retrieval/cutrules.py; cut reason "per_doc"; 0: off). Off by default: 2 raised the
    # evidence's document recall on all four sets but lowered citation precision on git-docs-qa
    # (0.386 -> 0.371) and sqlalchemy-docs-qa (0.500 -> 0.485; bench/results/issue28-trust.md)
    evidence_per_doc: int = _setting(0, "int", ge=0)
    # the evidence adds the best passage of up to this many documents the top-K lacks, even when the
    # document ranking put their page behind top-K chunks of another (retrieval/passage_seats.py; 0: off)
    evidence_seats: int = _setting(1, "int", ge=0)
    # Pseudo-relevance feedback (retrieval/expansion.py): terms taken from the best prf_docs chunks of
    # a first pass and added to the BM25 query with weight prf_weight (prf_terms 0: off; off by
    # default: it helped on git-docs-qa, not on django-docs-qa)
    prf_terms: int = _setting(0, "int", ge=0, le=50)
    prf_docs: int = _setting(3, "int", ge=1, le=20)
    prf_weight: float = _setting(0.3, "float", ge=0.0, le=1.0)
    # Document signals, fused with the chunk evidence when documents are ranked (retrieval/docsignals.py;
    # 0: off). The weight of cosine(question, document title) and of cosine(question, document centroid),
    # added to the document's evidence score over the pool's best (title 0.3 on by default: it raised nDCG@10,
    # recall@1 and citation precision on both test sets, answer/abstain rates level; bench/results/eval-signals-r.md):
    doc_title_weight: float = _setting(0.3, "float", ge=0.0, le=10.0)
    doc_centroid_weight: float = _setting(0.0, "float", ge=0.0, le=10.0)
    # Documents the question or its best named_evidence passages name (a command page such as git-clone,
    # an identifier heading such as DJANGO_SETTINGS_MODULE) join the document ranking by RRF with this
    # weight (on by default: it raised nDCG@10 on both sets; the title and centroid cosines did not)
    named_weight: float = _setting(0.6, "float", ge=0.0, le=10.0)
    named_evidence: int = _setting(10, "int", ge=1, le=50)

    # answering
    # support below this: abstain (answerability.py; tuned on django-docs-qa)
    abstain_bar: float = _setting(0.50, "float", ge=0.0, le=1.0)
    # Use the collection's own calibrated bar when it has one (ragcore eval --calibrate):
    # cosine levels differ between corpora, so one bar does not fit every collection.
    calibrated_bar: bool = _setting(True, "bool")
    min_selection_chars: int = _setting(40, "int", ge=0)
    max_answer_sentences: int = _setting(4, "int", ge=1)
    # The extractive composer quotes at most answer_docs documents, those of its best units (0: any)
    answer_docs: int = _setting(1, "int", ge=0)
    # abstain in corpus mode when the question names a rare word no chunk contains (answerability.py)
    abstain_unseen_words: bool = _setting(True, "bool")
    # a named subject (name, quoted term, identifier, version) no chunk mentions: abstain near the bar,
    # answer with a hedge naming it above (abstain/coverage.py)
    abstain_uncovered: bool = _setting(True, "bool")
    uncovered_margin: float = _setting(0.0, "float", ge=0.0, le=1.0)  # abstain on one within bar + this
    conversation_turns: int = _setting(0, "int", ge=0)
    boundary_rules: tuple[str, ...] = _setting((), "strs")

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
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> "RagcoreSettings":
        """Build settings from RAGCORE_* variables (plus OPENAI_API_KEY / OPENAI_BASE_URL).

        ``overrides`` win over the environment (``llm`` may be an LlmSettings, which replaces
        the environment's, or a mapping of LLM fields applied on top). Empty variables are
        ignored. Unknown or renamed RAGCORE_* variables and bad values raise ConfigError.
        """
        env = os.environ if env is None else env
        check_env_names(env)
        problems: list[str] = []
        try:
            values, labels = env_values(cls, env, ENV_PREFIX, skip=("llm",))
        except ConfigError as exc:
            problems.append(str(exc))
        try:
            llm = _llm_from_env(env, overrides.pop("llm", None))
        except ConfigError as exc:
            problems.append(str(exc))
        if problems:  # every bad variable at once, not one per attempt
            raise ConfigError("; ".join(problems))
        for name, var in (("embed_api_key", "OPENAI_API_KEY"), ("embed_base_url", "OPENAI_BASE_URL")):
            if name not in values and env.get(var):  # the embedding endpoint falls back to OpenAI's variables
                values[name] = check_value(name, _rules(cls)[name], env[var], var)
        _no_unknown(cls, overrides)
        for name, value in overrides.items():
            values[name] = check_value(name, _rules(cls)[name], value)
            labels.pop(name, None)
        return _build(cls, values, labels, llm)


def _build(cls: type[RagcoreSettings], values: dict[str, Any], labels: dict[str, str], llm: LlmSettings) -> RagcoreSettings:
    """The settings object; a chunk overlap/size clash names the variables that set them."""
    defaults = {f.name: f.default for f in fields(cls)}
    size = values.get("chunk_size", defaults["chunk_size"])
    overlap = values.get("chunk_overlap", defaults["chunk_overlap"])
    problem = chunk_problem(size, overlap, labels)
    if problem:
        raise ConfigError(problem)
    return cls(llm=llm, **values)


def chunk_problem(size: int, overlap: int, labels: Mapping[str, str]) -> str | None:
    """Why ``chunk_overlap`` cannot go with ``chunk_size`` (None when it can); ``labels`` name
    where each came from (a variable, an option) when not from code."""
    if overlap < size:
        return None
    o = labels.get("chunk_overlap", "chunk_overlap")
    s = f"{labels['chunk_size']}={size}" if "chunk_size" in labels else str(size)
    return f"{o}={overlap} is not allowed: chunk_overlap must be less than chunk_size ({s})"


def _llm_from_env(env: Mapping[str, str], override: Any) -> LlmSettings:
    if isinstance(override, LlmSettings):
        return override
    values, _ = env_values(LlmSettings, env, LLM_ENV_PREFIX)
    for name, var in (("api_key", "OPENAI_API_KEY"), ("base_url", "OPENAI_BASE_URL")):
        raw = env.get(var)
        if name not in values and raw:
            values[name] = check_value(name, _rules(LlmSettings)[name], raw, var)
    llm = LlmSettings(**values)
    if isinstance(override, Mapping):
        _no_unknown(LlmSettings, override)
        llm = replace(llm, **override)
    elif override is not None:
        raise ConfigError(f"llm={type(override).__name__} is not allowed: llm must be an LlmSettings or a mapping")
    return llm


def env_values(cls: type, env: Mapping[str, str], prefix: str, skip: tuple[str, ...] = ()) -> tuple[dict[str, Any], dict[str, str]]:
    """The fields of ``cls`` set in ``env`` as ``PREFIX + NAME``, parsed and checked (every bad
    variable in one ConfigError), with the variable each came from."""
    values: dict[str, Any] = {}
    labels: dict[str, str] = {}
    problems: list[str] = []
    for name, rule in _rules(cls).items():
        var = prefix + name.upper()
        raw = env.get(var)
        if name in skip or raw is None or raw.strip() == "":
            continue
        try:
            values[name] = check_value(name, rule, raw, var)
            labels[name] = var
        except ConfigError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigError("; ".join(problems))
    return values, labels


def known_variables() -> frozenset[str]:
    """Every RAGCORE_* variable ragcore reads."""
    names = {ENV_PREFIX + n.upper() for n in _rules(RagcoreSettings)}
    names |= {LLM_ENV_PREFIX + n.upper() for n in _rules(LlmSettings)}
    return frozenset(names | OTHER_VARIABLES | SERVICE_VARIABLES)


def check_env_names(env: Mapping[str, str], prefix: str = ENV_PREFIX) -> None:
    """ConfigError naming every renamed or unknown variable starting with ``prefix``: a typo
    such as RAGCORE_TOPK would otherwise be ignored without a word."""
    known = known_variables()
    problems = []
    for var in sorted(k for k in env if k.startswith(prefix) and k not in known):
        if var in RENAMED_VARIABLES:
            problems.append(f"{var} was renamed {RENAMED_VARIABLES[var]}: set that instead")
            continue
        close = difflib.get_close_matches(var, sorted(known), n=1, cutoff=0.8)
        hint = f" (did you mean {close[0]}?)" if close else ""
        problems.append(f"{var} is not a ragcore setting{hint}")
    if problems:
        raise ConfigError("; ".join(problems) + " (docs/13-configuration-reference.md lists every variable)")


def _no_unknown(cls: type, changes: Mapping[str, Any]) -> None:
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(changes) - names)
    if unknown:
        raise ConfigError(f"unknown setting(s) {', '.join(unknown)} for {cls.__name__}")


def _safe_repr(obj: Any) -> str:
    """The dataclass repr without secrets: keys left out, URLs without credentials."""
    parts = []
    for f in fields(obj):
        if not f.repr:
            continue
        v = getattr(obj, f.name)
        rule = f.metadata.get("rule")
        if rule is not None and rule.kind == "url":
            v = redact_url(v)
        parts.append(f"{f.name}={v!r}")
    return f"{type(obj).__name__}({', '.join(parts)})"
