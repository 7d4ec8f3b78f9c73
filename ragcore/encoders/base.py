"""What every dense embedding source shares: the record a collection keeps of its model, the small
protocol the engine and ingest use, and the vector cache.

A source turns texts into L2-normalised float32 rows. Questions and documents may get different
prefixes (e5's "query: " / "passage: ", bge's retrieval instruction), so the protocol has two
entry points: :meth:`DenseEncoder.encode` for documents, sentences and headings, and
:meth:`DenseEncoder.encode_queries` for questions. Each source is wrapped as a LlamaIndex
``BaseEmbedding`` by :class:`ragcore.llamaindex.embedding.RagcoreEmbedding`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

import numpy as np


class EmbedError(RuntimeError):
    """An embedding source that cannot give vectors, with the message the user sees (never a key)."""


@dataclass(frozen=True)
class ModelRecord:
    """The embedding model a collection was built with, as its metadata keeps it.

    ``spec`` is what ``RAGCORE_EMBED_MODEL`` said (``minilm``, ``openai:<model>``, ``onnx:<folder>``,
    ``fastembed:<name>``); ``source`` its kind; ``name`` the model's own name; ``dimension`` the
    width of its vectors; the prefixes are part of the model (a question embedded without e5's
    "query: " lands elsewhere). ``base_url`` (credentials removed) says where an endpoint was."""

    source: str
    name: str
    spec: str
    dimension: int
    query_prefix: str = ""
    document_prefix: str = ""
    pooling: str = ""
    base_url: str | None = None

    @property
    def label(self) -> str:
        """How the model is named to a user: ``openai:nomic-embed-text (768-d)``."""
        return f"{self.spec} ({self.dimension}-d)" if self.source != "minilm" else f"minilm {self.name} ({self.dimension}-d)"

    def same_model(self, other: "ModelRecord") -> bool:
        """Whether vectors of ``other`` can be compared with this model's (same model, same prefixes)."""
        return (self.source, self.name, self.dimension, self.query_prefix, self.document_prefix) == \
            (other.source, other.name, other.dimension, other.query_prefix, other.document_prefix)

    def as_meta(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_meta(cls, meta: Mapping[str, Any]) -> "ModelRecord":
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in meta.items() if k in names})


@runtime_checkable
class DenseEncoder(Protocol):
    """What the engine, ingest and the LlamaIndex adapter need from an embedding source."""

    def record(self) -> ModelRecord:
        """The model's record; a source that learns its dimension from the first response asks once."""
        ...

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Documents (chunks, sentences, headings): (len(texts), dimension) float32, unit rows."""
        ...

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Questions, with the model's query prefix."""
        ...

    def encode_uncached(self, texts: Sequence[str]) -> np.ndarray: ...

    def clear_cache(self) -> None: ...


class CachingEncoder:
    """The LRU vector cache and prefixes over a subclass's ``_encode`` (the model itself, no cache).

    Answering embeds the same question and evidence sentences several times (composer, support
    checker, re-runs of a notebook cell); vectors are deterministic, so they are kept."""

    query_prefix: str = ""
    document_prefix: str = ""

    def __init__(self, cache_size: int = 50_000) -> None:
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._cache_lock = threading.Lock()

    # subclasses give these
    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def dimension(self) -> int:
        raise NotImplementedError

    def record(self) -> ModelRecord:
        raise NotImplementedError

    def load_in_background(self) -> None:
        """Sources with a model to load start it here (the bundled MiniLM does); others have nothing to do."""

    def settle(self) -> None:
        """Wait for a background load (see :meth:`load_in_background`)."""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents (cached for short texts: sentences and headings)."""
        p = self.document_prefix
        return self._cached([p + t for t in texts] if p else texts)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed questions (with the query prefix); a model without one embeds them as documents."""
        p = self.query_prefix
        if p == self.document_prefix:
            return self.encode(texts)
        return self._cached([p + t for t in texts] if p else texts)

    def encode_uncached(self, texts: Sequence[str]) -> np.ndarray:
        p = self.document_prefix
        return self._encode([p + t for t in texts] if p else texts)

    def _cached(self, texts: Sequence[str]) -> np.ndarray:
        todo: dict[str, list[int]] = {}
        found: dict[int, np.ndarray] = {}
        with self._cache_lock:
            for i, t in enumerate(texts):
                v = self._cache.get(t)
                if v is None:
                    todo.setdefault(t, []).append(i)
                else:
                    self._cache.move_to_end(t)  # least recently used goes first
                    found[i] = v
        if not todo and not texts:
            return np.zeros((0, self.dimension()), dtype=np.float32)
        vecs = self._encode(list(todo)) if todo else None
        width = vecs.shape[1] if vecs is not None else next(iter(found.values())).shape[0]
        out = np.zeros((len(texts), width), dtype=np.float32)
        for i, v in found.items():
            out[i] = v
        if vecs is not None:
            with self._cache_lock:
                for t, v in zip(todo, vecs):
                    out[todo[t]] = v
                    if len(t) < 2000:
                        self._cache[t] = v
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return out

    def clear_cache(self) -> None:
        """Forget cached vectors (benchmarks measure cold queries this way)."""
        with self._cache_lock:
            self._cache.clear()

    def cached_texts(self) -> list[str]:
        """The texts whose vectors are cached, least recently used first."""
        return list(self._cache)


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (cosine is then a dot product); zero rows stay zero."""
    x = np.asarray(x, dtype=np.float32)
    return x / np.clip(np.linalg.norm(x, axis=1, keepdims=True), 1e-12, None)
