"""The public API: what ``import ragcore`` offers is pinned here, and importing it is free."""

from __future__ import annotations

import subprocess
import sys

import ragcore

PUBLIC = [
    "Answer", "Candidate", "Chunk", "Citation", "CitationChecker", "CitationNumberer", "CollectionInfo", "ConfigError",
    "CosineThreshold", "Engine", "Event", "Evidence", "ExtractiveComposer", "HybridRetriever", "HybridSearch",
    "IngestReport", "LineAwareNodeParser", "LlmSettings", "OnnxEmbedding", "OnnxMiniLM", "OpenAICompatibleLLM",
    "RagcoreSettings", "RetrievalResult", "SectionDedupe", "SelectionInput", "SnapshotVectorStore", "Store", "Synthesis", "Synthesizer",
    "TopK", "Validation", "apply_cuts", "check_answer",
]


def test_all_is_pinned_and_resolves() -> None:
    assert ragcore.__all__ == sorted(PUBLIC)
    for name in ragcore.__all__:
        assert getattr(ragcore, name) is not None, name


def test_import_has_no_side_effects() -> None:
    """``import ragcore`` loads neither LlamaIndex, Qdrant, the model nor Streamlit."""
    code = ("import sys, ragcore; heavy = [m for m in ('llama_index.core', 'qdrant_client', 'onnxruntime', "
            "'streamlit') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_core_never_imports_streamlit() -> None:
    from pathlib import Path

    root = Path(ragcore.__file__).parent
    offenders = [str(p) for p in root.rglob("*.py") if "import streamlit" in p.read_text(encoding="utf-8")]
    assert offenders == []
