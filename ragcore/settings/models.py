"""The model settings' grammar: ``RAGCORE_EMBED_MODEL`` and ``RAGCORE_RERANK`` values, parsed and
checked in one place (``config.py`` calls :func:`spec_problem` for both; the encoders and the
rerank stage call the parsers).

    RAGCORE_EMBED_MODEL = minilm | openai:<model> | onnx:<folder> | fastembed:<name>
    RAGCORE_RERANK      = (empty: off) | endpoint:<model> | onnx:<folder> | llm
"""

from __future__ import annotations

from dataclasses import dataclass

EMBED_SOURCES = ("minilm", "openai", "onnx", "fastembed")
RERANK_SOURCES = ("endpoint", "onnx", "llm")
EMBED_FORMS = "'minilm', 'openai:<model>', 'onnx:<folder>' or 'fastembed:<name>'"
RERANK_FORMS = "'endpoint:<model>', 'onnx:<folder>', 'llm' (or not set: off)"


@dataclass(frozen=True)
class ModelSpec:
    """One parsed value: ``source`` and its argument (a model name or a folder; "" for minilm/llm)."""

    source: str
    arg: str = ""

    def __str__(self) -> str:
        return f"{self.source}:{self.arg}" if self.arg else self.source


def parse_embed(value: str) -> ModelSpec:
    """``RAGCORE_EMBED_MODEL`` as a spec (ValueError with the allowed forms)."""
    return _parse(value, EMBED_SOURCES, bare=("minilm",), forms=EMBED_FORMS)


def parse_rerank(value: str) -> ModelSpec:
    return _parse(value, RERANK_SOURCES, bare=("llm",), forms=RERANK_FORMS)


def _parse(value: str, sources: tuple[str, ...], *, bare: tuple[str, ...], forms: str) -> ModelSpec:
    text = (value or "").strip()
    source, sep, arg = text.partition(":")
    source, arg = source.strip().lower(), arg.strip()
    if source not in sources:
        raise ValueError(f"{text!r} is not a model: use {forms}")
    if source in bare and arg:
        raise ValueError(f"{text!r}: {source} takes no argument")
    if source not in bare and not arg:
        raise ValueError(f"{text!r} needs a {'folder' if source == 'onnx' else 'model name'} after '{source}:'")
    return ModelSpec(source, arg)


def spec_problem(field: str, value: str | None) -> str | None:
    """Why a model setting's value is wrong (None: it is fine or not set)."""
    if not value:
        return None  # not set: the bundled MiniLM for new collections (embed_model), no reranker (rerank)
    try:
        (parse_rerank if field == "rerank" else parse_embed)(value)
    except ValueError as exc:
        var = "RAGCORE_" + field.upper()
        return f"{var}={value!r} is not allowed: {exc}"
    return None
