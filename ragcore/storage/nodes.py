"""ragcore's chunks as LlamaIndex nodes, and back.

One conversion for every stage that speaks LlamaIndex (the node parser, the vector store
writer, the retriever, the post-processors, the citation checker), so a node means the same
thing everywhere. It sits in storage, not in llamaindex/: the store writes its payloads as these
nodes, and the citation numbering (a floor below the LlamaIndex adapters) reads them back:

* ``TextNode.text`` is the chunk's source text, byte for byte (citations quote it);
* ``metadata`` carries the provenance (path, line span, section path, anchor, page, title) and,
  on retrieved nodes, every score with its kind and each branch's rank;
* none of that bookkeeping reaches the LLM or the embedding model: every ragcore key is in
  ``excluded_llm_metadata_keys`` / ``excluded_embed_metadata_keys``. What the LLM reads of a
  numbered node is the header the citation post-processor writes ("[3] docs/a.md:12-20 …").
"""

from __future__ import annotations

from typing import Any, Mapping

from llama_index.core.schema import BaseNode, NodeWithScore, TextNode

from ragcore.types import Candidate, Chunk, ScoreKind

# provenance: where the chunk's text stands in its source file
PROVENANCE_KEYS = (
    "chunk_id", "path", "doc_hash", "kind", "start_line", "end_line", "section", "anchor", "page", "ordinal", "title",
    "page_label", "ocr_confidence",
)
# scores and ranks a retrieved node carries (None where a branch did not rank it)
SCORE_KEYS = (
    "cosine", "bm25", "fused", "score_kind", "dense_rank", "sparse_rank", "fused_rank", "rank", "origin",
    "field_score", "matched_fields", "doc_score", "doc_rank", "chunk_rank",
    "doc_title_cosine", "doc_centroid_cosine", "named_by",
)
CITATION_KEY = "citation_n"
RAGCORE_KEYS = (*PROVENANCE_KEYS, *SCORE_KEYS, CITATION_KEY, "citation", "doc_chunks", "fp", "context")


def chunk_metadata(chunk: Chunk) -> dict[str, Any]:
    """A node's provenance metadata: the chunk's payload keys (``Chunk.to_payload``)."""
    return chunk.to_payload()


def chunk_to_node(chunk: Chunk, extra: Mapping[str, Any] | None = None, *, node_id: str | None = None) -> TextNode:
    """A fresh TextNode for ``chunk`` (never shared between queries, so nobody's scores leak)."""
    meta = {**chunk_metadata(chunk), **(extra or {})}
    return TextNode(
        id_=node_id or chunk.chunk_id,
        text=chunk.text,
        metadata=meta,
        excluded_embed_metadata_keys=[k for k in meta if k in RAGCORE_KEYS],
        excluded_llm_metadata_keys=[k for k in meta if k in RAGCORE_KEYS],
    )


def chunk_from_node(node: BaseNode) -> Chunk:
    """The chunk a node stands for. Nodes without ragcore provenance (from any LlamaIndex
    reader) become a chunk of their own: path from ``file_path``/``file_name``, lines 1..n."""
    m = node.metadata
    text = node.get_content()
    if "chunk_id" not in m or "start_line" not in m:
        path = str(m.get("path") or m.get("file_path") or m.get("file_name") or node.node_id)
        return Chunk(chunk_id=node.node_id, text=text, path=path, doc_hash=str(m.get("doc_hash", "")),
                     kind="text", start_line=1, end_line=max(1, text.count("\n") + 1))
    return Chunk.from_payload(m, text=text)


def candidate_to_node(c: Candidate, score_kind: ScoreKind = "cosine") -> NodeWithScore:
    """A retrieved candidate as a node: ``score`` is the score that ranks it (``score_kind``),
    and the metadata carries all of them with each branch's rank."""
    extra = {
        "cosine": c.dense_score, "bm25": c.sparse_score, "fused": c.fused_score, "score_kind": score_kind,
        "dense_rank": c.dense_rank, "sparse_rank": c.sparse_rank, "fused_rank": c.fused_rank, "rank": c.rank,
        "origin": c.origin,
    }
    if c.doc_rank is not None or c.field_score is not None:  # the retrieval signals that were on
        extra.update(field_score=c.field_score, matched_fields=list(c.matched_fields), doc_score=c.doc_score,
                     doc_rank=c.doc_rank, chunk_rank=c.chunk_rank, doc_title_cosine=c.doc_title_cosine,
                     doc_centroid_cosine=c.doc_centroid_cosine, named_by=list(c.named_by))
    return NodeWithScore(node=chunk_to_node(c.chunk, extra), score=c.score_for(score_kind))


def node_to_candidate(nws: NodeWithScore, rank: int | None = None) -> Candidate:
    """Back to the contract type. A node from another retriever has only its own score: it is
    taken as the cosine (what LlamaIndex's vector retrievers return)."""
    m = nws.node.metadata
    ours = "rank" in m
    return Candidate(
        chunk=chunk_from_node(nws.node),
        dense_score=m.get("cosine") if ours else nws.score,
        sparse_score=m.get("bm25"), fused_score=m.get("fused"),
        dense_rank=m.get("dense_rank"), sparse_rank=m.get("sparse_rank"), fused_rank=m.get("fused_rank"),
        rank=int(m["rank"]) if ours else (rank or 0), origin=m.get("origin", "corpus"),
        field_score=m.get("field_score"), matched_fields=tuple(m.get("matched_fields") or ()),
        doc_score=m.get("doc_score"), doc_rank=m.get("doc_rank"), chunk_rank=m.get("chunk_rank"),
        doc_title_cosine=m.get("doc_title_cosine"), doc_centroid_cosine=m.get("doc_centroid_cosine"),
        named_by=tuple(m.get("named_by") or ()),
    )
