"""Embedding sources by name: ``RAGCORE_EMBED_MODEL`` (or a collection's record) → an encoder.

:class:`EncoderPool` keeps one encoder per model, so every collection built with a model shares
its loaded session or HTTP connections and its vector cache, and a collection is always asked with
its own model whatever ``RAGCORE_EMBED_MODEL`` says now.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Mapping

from ragcore.encoders.base import CachingEncoder, EmbedError, ModelRecord
from ragcore.settings.models import parse_embed

if TYPE_CHECKING:
    from ragcore.settings.config import RagcoreSettings


def encoder_for_spec(spec: str, settings: "RagcoreSettings", *, dimension: int | None = None,
                     base_url: str | None = None, prefixes: tuple[str, str] | None = None) -> CachingEncoder:
    """A new encoder for ``spec`` (``minilm``, ``openai:<model>``, ``onnx:<folder>``, ``fastembed:<name>``).
    ``prefixes`` (query, document) and ``dimension`` come from a collection's record when there is one."""
    try:
        ms = parse_embed(spec)
    except ValueError as exc:
        raise EmbedError(str(exc)) from exc
    qp, dp = prefixes if prefixes is not None else (_spaced(settings.embed_query_prefix), _spaced(settings.embed_document_prefix))
    if ms.source == "minilm":
        from ragcore.encoders.minilm import OnnxMiniLM

        return OnnxMiniLM(batch_size=settings.embed_batch_size)
    if ms.source == "openai":
        from ragcore.encoders.cache import FILE_NAME
        from ragcore.encoders.openai_embed import OpenAIEmbedder

        # the settings are ceilings: requests start small and adapt to the server (adaptive.py)
        return OpenAIEmbedder(ms.arg, base_url=settings.embed_base_url or base_url, api_key=settings.embed_api_key,
                              timeout_s=settings.embed_timeout_s, concurrency=settings.embed_concurrency,
                              batch=settings.embed_request_size, dimension=dimension,
                              query_prefix=qp or "", document_prefix=dp or "",
                              cache_path=settings.data_dir / FILE_NAME)
    if ms.source == "onnx":
        from ragcore.encoders.onnx_folder import OnnxSentenceEncoder, read_folder

        return OnnxSentenceEncoder(read_folder(ms.arg, qp, dp), batch_size=settings.embed_batch_size, spec=str(ms))
    from ragcore.encoders.fastembed_source import FastEmbedEncoder

    return FastEmbedEncoder(ms.arg, query_prefix=qp or "", document_prefix=dp or "")


def _spaced(prefix: str | None) -> str | None:
    """A prefix from the settings ends in one space: the environment trims values, and every published
    prefix ("query: ", bge's "Represent this sentence for searching relevant passages: ") has one."""
    return prefix if not prefix or prefix[-1].isspace() else prefix + " "


def record_of(meta: Mapping[str, Any]) -> ModelRecord | None:
    """The model record kept in a collection's metadata (None: built before models were recorded,
    which means the bundled MiniLM)."""
    raw = meta.get("embedding")
    return ModelRecord.from_meta(raw) if isinstance(raw, Mapping) and raw.get("source") else None


class EncoderPool:
    """One encoder per model; the bundled MiniLM is the engine's own (passed in, shared)."""

    def __init__(self, default: CachingEncoder) -> None:
        self.default = default
        self._by_key: dict[tuple[str, str, str], CachingEncoder] = {}
        self._lock = threading.Lock()

    def for_spec(self, spec: str, settings: "RagcoreSettings") -> CachingEncoder:
        """The encoder ``spec`` names, with the settings' prefixes (a new collection's model)."""
        if parse_embed(spec).source == "minilm":
            return self.default
        key = (spec, _spaced(settings.embed_query_prefix) or "", _spaced(settings.embed_document_prefix) or "")
        return self._get(key, lambda: encoder_for_spec(spec, settings))

    def for_record(self, record: ModelRecord | None, settings: "RagcoreSettings") -> CachingEncoder:
        """The encoder of a collection's recorded model, with its recorded prefixes and width."""
        if record is None or record.source == "minilm":
            return self.default
        key = (record.spec, record.query_prefix, record.document_prefix)
        return self._get(key, lambda: encoder_for_spec(record.spec, settings, dimension=record.dimension,
                                                       base_url=record.base_url,
                                                       prefixes=(record.query_prefix, record.document_prefix)))

    def _get(self, key: tuple[str, str, str], make: Any) -> CachingEncoder:
        with self._lock:
            enc = self._by_key.get(key)
            if enc is None:
                enc = self._by_key[key] = make()
            return enc

    def close(self) -> None:
        with self._lock:
            for enc in self._by_key.values():
                getattr(enc, "close", lambda: None)()
            self._by_key.clear()


class ModelMismatch(EmbedError):
    """Ingesting into a collection built with another embedding model: the vectors would not compare."""


MINILM_RECORD = ModelRecord(source="minilm", name="all-MiniLM-L6-v2-int8-onnx", spec="minilm", dimension=384, pooling="mean")


def ingest_encoder(pool: EncoderPool, collection: str, meta: Mapping[str, Any], settings: "RagcoreSettings") -> CachingEncoder:
    """The encoder an ingest into ``collection`` uses: ``settings.embed_model`` (not set: MiniLM) for a
    new collection; for an existing one its own model, and ModelMismatch (naming both and how to
    rebuild) when ``settings.embed_model`` names another."""
    wanted = pool.for_spec(settings.embed_model or "minilm", settings)
    if not meta.get("corpus_version"):  # new (or never finished an ingest): it takes the model asked for
        return wanted
    have = record_of(meta) or MINILM_RECORD
    if not settings.embed_model:  # no model asked for: the collection keeps its own
        return pool.for_record(have, settings)
    asked = wanted.record()
    if have.same_model(asked):
        return pool.for_record(have, settings)
    raise ModelMismatch(
        f"the collection {collection!r} was built with {have.label}; this ingest asks for {asked.label} "
        f"(RAGCORE_EMBED_MODEL or --embed-model). Vectors of two models do not compare: ingest without "
        f"--embed-model (or with --embed-model {have.spec}) to update it, or rebuild it with the new model: ragcore ingest PATH "
        f"--collection {collection} --embed-model {asked.spec} --rebuild (or into a new collection name)")
