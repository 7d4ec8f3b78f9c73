"""``fastembed:<name>``: Qdrant's FastEmbed library, for users with internet access.

FastEmbed downloads its ONNX files from Hugging Face on first use. It is not a dependency of
ragcore (nothing here downloads at run time by default); without it, or offline, this source
fails at once with a message saying what to do instead (``onnx:<folder>`` with files fetched
by hand). The download is bounded by Hugging Face's own timeouts, shortened here, so an offline
machine gets the message in seconds instead of hanging.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Sequence

import numpy as np

from ragcore.encoders.base import CachingEncoder, EmbedError, ModelRecord, unit_rows

DOWNLOAD_TIMEOUT_S = "10"


class FastEmbedEncoder(CachingEncoder):
    source = "fastembed"

    def __init__(self, name: str, *, query_prefix: str = "", document_prefix: str = "", cache_size: int = 50_000) -> None:
        super().__init__(cache_size)
        self.name, self.query_prefix, self.document_prefix = name, query_prefix, document_prefix
        self.spec = f"fastembed:{name}"
        self._model: Any = None
        self._dim: int | None = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is not None:
                return self._model
            try:
                from fastembed import TextEmbedding
            except ImportError as exc:
                raise EmbedError(f"fastembed:{self.name} needs the fastembed package (pip install fastembed) and "
                                 "internet access to fetch the model; offline, export the model to a folder and use "
                                 "onnx:<folder> (docs/19-choosing-models.md)") from exc
            os.environ.setdefault("HF_HUB_ETAG_TIMEOUT", DOWNLOAD_TIMEOUT_S)
            os.environ.setdefault("HF_HUB_DOWNLOAD_TIMEOUT", DOWNLOAD_TIMEOUT_S)
            try:
                self._model = TextEmbedding(model_name=self.name)
            except Exception as exc:  # noqa: BLE001 - a download or lookup failure of any kind: say what to do
                raise EmbedError(f"fastembed could not load {self.name!r} ({type(exc).__name__}: {exc}); it downloads "
                                 "models from Hugging Face, so it needs internet access on first use; offline, use "
                                 "onnx:<folder> (docs/19-choosing-models.md)") from exc
            return self._model

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        vecs = unit_rows(np.vstack(list(self._load().embed(list(texts)))))
        self._dim = vecs.shape[1]
        return vecs

    def dimension(self) -> int:
        if self._dim is None:
            self._encode(["dimension"])
        assert self._dim is not None
        return self._dim

    def record(self) -> ModelRecord:
        return ModelRecord(source="fastembed", name=self.name, spec=f"fastembed:{self.name}", dimension=self.dimension(),
                           query_prefix=self.query_prefix, document_prefix=self.document_prefix, pooling="fastembed")
