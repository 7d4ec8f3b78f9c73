"""ragcore's pieces used as LlamaIndex components, outside the engine: the retriever, the cut
post-processors, the citation post-processor and the checker on NodeWithScore / Response.
Real parts: embedded Qdrant in a temp folder, the real ONNX model."""

from __future__ import annotations

from pathlib import Path

import pytest
from llama_index.core.base.response.schema import Response
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

from ragcore import CitationChecker, CitationNumberer, CosineThreshold, SectionDedupe, TopK, apply_cuts, check_answer
from ragcore.citations import clean_markers, evidence_from_nodes, markers_in
from ragcore.storage.nodes import RAGCORE_KEYS, node_to_candidate


CORPUS = {
    "a.md": "# Alpha\n\n## Setup\n\nInstall the alpha package with pip before anything else.\n\n"
            "## Usage\n\nRun alpha with the --fast flag to skip the slow checks.\n",
    "b.md": "# Beta\n\n## Setup\n\nBeta needs a running database; point BETA_DB at it.\n",
    "c.md": "# Gamma\n\nGamma is a cooking note: bake the bread at 220 degrees for thirty minutes.\n",
}


@pytest.fixture(scope="module")
def engine(ingested_engine):
    return ingested_engine(CORPUS, "li")


def test_retriever_returns_scored_nodes(engine) -> None:
    nodes = engine.retriever_for("li").retrieve("How do I install alpha?")
    assert nodes and all(isinstance(n, NodeWithScore) for n in nodes)
    top = nodes[0]
    m = top.node.metadata
    assert m["path"] == "a.md" and m["rank"] == 1 and m["score_kind"] == "rrf"
    assert top.score == pytest.approx(m["fused"]) and 0 < m["cosine"] <= 1 and m["bm25"] > 0
    assert m["dense_rank"] >= 1 and m["sparse_rank"] >= 1 and m["fused_rank"] == 1
    # the bookkeeping reaches neither the LLM nor the embedder
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        assert top.node.get_content(metadata_mode=mode) == top.node.text
    assert set(m) <= set(RAGCORE_KEYS)
    # ranks are in order and the ranking score matches the retrieval mode
    assert [n.node.metadata["rank"] for n in nodes] == list(range(1, len(nodes) + 1))
    dense = engine.retriever_for("li", engine.settings.with_(retrieval_mode="dense")).retrieve("install alpha")
    assert dense[0].node.metadata["score_kind"] == "cosine" and dense[0].score == dense[0].node.metadata["cosine"]


def test_postprocessors_cut_like_the_engine(engine) -> None:
    q = "How do I set up alpha and beta?"
    nodes = engine.retriever_for("li").retrieve(q)
    for top_k, thr, dedupe in ((2, 0.0, True), (5, 0.3, True), (5, 0.0, False), (1, 0.9, True)):
        chain = [CosineThreshold(threshold=thr), *([SectionDedupe()] if dedupe else []), TopK(top_k=top_k)]
        kept = nodes
        for post in chain:
            kept = post.postprocess_nodes(kept)
        cands = [node_to_candidate(n) for n in nodes]
        expected = [c.chunk.chunk_id for c in apply_cuts(cands, top_k=top_k, threshold=thr, dedupe=dedupe) if c.kept]
        assert [n.node.node_id for n in kept] == expected
        assert all(n.node.metadata["cosine"] >= thr for n in kept)


def test_postprocessors_accept_foreign_nodes() -> None:
    nodes = [NodeWithScore(node=TextNode(text=f"text {i}", id_=f"n{i}"), score=s) for i, s in enumerate((0.9, 0.5, 0.2))]
    assert [n.node.node_id for n in CosineThreshold(threshold=0.4).postprocess_nodes(nodes)] == ["n0", "n1"]
    assert len(SectionDedupe().postprocess_nodes(nodes)) == 3  # no provenance: nothing is a duplicate
    assert [n.node.node_id for n in TopK(top_k=1).postprocess_nodes(nodes)] == ["n0"]


def test_numberer_copies_and_hides_its_bookkeeping(engine) -> None:
    nodes = TopK(top_k=3).postprocess_nodes(engine.retriever_for("li").retrieve("alpha setup"))
    before = [dict(n.node.metadata) for n in nodes]
    first = CitationNumberer().postprocess_nodes(nodes)
    second = CitationNumberer(start=10).postprocess_nodes(nodes)
    assert [n.node.metadata["citation_n"] for n in first] == [1, 2, 3]
    assert [n.node.metadata["citation_n"] for n in second] == [10, 11, 12]  # independent of the first call
    assert [dict(n.node.metadata) for n in nodes] == before  # the given nodes are untouched
    llm_text = first[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert llm_text.startswith("[1] a.md:") and llm_text.endswith(first[0].node.text)
    assert "citation_n" not in llm_text and "chunk_id" not in llm_text
    assert first[0].node.get_content(metadata_mode=MetadataMode.EMBED) == first[0].node.text


def test_checker_on_nodes_and_response(engine) -> None:
    nodes = CitationNumberer().postprocess_nodes(TopK(top_k=3).postprocess_nodes(
        engine.retriever_for("li").retrieve("How do I install alpha?")))
    text = "Install the alpha package with pip before anything else [1]. It is written in Rust [4]."
    checked = check_answer(text, nodes)
    assert [c.n for c in checked.citations] == [1] and checked.citations[0].path == "a.md"
    assert checked.citations[0].start_line == checked.citations[0].end_line == 5
    assert checked.validation.stripped == ("[4]",) and checked.validation.uncited
    resp = CitationChecker().check_response(Response(response=text, source_nodes=nodes, metadata={"kept": 1}))
    verdict = resp.metadata["citation_check"]
    assert resp.metadata["kept"] == 1 and verdict["ok"] is False and verdict["citations"][0]["n"] == 1
    assert "[4]" not in resp.response


def test_checker_on_unnumbered_foreign_nodes() -> None:
    """Nodes from any LlamaIndex retriever: numbered by position, path from file_name."""
    nodes = [NodeWithScore(node=TextNode(text="Paris is the capital of France.", metadata={"file_name": "fr.txt"}), score=0.8),
             NodeWithScore(node=TextNode(text="Berlin is the capital of Germany.", metadata={"file_name": "de.txt"}), score=0.7)]
    ev = evidence_from_nodes(nodes)
    assert [(e.n, e.chunk.path, e.dense_score) for e in ev] == [(1, "fr.txt", 0.8), (2, "de.txt", 0.7)]
    checked = check_answer("Berlin is the capital of Germany [2].", nodes)
    assert checked.citations[0].path == "de.txt" and not checked.validation.unsupported


@pytest.mark.parametrize("text", [
    "Use `offsets[12]` to read it [1].",
    "The buffer buf[3] holds it [1].",
    "Run:\n\n```python\nx = values[2]\ny = [1]\n```\n\nThat prints it [1].",
])
def test_markers_leave_code_alone(text: str) -> None:
    clean, stripped = clean_markers(text, {1})
    assert clean == text and stripped == ()
    assert markers_in(text) == [1]


def test_malformed_markers_are_stripped_and_recorded() -> None:
    clean, stripped = clean_markers("A [-1]. B [0]. C [3-1]. D [1-]. E [2]. F [1, 2].", {1, 2})
    assert clean == "A. B. C. D. E [2]. F [1, 2]."
    assert stripped == ("[-1]", "[0]", "[3-1]", "[1-]")


def test_the_engine_numbers_evidence_as_the_citation_post_processor_does(engine) -> None:
    """The question path builds the evidence [1..n] directly (no nodes, no llama_index import);
    through CitationNumberer on the same candidates' nodes it comes out the same."""
    from ragcore.citations import evidence_from_candidates
    from ragcore.storage.nodes import candidate_to_node
    from ragcore.types import to_jsonable

    for mode, kind in (("hybrid", "rrf"), ("dense", "cosine"), ("sparse", "bm25")):
        res = engine.retrieve("alpha setup", settings=engine.settings.with_(retrieval_mode=mode), collection="li")
        direct = evidence_from_candidates(res.candidates, kind, start=3)
        nodes = [candidate_to_node(c, kind) for c in res.candidates if c.kept]
        through = evidence_from_nodes(CitationNumberer(start=3).postprocess_nodes(nodes), origin="corpus")
        assert direct and to_jsonable(direct) == to_jsonable(through), mode
