"""The chunker as a LlamaIndex ``NodeParser``: Documents in, ragcore's TextNodes out.

:class:`LineAwareNodeParser` runs the same core as :func:`ragcore.ingest.chunking.chunk_document`
(:func:`~ragcore.ingest.chunking.locate_chunks`) and turns each chunk into a TextNode with
:func:`ragcore.storage.nodes.chunk_to_node`, so its nodes carry path, line span, section, anchor and
page under the shared metadata keys, none of which reaches the LLM or the embedder.

Two kinds of input:

* a Document from :func:`document_from_loaded`: it carries ragcore's line provenance (each
  text line's source line number, section path, anchor and page) in one metadata entry,
  :data:`LINES_KEY`, stored as runs of consecutive lines, so the parser reproduces
  ``chunk_document``'s chunks exactly (same ids). That entry is bookkeeping for this parser:
  it is never copied into a node's metadata or relationships (it would swell every stored
  payload) and is excluded from the LLM and embed text of the Document itself;
* any other LlamaIndex Document (``SimpleDirectoryReader`` …): its text's lines are numbered
  from 1, the path comes from its ``path``/``file_path``/``file_name`` metadata (the order
  :func:`ragcore.storage.nodes.chunk_from_node` reads), a numeric ``page_label``/``page`` becomes the
  page, and the text is taken as is (no "\\r" stripping), so every node's text is
  ``document.text[start_char_idx:end_char_idx]``.
"""

from __future__ import annotations

import hashlib
from typing import Any, Iterator, Mapping, Sequence

from llama_index.core.bridge.pydantic import Field, model_validator
from llama_index.core.node_parser import NodeParser
from llama_index.core.node_parser.node_utils import default_id_func
from llama_index.core.schema import (
    BaseNode,
    Document,
    MetadataMode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.utils import get_tqdm_iterable

from ragcore.settings.config import RagcoreSettings
from ragcore.ingest.chunking import locate_chunks
from ragcore.storage.nodes import chunk_to_node
from ragcore.types import LoadedDocument, SourceLine

__all__ = ["LINES_KEY", "LineAwareNodeParser", "document_from_loaded", "loaded_from_document"]

# The Document metadata entry that carries line provenance (never copied to nodes).
LINES_KEY = "ragcore_lines"
_FORMAT = 1
# Document-level keys document_from_loaded writes; like LINES_KEY, not for the LLM or embedder.
_DOC_KEYS = ("path", "kind", "doc_hash", "title", LINES_KEY)


# --------------------------------------------------------------------------- documents


def document_from_loaded(doc: LoadedDocument) -> Document:
    """A LlamaIndex Document for ``doc``: text = its lines joined with "\\n", id = its path,
    metadata = path, kind, doc_hash, title and the line provenance (:data:`LINES_KEY`)."""
    texts = [line.text for line in doc.lines]
    if any("\n" in t for t in texts):
        raise ValueError(f"{doc.path}: a SourceLine's text contains a newline")
    metadata = {
        "path": doc.path,
        "kind": doc.kind,
        "doc_hash": doc.doc_hash,
        "title": doc.title,
        LINES_KEY: _encode_lines(doc.lines),
    }
    return Document(
        id_=doc.path,
        text="\n".join(texts),
        metadata=metadata,
        excluded_embed_metadata_keys=list(_DOC_KEYS),
        excluded_llm_metadata_keys=list(_DOC_KEYS),
    )


def _encode_lines(lines: Sequence[SourceLine]) -> dict[str, Any]:
    """Runs of consecutive lines that share section, anchor and page: a text file with ten
    sections is ten runs, whatever its length. JSON-safe, so any docstore can keep it."""
    sections: dict[tuple[str, ...], int] = {}
    runs: list[list[Any]] = []
    for line in lines:
        sec = sections.setdefault(line.section, len(sections))
        last = runs[-1] if runs else None
        if last and last[0] + last[1] == line.no and last[2:] == [sec, line.anchor, line.page]:
            last[1] += 1
        else:
            runs.append([line.no, 1, sec, line.anchor, line.page])
    return {"format": _FORMAT, "sections": [list(s) for s in sections], "runs": runs}


def _decode_lines(text: str, provenance: Mapping[str, Any], path: str) -> tuple[SourceLine, ...]:
    if provenance.get("format") != _FORMAT:
        raise ValueError(f"{path}: unknown {LINES_KEY} format {provenance.get('format')!r}")
    runs = provenance["runs"]
    sections = [tuple(s) for s in provenance["sections"]]
    texts = text.split("\n") if runs else []
    if sum(run[1] for run in runs) != len(texts):
        # Mis-numbered lines would make every citation point at the wrong place.
        raise ValueError(f"{path}: the text no longer matches its line provenance ({LINES_KEY})")
    out: list[SourceLine] = []
    it = iter(texts)
    for no, count, sec, anchor, page in runs:
        section = sections[sec]
        out.extend(SourceLine(no + k, next(it), section, anchor, page) for k in range(count))
    return tuple(out)


def loaded_from_document(node: BaseNode) -> LoadedDocument:
    """The ragcore document a LlamaIndex Document (or any text node) stands for."""
    meta = node.metadata
    text = node.get_content(metadata_mode=MetadataMode.NONE)
    provenance = meta.get(LINES_KEY)
    if provenance is not None:
        path = str(meta["path"])
        return LoadedDocument(
            path=path, kind=meta["kind"], doc_hash=str(meta["doc_hash"]),
            lines=_decode_lines(text, provenance, path), title=meta.get("title"),
        )  # fmt: skip
    path = str(meta.get("path") or meta.get("file_path") or meta.get("file_name") or node.node_id)
    page = _page_of(meta)
    texts = text.split("\n")
    if texts[-1] == "":
        texts.pop()  # the newline that ends the last line does not start a new one
    title = meta.get("title")
    return LoadedDocument(
        path=path, kind="text",
        doc_hash=str(meta.get("doc_hash") or hashlib.sha256(text.encode("utf-8")).hexdigest()),
        lines=tuple(SourceLine(no, t, page=page) for no, t in enumerate(texts, 1)),
        title=title if isinstance(title, str) else None,
    )  # fmt: skip


def _page_of(meta: Mapping[str, Any]) -> int | None:
    """LlamaIndex's PDF readers make one Document per page with a ``page_label``."""
    for key in ("page", "page_label"):
        value = str(meta.get(key, "")).strip()
        if value.isdigit() and int(value) > 0:
            return int(value)
    return None


def _public(metadata: Mapping[str, Any]) -> dict[str, Any]:
    """A Document's metadata as nodes may inherit it: without the line provenance."""
    return {k: v for k, v in metadata.items() if k != LINES_KEY}


def _source_info(parent: BaseNode | RelatedNodeInfo) -> RelatedNodeInfo:
    """``as_related_node_info`` without the line provenance (it would ride in every node)."""
    info = parent if isinstance(parent, RelatedNodeInfo) else parent.as_related_node_info()
    return info.model_copy(update={"metadata": _public(info.metadata)})


# --------------------------------------------------------------------------- the parser


class LineAwareNodeParser(NodeParser):
    """Line-, section- and page-aware chunks as TextNodes (see the module docstring).

    ``include_metadata``: nodes inherit the document's metadata (not the line provenance);
    ragcore's own keys win. ``include_prev_next_rel``: neighbouring nodes of one document are
    linked PREVIOUS/NEXT. Node ids are chunk ids (stable across runs, which lets a stored
    collection skip re-embedding) unless a custom ``id_func`` is given.
    """

    chunk_size: int = Field(
        default=RagcoreSettings.chunk_size, gt=0, description="Words per chunk, at most."
    )
    chunk_overlap: int = Field(
        default=RagcoreSettings.chunk_overlap, ge=0,
        description="Words (whole lines' worth) shared by neighbouring chunks of one section.",
    )  # fmt: skip
    max_chunk_chars: int = Field(
        default=RagcoreSettings.max_chunk_chars, gt=0,
        description="Hard cap on one chunk's text in characters, whatever the file's shape.",
    )  # fmt: skip

    @model_validator(mode="after")
    def _overlap_below_size(self) -> LineAwareNodeParser:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be less than "
                f"chunk_size ({self.chunk_size})"
            )
        return self

    @classmethod
    def class_name(cls) -> str:
        return "LineAwareNodeParser"

    @classmethod
    def from_settings(cls, settings: RagcoreSettings, **kwargs: Any) -> LineAwareNodeParser:
        return cls(
            chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap,
            max_chunk_chars=settings.max_chunk_chars, **kwargs,
        )  # fmt: skip

    def _parse_nodes(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        out: list[BaseNode] = []
        for parent in get_tqdm_iterable(nodes, show_progress, "Parsing nodes"):
            out.extend(self._nodes_of(parent))
        return out

    def _nodes_of(self, parent: BaseNode) -> Iterator[TextNode]:
        doc = loaded_from_document(parent)
        located = locate_chunks(
            doc, chunk_size=self.chunk_size, chunk_overlap=self.chunk_overlap,
            max_chunk_chars=self.max_chunk_chars,
        )  # fmt: skip
        source = _source_info(parent)
        custom_ids = self.id_func is not default_id_func
        for i, lc in enumerate(located):
            node = chunk_to_node(lc.chunk, node_id=self.id_func(i, parent) if custom_ids else None)
            node.start_char_idx, node.end_char_idx = lc.start_char, lc.end_char
            node.relationships[NodeRelationship.SOURCE] = source
            # What the document keeps from the LLM and the embedder, its nodes keep too.
            for attr in ("excluded_embed_metadata_keys", "excluded_llm_metadata_keys"):
                own = getattr(node, attr)
                own.extend(k for k in getattr(parent, attr) if k not in own and k != LINES_KEY)
            node.metadata_separator = parent.metadata_separator
            node.metadata_template = parent.metadata_template
            node.text_template = getattr(parent, "text_template", node.text_template)
            yield node

    def _postprocess_parsed_nodes(
        self, nodes: list[BaseNode], parent_doc_map: dict[str, Document]
    ) -> list[BaseNode]:
        """LlamaIndex's, minus the line provenance, and with our exact char offsets (the base
        searches each node's text in the document: wrong for collapsed HTML blank lines, and
        a rescan per node on large documents)."""
        for node in nodes:
            parent = parent_doc_map.get(node.ref_doc_id or "")
            if parent is None:
                continue
            if parent.source_node is not None:  # a document cut from another: cite that one
                node.relationships[NodeRelationship.SOURCE] = _source_info(parent.source_node)
            if self.include_metadata:
                node.metadata = {**_public(parent.metadata), **node.metadata}
        # The rest (the source node's metadata, PREVIOUS/NEXT links) is the base's.
        return super()._postprocess_parsed_nodes(nodes, {})
