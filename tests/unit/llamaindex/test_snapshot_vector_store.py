"""SnapshotVectorStore: the embedded default's query engine as a LlamaIndex vector store, used
through VectorStoreIndex as a LlamaIndex user would. Real parts: embedded Qdrant in a temp
folder, the query snapshot, the real ONNX model."""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.schema import Document
from llama_index.core.vector_stores.types import (
    FilterCondition,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

from ragcore.llamaindex.embedding import OnnxEmbedding
from ragcore.llamaindex.vector_store import SnapshotVectorStore
from ragcore.storage.store import point_id
from tests.conftest import write_corpus

CORPUS = {
    "a.md": "# Alpha\n\n## Setup\n\nInstall the alpha package with pip before anything else.\n\n"
            "## Usage\n\nRun alpha with the --fast flag to skip the slow checks.\n",
    "b.md": "# Beta\n\n## Setup\n\nBeta needs a running database; point BETA_DB at it.\n",
    "c.md": "# Gamma\n\nGamma is a cooking note: bake the bread at 220 degrees for thirty minutes.\n",
}
Q = "How do I install alpha?"


@pytest.fixture()
def engine(tmp_path: Path, make_engine):
    e = make_engine(collection="vs")
    e.ingest([write_corpus(tmp_path / "corpus", CORPUS)], "vs", calibrate=False)
    e.store.close()
    return e


def _index(engine) -> VectorStoreIndex:
    vs = SnapshotVectorStore(engine.store, "vs", engine.settings)
    return VectorStoreIndex.from_vector_store(vs, embed_model=OnnxEmbedding(engine.encoder))


def test_dense_query_through_vector_store_index_matches_the_engine_and_never_opens_qdrant(engine) -> None:
    got = _index(engine).as_retriever(similarity_top_k=3).retrieve(Q)
    assert not engine.store.opened  # served from the snapshot
    want = engine.hybrid_search.pool("vs", Q, engine.settings.with_(retrieval_mode="dense", doc_decay=0.0, named_weight=0.0))
    assert [n.node.metadata["chunk_id"] for n in got] == [c.chunk.chunk_id for c in want.candidates[:3]]
    assert [n.score for n in got] == pytest.approx([c.dense_score for c in want.candidates[:3]], abs=1e-6)
    top = got[0].node
    assert top.metadata["path"] == "a.md" and "Install the alpha package" in top.get_content()
    assert top.node_id == point_id(top.metadata["chunk_id"])  # the point's id in Qdrant
    assert top.metadata["score_kind"] == "cosine" and top.metadata["bm25"] is not None  # every score kept


def test_hybrid_and_sparse_modes_rank_as_ragcore_fuses(engine) -> None:
    idx = _index(engine)
    hybrid = idx.as_retriever(similarity_top_k=4, vector_store_query_mode="hybrid").retrieve(Q)
    want = engine.hybrid_search.pool("vs", Q, engine.settings.with_(retrieval_mode="hybrid", fusion="rrf", doc_decay=0.0,
                                                                named_weight=0.0))
    assert [n.node.metadata["chunk_id"] for n in hybrid] == [c.chunk.chunk_id for c in want.candidates[:4]]
    assert hybrid[0].node.metadata["score_kind"] == "rrf"
    sparse = idx.as_retriever(similarity_top_k=2, vector_store_query_mode="sparse").retrieve("BETA_DB database")
    assert sparse[0].node.metadata["path"] == "b.md" and sparse[0].score == sparse[0].node.metadata["bm25"] > 0


def test_filters_node_ids_and_doc_ids(engine) -> None:
    vs = SnapshotVectorStore(engine.store, "vs", engine.settings)
    q = engine.encoder.encode([Q])[0].tolist()
    only_b = vs.query(VectorStoreQuery(query_embedding=q, similarity_top_k=5,
                                       filters=MetadataFilters(filters=[MetadataFilter(key="path", value="b.md")])))
    assert only_b.nodes and {n.metadata["path"] for n in only_b.nodes} == {"b.md"}
    either = vs.query(VectorStoreQuery(query_embedding=q, similarity_top_k=5, filters=MetadataFilters(
        filters=[MetadataFilter(key="path", value="b.md"), MetadataFilter(key="path", value="c.md")],
        condition=FilterCondition.OR)))
    assert {n.metadata["path"] for n in either.nodes} == {"b.md", "c.md"}
    not_a = vs.query(VectorStoreQuery(query_embedding=q, similarity_top_k=5, filters=MetadataFilters(
        filters=[MetadataFilter(key="path", value=["a.md"], operator="nin")])))
    assert "a.md" not in {n.metadata["path"] for n in not_a.nodes}
    by_doc = vs.query(VectorStoreQuery(query_embedding=q, similarity_top_k=5, doc_ids=["c.md"]))
    assert {n.metadata["path"] for n in by_doc.nodes} == {"c.md"}
    one = only_b.ids[0]
    assert vs.query(VectorStoreQuery(query_embedding=q, similarity_top_k=5, node_ids=[one])).ids == [one]


def test_unsupported_queries_say_what_is_supported(engine) -> None:
    vs = SnapshotVectorStore(engine.store, "vs", engine.settings)
    q = engine.encoder.encode([Q])[0].tolist()
    with pytest.raises(ValueError, match="not supported: use default"):
        vs.query(VectorStoreQuery(query_embedding=q, mode=VectorStoreQueryMode.MMR))
    with pytest.raises(ValueError, match="needs query_str"):
        vs.query(VectorStoreQuery(query_embedding=q, mode=VectorStoreQueryMode.HYBRID))
    with pytest.raises(ValueError, match="needs query_embedding"):
        vs.query(VectorStoreQuery(query_str=Q))
    with pytest.raises(ValueError, match="not supported: use ==, !=, in, nin"):
        vs.query(VectorStoreQuery(query_embedding=q, filters=MetadataFilters(
            filters=[MetadataFilter(key="start_line", value=3, operator=">")])))


def test_add_and_delete_write_through_qdrant_and_the_next_query_sees_them(engine) -> None:
    vs = SnapshotVectorStore(engine.store, "vs", engine.settings)
    doc = Document(text="Delta is a telescope mount. Align the delta mount with the pole star before use.",
                   metadata={"file_path": "notes/delta.txt"})
    index = VectorStoreIndex.from_documents(
        [doc], storage_context=StorageContext.from_defaults(vector_store=vs), embed_model=OnnxEmbedding(engine.encoder),
        transformations=[SentenceSplitter(chunk_size=64, chunk_overlap=0)])
    got = index.as_retriever(similarity_top_k=1).retrieve("How do I align the telescope mount?")
    assert got[0].node.metadata["path"] == "notes/delta.txt" and "pole star" in got[0].node.get_content()
    assert engine.store.count("vs") == 5  # 4 chunks of a.md-c.md + the new one
    vs.delete("notes/delta.txt")
    after = index.as_retriever(similarity_top_k=5).retrieve("How do I align the telescope mount?")
    assert "notes/delta.txt" not in {n.node.metadata["path"] for n in after}


def test_add_needs_embeddings(engine) -> None:
    from llama_index.core.schema import TextNode

    vs = SnapshotVectorStore(engine.store, "vs", engine.settings)
    with pytest.raises(ValueError, match="no embedding"):
        vs.add([TextNode(text="no vector")])
