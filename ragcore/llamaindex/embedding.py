"""Every embedding source as a LlamaIndex ``BaseEmbedding``: :class:`RagcoreEmbedding` over any
:class:`~ragcore.encoders.base.DenseEncoder` (the bundled MiniLM, an OpenAI-compatible endpoint,
a local ONNX folder, FastEmbed), for LlamaIndex indexes, query engines and the baselines.
Questions get the model's query prefix, documents its document prefix. :class:`OnnxEmbedding`
(also exported as ``ragcore.OnnxEmbedding``) is the bundled MiniLM's, as before;
:func:`embedding_for` builds one from a ``RAGCORE_EMBED_MODEL`` value."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from ragcore.encoders.base import CachingEncoder
from ragcore.encoders.minilm import MODEL_NAME, OnnxMiniLM

if TYPE_CHECKING:
    from ragcore.settings.config import RagcoreSettings


class RagcoreEmbedding(BaseEmbedding):
    """LlamaIndex adapter over one of ragcore's embedding sources."""

    _encoder: CachingEncoder = PrivateAttr()

    def __init__(self, encoder: CachingEncoder, **kwargs: Any) -> None:
        kwargs.setdefault("model_name", getattr(encoder, "spec", "") or type(encoder).__name__)
        super().__init__(**kwargs)
        self._encoder = encoder

    @classmethod
    def class_name(cls) -> str:
        return "RagcoreEmbedding"

    @property
    def encoder(self) -> CachingEncoder:
        return self._encoder

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._encoder.encode_queries([query])[0].tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._encoder.encode([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._encoder.encode(texts).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embedding(text)


class OnnxEmbedding(RagcoreEmbedding):
    """The bundled MiniLM as a LlamaIndex embedding (used by ragcore and the baselines)."""

    def __init__(self, encoder: OnnxMiniLM | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("model_name", MODEL_NAME)
        super().__init__(encoder or OnnxMiniLM(), **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return "OnnxEmbedding"


def embedding_for(spec: str, settings: "RagcoreSettings") -> RagcoreEmbedding:
    """The LlamaIndex embedding of a ``RAGCORE_EMBED_MODEL`` value (``minilm``, ``openai:<model>`` …)."""
    from ragcore.encoders.registry import encoder_for_spec

    return RagcoreEmbedding(encoder_for_spec(spec, settings))
