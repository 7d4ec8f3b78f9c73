"""The chunker as a LlamaIndex NodeParser: same chunks as chunk_document, LlamaIndex semantics
(relationships, include_metadata, prev/next, char offsets), and no line-provenance bloat."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llama_index.core import SimpleDirectoryReader
from llama_index.core.ingestion import IngestionPipeline
from llama_index.core.schema import Document, MetadataMode, NodeRelationship, TextNode

from ragcore.settings.config import RagcoreSettings
from ragcore.ingest.chunking import chunk_document, normalize_ws
from ragcore.ingest.read.loaders import load_bytes, load_file
from ragcore.llamaindex.node_parser import (
    LINES_KEY,
    LineAwareNodeParser,
    document_from_loaded,
    loaded_from_document,
)
from ragcore.storage.nodes import RAGCORE_KEYS, chunk_from_node
from ragcore.types import LoadedDocument
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "loaders"
FIXTURES = [
    "notes.txt", "guide.md", "doc.rst", "engine.py", "widget.js", "tricky.html", "django-tutorial01.html",
]  # fmt: skip
SIZES = [(180, 30), (60, 15), (25, 0)]


def load(name: str) -> LoadedDocument:
    return load_file(DATA / name, DATA, max_bytes=20_000_000)


def parse(docs: list[Document], **kwargs) -> list[TextNode]:
    nodes = LineAwareNodeParser(**kwargs).get_nodes_from_documents(docs)
    assert all(isinstance(n, TextNode) for n in nodes)
    return nodes  # type: ignore[return-value]


@pytest.mark.parametrize("size,overlap", SIZES)
@pytest.mark.parametrize("name", FIXTURES)
def test_nodes_are_exactly_chunk_documents_chunks(name: str, size: int, overlap: int) -> None:
    doc = load(name)
    nodes = parse([document_from_loaded(doc)], chunk_size=size, chunk_overlap=overlap)
    chunks = chunk_document(doc, chunk_size=size, chunk_overlap=overlap)
    assert [chunk_from_node(n) for n in nodes] == chunks
    assert [n.node_id for n in nodes] == [c.chunk_id for c in chunks]


def test_pdf_pages_survive_the_document_round_trip(tmp_path: Path) -> None:
    from tests.unit.ingest.test_chunking import make_pdf

    page1 = [f"page one line {i} on retrieval" for i in range(30)]
    make_pdf(tmp_path / "p.pdf", [page1, ["page two text"]])
    doc = load_file(tmp_path / "p.pdf", tmp_path, max_bytes=20_000_000)
    assert loaded_from_document(document_from_loaded(doc)) == doc
    nodes = parse([document_from_loaded(doc)], chunk_size=40, chunk_overlap=5)
    assert [chunk_from_node(n) for n in nodes] == chunk_document(doc, chunk_size=40, chunk_overlap=5)
    assert {n.metadata["page"] for n in nodes} == {1, 2}


def test_node_metadata_relationships_and_offsets() -> None:
    doc = load("guide.md")
    document = document_from_loaded(doc)
    nodes = parse([document], chunk_size=40, chunk_overlap=5)
    assert len(nodes) >= 3
    for i, node in enumerate(nodes):
        meta = node.metadata
        assert {"path", "start_line", "end_line", "section", "anchor", "page"} <= set(meta)
        assert meta["path"] == "guide.md" and meta["ordinal"] == i
        # the text is the document's text at the node's offsets, as LlamaIndex defines them
        assert document.text[node.start_char_idx : node.end_char_idx] == node.text
        source = node.relationships[NodeRelationship.SOURCE]
        assert source.node_id == node.ref_doc_id == "guide.md" and source.hash == document.hash
        assert (NodeRelationship.PREVIOUS in node.relationships) == (i > 0)
        assert (NodeRelationship.NEXT in node.relationships) == (i < len(nodes) - 1)
    assert nodes[1].prev_node.node_id == nodes[0].node_id
    assert nodes[0].next_node.node_id == nodes[1].node_id


def test_html_offsets_cover_the_chunk_even_with_collapsed_blank_lines() -> None:
    doc = load("django-tutorial01.html")
    document = document_from_loaded(doc)
    for node in parse([document]):
        region = document.text[node.start_char_idx : node.end_char_idx]
        assert normalize_ws(region) == normalize_ws(node.text)


def test_line_provenance_stays_out_of_nodes_and_model_text() -> None:
    doc = load("django-tutorial01.html")
    document = document_from_loaded(doc)
    assert LINES_KEY in document.metadata
    # the Document itself does not show its bookkeeping to an LLM or embedder either
    for mode in (MetadataMode.LLM, MetadataMode.EMBED):
        assert document.get_content(mode) == document.text
    nodes = parse([document])
    for node in nodes:
        assert LINES_KEY not in node.metadata
        stored = node.model_dump_json()  # what a docstore / vector store payload would hold
        assert LINES_KEY not in stored and '"runs"' not in stored
        assert len(stored) < 3 * len(node.text.encode()) + 4000
        for mode in (MetadataMode.LLM, MetadataMode.EMBED):
            assert node.get_content(mode) == node.text  # ragcore's keys are excluded
        assert set(node.metadata) - set(RAGCORE_KEYS) == set()


def test_include_metadata_inherits_the_documents_user_metadata() -> None:
    document = document_from_loaded(load("notes.txt"))
    document.metadata["collection"] = "demo"
    document.metadata["start_line"] = 999  # a node's own (ragcore) keys win over the document's
    with_meta = parse([document], chunk_size=40, chunk_overlap=5)
    assert all(n.metadata["collection"] == "demo" and n.metadata["start_line"] != 999 for n in with_meta)
    assert "collection" in with_meta[0].get_content(MetadataMode.LLM)  # user metadata: LlamaIndex rules
    without = parse([document], chunk_size=40, chunk_overlap=5, include_metadata=False)
    assert all("collection" not in n.metadata for n in without)
    assert [n.text for n in without] == [n.text for n in with_meta]


def test_prev_next_links_can_be_switched_off_and_never_cross_documents() -> None:
    docs = [document_from_loaded(load("notes.txt")), document_from_loaded(load("guide.md"))]
    nodes = parse(docs, chunk_size=40, chunk_overlap=5)
    for a, b in zip(nodes, nodes[1:]):
        linked = a.next_node is not None and a.next_node.node_id == b.node_id
        assert linked == (a.ref_doc_id == b.ref_doc_id)
    bare = parse(docs, chunk_size=40, chunk_overlap=5, include_prev_next_rel=False)
    assert all(n.prev_node is None and n.next_node is None for n in bare)


def test_plain_llamaindex_documents_from_simple_directory_reader(tmp_path: Path) -> None:
    lines = [f"Line {i}: the analyst reads chunk boundaries and citations." for i in range(1, 61)]
    (tmp_path / "notes.txt").write_text("\n".join(lines) + "\n")
    docs = SimpleDirectoryReader(input_dir=str(tmp_path)).load_data()
    nodes = parse(docs, chunk_size=50, chunk_overlap=10)
    assert len(nodes) > 3
    for node in nodes:
        chunk = chunk_from_node(node)
        assert chunk.path == docs[0].metadata["file_path"]
        # lines numbered from the text
        assert chunk.text == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        # inherited; the LLM sees what the reader lets it see (file_path), never ragcore's keys
        assert node.metadata["file_name"] == "notes.txt"
        header = node.get_content(MetadataMode.LLM).replace(node.text, "")
        assert "file_path" in header and "file_name" not in header and "start_line" not in header
        assert docs[0].text[node.start_char_idx : node.end_char_idx] == node.text
    assert nodes[-1].metadata["end_line"] == 60


def test_plain_documents_path_page_and_hash_from_metadata() -> None:
    text = "First page line one.\r\nSecond line.\n"
    page = Document(text=text, metadata={"file_name": "report.pdf", "page_label": "7"})
    (node,) = parse([page])
    chunk = chunk_from_node(node)
    assert (chunk.path, chunk.page, chunk.start_line, chunk.end_line) == ("report.pdf", 7, 1, 2)
    assert chunk.text == "First page line one.\r\nSecond line."  # the document's text, as is
    bare = Document(text="just text", id_="doc-1")
    assert chunk_from_node(parse([bare])[0]).path == "doc-1"


def test_a_changed_text_no_longer_matches_its_provenance() -> None:
    document = document_from_loaded(load("notes.txt"))
    edited = Document(
        text=document.text + "\nan extra line", metadata=document.metadata, id_=document.id_
    )
    with pytest.raises(ValueError, match="no longer matches"):
        parse([edited])


def test_the_cap_holds_through_the_parser() -> None:
    blob = json.dumps([{"id": i, "v": [i, i * 2]} for i in range(20_000)], separators=(",", ":"))
    doc = load_bytes(blob.encode(), "data.json")
    nodes = parse([document_from_loaded(doc)], max_chunk_chars=1000)
    assert len(nodes) > 100 and all(len(n.text) <= 1000 for n in nodes)
    assert all(n.metadata["start_line"] == n.metadata["end_line"] == 1 for n in nodes)


def test_parameters_settings_and_serialisation() -> None:
    with pytest.raises(ValueError):
        LineAwareNodeParser(chunk_size=10, chunk_overlap=10)
    with pytest.raises(ValueError):
        LineAwareNodeParser(max_chunk_chars=0)
    settings = RagcoreSettings(chunk_size=90, chunk_overlap=9, max_chunk_chars=2000)
    parser = LineAwareNodeParser.from_settings(settings)
    assert (parser.chunk_size, parser.chunk_overlap, parser.max_chunk_chars) == (90, 9, 2000)
    defaults = LineAwareNodeParser()
    assert (defaults.chunk_size, defaults.chunk_overlap, defaults.max_chunk_chars) == (180, 30, 4000)
    assert parser.to_dict()["class_name"] == "LineAwareNodeParser"


def test_custom_id_func_is_honoured() -> None:
    nodes = parse([document_from_loaded(load("notes.txt"))], chunk_size=40, chunk_overlap=5,
                  id_func=lambda i, doc: f"{doc.node_id}#{i}")  # fmt: skip
    assert [n.node_id for n in nodes] == [f"notes.txt#{i}" for i in range(len(nodes))]


def test_runs_in_a_llamaindex_ingestion_pipeline() -> None:
    doc = load("guide.md")
    pipeline = IngestionPipeline(transformations=[LineAwareNodeParser(chunk_size=40, chunk_overlap=5)])
    nodes = pipeline.run(documents=[document_from_loaded(doc)])
    assert [chunk_from_node(n) for n in nodes] == chunk_document(doc, chunk_size=40, chunk_overlap=5)
