"""Dense, sparse (BM25) and hybrid retrieval with every score kept and every cut explained, as plain
code: ``HybridSearch`` and the cut rules (``apply_cuts``). The question path runs them without
importing ``llama_index`` (its import alone takes ~2 s of a cold ``ragcore ask``).

Their LlamaIndex faces, a ``BaseRetriever`` (``HybridRetriever``) and the cuts as node
post-processors (``CosineThreshold``, ``SectionDedupe``, ``TopK``), live one floor up, in
``ragcore.llamaindex``, and are exported by ``ragcore`` itself.
"""

from ragcore.retrieval.cutrules import apply_cuts
from ragcore.retrieval.fusion import PoolEntry, fuse, rank_pool, rank_score_kind
from ragcore.retrieval.search import HybridSearch

__all__ = ["HybridSearch", "PoolEntry", "apply_cuts", "fuse", "rank_pool", "rank_score_kind"]
