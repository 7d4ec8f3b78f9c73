"""Dense, sparse (BM25) and hybrid retrieval with every score kept and every cut explained,
built from LlamaIndex parts: a ``BaseRetriever`` (:class:`HybridRetriever`) and the cuts as
node post-processors (:class:`CosineThreshold`, :class:`SectionDedupe`, :class:`TopK`)."""

from .cuts import CosineThreshold, SectionDedupe, TopK, apply_cuts, cut_chain
from .fusion import PoolEntry, fuse, rank_pool, rank_score_kind
from .retriever import HybridRetriever
from .search import HybridSearch

__all__ = [
    "CosineThreshold", "HybridRetriever", "HybridSearch", "PoolEntry", "SectionDedupe", "TopK", "apply_cuts",
    "cut_chain", "fuse", "rank_pool", "rank_score_kind",
]
