"""ragcore: grounded question answering over a document corpus, built from LlamaIndex parts.

The public API is what ``__all__`` lists (pinned by ``tests/unit/test_public_api.py``). Names are
imported on first use (PEP 562), so ``import ragcore`` loads no model, opens no store and
imports neither LlamaIndex nor Qdrant until you ask for something that needs them.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    # settings
    "RagcoreSettings": "ragcore.settings.config",
    "LlmSettings": "ragcore.settings.config",
    "ConfigError": "ragcore.settings.config",
    # the engine and its request types
    "Engine": "ragcore.engine.engine",
    "SelectionInput": "ragcore.engine.stages",
    # the contract
    "Answer": "ragcore.types",
    "Candidate": "ragcore.types",
    "Chunk": "ragcore.types",
    "Citation": "ragcore.types",
    "CollectionInfo": "ragcore.types",
    "Event": "ragcore.types",
    "Evidence": "ragcore.types",
    "IngestReport": "ragcore.types",
    "RetrievalResult": "ragcore.types",
    "Validation": "ragcore.types",
    # LlamaIndex components
    "LineAwareNodeParser": "ragcore.llamaindex.node_parser",
    "OnnxMiniLM": "ragcore.encoders.minilm",
    "OnnxEmbedding": "ragcore.llamaindex.embedding",
    "Store": "ragcore.storage.store",
    "SnapshotVectorStore": "ragcore.llamaindex.vector_store",
    "HybridRetriever": "ragcore.llamaindex.retriever",
    "HybridSearch": "ragcore.retrieval",
    "CosineThreshold": "ragcore.llamaindex.postprocessors",
    "SectionDedupe": "ragcore.llamaindex.postprocessors",
    "TopK": "ragcore.llamaindex.postprocessors",
    "apply_cuts": "ragcore.retrieval",
    "CitationNumberer": "ragcore.citations",
    "CitationChecker": "ragcore.citations",
    "check_answer": "ragcore.citations",
    "OpenAICompatibleLLM": "ragcore.llamaindex.llm",
    # synthesis
    "Synthesizer": "ragcore.synthesis.base",
    "Synthesis": "ragcore.synthesis.base",
    "ExtractiveComposer": "ragcore.synthesis.extractive.composer",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'ragcore' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
