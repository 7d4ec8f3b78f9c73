"""Writes to Qdrant, the store of record: collections, chunk points, metadata, drops. Each runs
inside a write session of the Store's connection and marks what it changed, so the snapshot is
published after it (publisher.py)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import numpy as np

from ragcore.encoders.minilm import DIMENSION, MODEL_NAME
from ragcore.storage.schema import META_COLLECTION, check_collection_name, chunk_context, meta_id, point_id, qdrant_models
from ragcore.types import Chunk


class PointWriter:
    def __init__(self, conn: Any, bm25: Any, dirty: set[str], publisher: Any = None) -> None:
        self._conn = conn
        self._bm25 = bm25
        self._dirty = dirty
        self._publisher = publisher  # None: snapshots off (or a server)

    @property
    def _backend(self) -> Any:
        return self._conn.backend

    def ensure_collection(self, name: str, dimension: int = DIMENSION) -> None:
        check_collection_name(name)
        with self._conn.session() as client:
            if client.collection_exists(name):
                return
            if self._publisher is not None:  # first: readers never see it created and unmarked (Store.first_write_elsewhere)
                self._publisher.files.mark_created(name)
            self._backend.create_chunk_collection(client, name, dimension)
            self._dirty.add(name)

    def write_chunks(self, name: str, chunks: Sequence[Chunk], dense: np.ndarray, doc_chunks: Mapping[str, int],
                     fingerprint: str = "") -> None:
        """Upsert chunks with their dense vectors; sparse vectors are computed on the way in."""
        from ragcore.storage.nodes import chunk_to_node

        nodes = []
        for c, vec in zip(chunks, dense):
            node = chunk_to_node(
                c, {"doc_chunks": doc_chunks[c.path], "fp": fingerprint, "context": chunk_context(c)},
                node_id=point_id(c.chunk_id),
            )
            node.embedding = vec.tolist()
            # a plain LlamaIndex reader of the collection embeds "context\ntext" (see embed_text),
            # as the ingest did; the LLM reads the text alone
            node.excluded_embed_metadata_keys = [k for k in node.metadata if k != "context"]
            node.metadata_template = "{value}"
            node.text_template = "{metadata_str}\n{content}"
            nodes.append(node)
        if nodes:
            with self._conn.session() as client:
                self._dirty.add(name)
                self._backend.write_nodes(client, name, nodes, self._bm25)

    def copy_points(self, old: str, new: str, batch: int = 256) -> int:
        """Every point of ``old`` written to ``new`` as it is; returns how many."""
        with self._conn.session() as client:
            offset: Any = None
            moved = 0
            while True:
                points, offset = client.scroll(old, limit=batch, offset=offset, with_payload=True, with_vectors=True)
                if points:
                    self._dirty.add(new)
                    client.upsert(new, self._backend.as_points(points), wait=True)
                    moved += len(points)
                if offset is None:
                    return moved

    def delete_points(self, name: str, ids: Sequence[str]) -> None:
        qm = qdrant_models()
        with self._conn.session() as client:
            self._dirty.add(name)
            for i in range(0, len(ids), 1000):
                client.delete(name, points_selector=qm.PointIdsList(points=list(ids[i : i + 1000])), wait=True)

    def drop(self, name: str) -> None:
        qm = qdrant_models()
        with self._conn.session() as client:
            if client.collection_exists(name):
                client.delete_collection(name)
            if client.collection_exists(META_COLLECTION):
                client.delete(META_COLLECTION, points_selector=qm.PointIdsList(points=[meta_id(name)]))
            self._dirty.discard(name)
            if self._publisher is not None:
                self._publisher.files.remove(name)

    def write_meta(self, name: str, meta: Mapping[str, Any], stored: Mapping[str, Any]) -> None:
        """Merge ``meta`` into what is stored (``stored``): an ingest must not erase, say, a calibrated bar."""
        qm = qdrant_models()
        with self._conn.session() as client:
            if not client.collection_exists(META_COLLECTION):
                self._backend.create_collection(client, META_COLLECTION,
                                                vectors_config=qm.VectorParams(size=1, distance=qm.Distance.DOT))
            # a collection from before models were recorded was built with the bundled MiniLM
            payload = {"embedding_model": MODEL_NAME, **stored, "name": name, **meta}
            client.upsert(META_COLLECTION, [qm.PointStruct(id=meta_id(name), vector=[1.0], payload=payload)], wait=True)
            if self._publisher is not None:
                self._publisher.after_meta_write(name, payload)
