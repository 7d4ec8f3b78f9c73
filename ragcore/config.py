"""Settings: one frozen object, read from the environment (prefix RAGCORE_) or built in code.

Nothing here runs at import time; call :func:`RagcoreSettings.from_env` where a process starts
(the CLI, the app) and pass the object down explicitly.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, Mapping

RetrievalMode = Literal["dense", "sparse", "hybrid"]
Fusion = Literal["rrf", "weighted"]
UnsupportedPolicy = Literal["annotate", "extractive"]
LlmApi = Literal["chat", "responses"]

ENV_PREFIX = "RAGCORE_"


def default_data_dir() -> Path:
    """Where embedded Qdrant and notebooks live unless RAGCORE_DATA_DIR says otherwise.

    ``~/.local/share/ragcore`` (or ``$XDG_DATA_HOME/ragcore``): outside the work tree, so a
    clone stays clean and every checkout of the app sees the same collections.
    """
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg else Path.home() / ".local" / "share"
    return base / "ragcore"


@dataclass(frozen=True)
class LlmSettings:
    """An OpenAI-compatible endpoint. Empty ``model`` means: no LLM, use the extractive composer."""

    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)  # never printed
    model: str | None = None
    api: LlmApi = "chat"
    temperature: float = 0.1
    max_output_tokens: int = 512
    context_window: int = 8192
    timeout_s: float = 30.0
    max_retries: int = 2
    # whole-answer deadline: a server that trickles tokens cannot hold an answer open forever
    deadline_s: float = 120.0
    unsupported_policy: UnsupportedPolicy = "annotate"

    @property
    def configured(self) -> bool:
        return bool(self.model)

    def public_dict(self) -> dict[str, Any]:
        """A dict safe to show or save: the key is reduced to whether one is set."""
        d = dataclasses.asdict(self)
        d["api_key"] = "set" if self.api_key else None
        return d


@dataclass(frozen=True)
class RagcoreSettings:
    # storage
    data_dir: Path = field(default_factory=default_data_dir)
    qdrant_url: str | None = None
    qdrant_api_key: str | None = field(default=None, repr=False)
    collection: str = "guide"

    # ingestion
    chunk_size: int = 180  # words per chunk (MiniLM reads at most 256 word pieces)
    chunk_overlap: int = 30  # words carried over between neighbouring chunks of one section
    max_file_bytes: int = 20_000_000
    embed_batch_size: int = 8  # measured best on 2 cores: larger batches thrash the cache
    max_chunk_chars: int = 4000  # hard cap on one chunk's text, whatever the file's shape
    max_file_chunks: int = 5000  # a file that needs more is reported as too large, not ingested

    # retrieval
    retrieval_mode: RetrievalMode = "hybrid"
    top_k: int = 6
    threshold: float = 0.0  # on cosine similarity (question vs chunk), every mode
    fusion: Fusion = "rrf"
    rrf_k: int = 10  # tuned on django-docs-qa: k=60 let chunks deep in both lists beat either top hit
    dense_weight: float = 0.6  # for fusion="weighted"
    candidates: int = 50  # per branch, before cuts
    dedupe: bool = True  # best chunk per (path, section) wins
    path_filter: str | None = None  # glob on the relative path

    # answering
    abstain_bar: float = 0.50  # support below this: abstain (answerability.py; tuned on django-docs-qa)
    # Use the collection's own calibrated bar when it has one (ragcore eval --calibrate):
    # cosine levels differ between corpora, so one bar does not fit every collection.
    calibrated_bar: bool = True
    min_selection_chars: int = 40
    max_answer_sentences: int = 4
    conversation_turns: int = 0
    boundary_rules: tuple[str, ...] = ()

    llm: LlmSettings = field(default_factory=LlmSettings)

    def with_(self, **changes: Any) -> "RagcoreSettings":
        return replace(self, **changes)

    @property
    def qdrant_path(self) -> Path:
        return Path(self.data_dir) / "qdrant"

    @property
    def notebooks_dir(self) -> Path:
        return Path(self.data_dir) / "notebooks"

    def public_dict(self) -> dict[str, Any]:
        """Settings as saved with an Answer: JSON-friendly, no secrets."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "qdrant_api_key":
                v = "set" if v else None
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
        """Build settings from RAGCORE_* variables (plus OPENAI_* for the endpoint).

        ``overrides`` win over the environment; unknown RAGCORE_ variables are ignored.
        """
        env = os.environ if env is None else env
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name == "llm":
                continue
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw is not None and raw != "":
                values[f.name] = _coerce(f, raw)
        llm_values: dict[str, Any] = {}
        for f in fields(LlmSettings):
            raw = env.get(ENV_PREFIX + "LLM_" + f.name.upper())
            if raw is not None and raw != "":
                llm_values[f.name] = _coerce(f, raw)
        llm_values.setdefault("api_key", env.get("OPENAI_API_KEY") or None)
        llm_values.setdefault("base_url", env.get("OPENAI_BASE_URL") or None)
        llm_over = overrides.pop("llm", None)
        llm = LlmSettings(**llm_values)
        if isinstance(llm_over, Mapping):
            llm = replace(llm, **llm_over)
        elif isinstance(llm_over, LlmSettings):
            llm = llm_over
        values.update(overrides)
        return cls(llm=llm, **values)


def _coerce(f: dataclasses.Field, raw: str) -> Any:
    t = str(f.type)
    if "Path" in t:
        return Path(raw).expanduser()
    if t.startswith("bool"):
        return raw.strip().lower() in {"1", "true", "yes", "on"}
    if t.startswith("int"):
        return int(raw)
    if t.startswith("float"):
        return float(raw)
    if t.startswith("tuple"):
        return tuple(s.strip() for s in raw.split(";") if s.strip())
    return raw
