"""The embedding model as a LlamaIndex ``BaseEmbedding`` (:class:`OnnxEmbedding`), over
:class:`~ragcore.encoders.minilm.OnnxMiniLM`: for LlamaIndex indexes, query engines and the baselines.
Also exported as ``ragcore.OnnxEmbedding``."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from pydantic import PrivateAttr

from ragcore.encoders.minilm import MODEL_NAME, OnnxMiniLM


class OnnxEmbedding(BaseEmbedding):
    """LlamaIndex adapter over :class:`OnnxMiniLM` (used by ragcore and the baselines)."""

    _encoder: OnnxMiniLM = PrivateAttr()

    def __init__(self, encoder: OnnxMiniLM | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("model_name", MODEL_NAME)
        super().__init__(**kwargs)
        self._encoder = encoder or OnnxMiniLM()

    @classmethod
    def class_name(cls) -> str:
        return "OnnxEmbedding"

    @property
    def encoder(self) -> OnnxMiniLM:
        return self._encoder

    def _get_query_embedding(self, query: str) -> list[float]:
        return self._encoder.encode([query])[0].tolist()

    def _get_text_embedding(self, text: str) -> list[float]:
        return self._encoder.encode([text])[0].tolist()

    def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
        return self._encoder.encode(texts).tolist()

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return self._get_query_embedding(query)

    async def _aget_text_embedding(self, text: str) -> list[float]:
        return self._get_text_embedding(text)
