"""Dense, sparse (BM25) and hybrid retrieval with every score kept and every cut explained,
built from LlamaIndex parts: a ``BaseRetriever`` (:class:`HybridRetriever`) and the cuts as
node post-processors (:class:`CosineThreshold`, :class:`SectionDedupe`, :class:`TopK`).

The LlamaIndex components are loaded on first use: the question path (``HybridSearch``,
``apply_cuts``) runs the same search and the same cut rules without importing ``llama_index``,
whose import alone takes ~2 s of a cold ``ragcore ask``.
"""

from importlib import import_module
from typing import Any

from ragcore.retrieval.cutrules import apply_cuts
from ragcore.retrieval.fusion import PoolEntry, fuse, rank_pool, rank_score_kind
from ragcore.retrieval.search import HybridSearch

_LAZY = {"CosineThreshold": "ragcore.llamaindex.postprocessors", "SectionDedupe": "ragcore.llamaindex.postprocessors",
         "TopK": "ragcore.llamaindex.postprocessors", "cut_chain": "ragcore.llamaindex.postprocessors",
         "HybridRetriever": "ragcore.llamaindex.retriever"}

__all__ = [
    "CosineThreshold", "HybridRetriever", "HybridSearch", "PoolEntry", "SectionDedupe", "TopK", "apply_cuts",
    "cut_chain", "fuse", "rank_pool", "rank_score_kind",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
