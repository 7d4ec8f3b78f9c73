"""Qdrant Edge, the embedded store of record (``edge_client.py``), as a Store backend.

Each collection is one Edge shard under ``settings.edge_path``; its ``stamp`` file is replaced
before every write, so a snapshot stamped with it stops matching from a writer's first operation
on. Opening a folder that an older version wrote in qdrant-client's local mode copies it in first,
once (``edge_migrate.py``); the collections copied are named in ``copied`` so the Store publishes
their snapshots, as after any other write.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

from ragcore.encoders.minilm import DIMENSION
from ragcore.settings.config import RagcoreSettings
from ragcore.storage import locking
from ragcore.storage.edge_client import EdgeBusy, EdgeClient, EdgePoint, collection_names
from ragcore.storage.schema import DENSE, RESERVED_PREFIX, SPARSE, StoreError, qdrant_models


class EdgeBackend:
    kind = "edge"

    def __init__(self, settings: RagcoreSettings) -> None:
        self.settings = settings
        self.path: Path = settings.edge_path
        self.copied: tuple[str, ...] = ()

    def migration_pending(self) -> bool:
        from ragcore.storage.edge_migrate import migration_pending

        return migration_pending(self.settings.qdrant_path, self.path)

    def open(self, progress: Any = None) -> EdgeClient:
        from ragcore.storage.edge_migrate import migrate_local

        until = locking.deadline()
        while True:
            locking.wait_for_folder_lock(self.path, until)
            try:
                client = EdgeClient(self.path)
            except EdgeBusy as exc:  # taken between the wait and the open: wait again
                if time.monotonic() >= until:
                    raise StoreError(locking.busy_message(self.path)) from exc
                continue
            try:
                copied = migrate_local(self.settings.qdrant_path, client, progress)
            except BaseException:
                client.close()
                raise
            self.copied = tuple(n for n in copied if not n.startswith(RESERVED_PREFIX))
            return client

    def stamp_file(self, name: str) -> Path:
        return self.path / name / "stamp"  # replaced before every write (edge_client.py)

    def settle(self, client: EdgeClient, name: str) -> None:
        client.flush(name)

    def release(self, client: EdgeClient) -> None:
        client.release()

    def names_on_disk(self) -> list[str] | None:
        # local-mode collections not yet copied over: the client's open migrates them
        return None if self.migration_pending() else collection_names(self.path)

    def create_collection(self, client: EdgeClient, name: str, **config: Any) -> None:
        client.create_collection(name, **config)

    def create_chunk_collection(self, client: EdgeClient, name: str, dimension: int = DIMENSION) -> None:
        qm = qdrant_models()
        client.create_collection(
            name, vectors_config={DENSE: qm.VectorParams(size=dimension, distance=qm.Distance.COSINE)},
            sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
        )

    def write_nodes(self, client: EdgeClient, name: str, nodes: Sequence[Any], bm25: Any) -> None:
        client.upsert(name, edge_points(nodes, bm25))

    def as_points(self, points: Sequence[Any]) -> Sequence[Any]:
        return points  # Edge takes scrolled records as they are

    def vector_store(self, client: Any, name: str, bm25: Any) -> Any:
        raise StoreError("LlamaIndex's QdrantVectorStore cannot open Qdrant Edge, the embedded store: use "
                         "Engine.vector_store(name) or SnapshotVectorStore(store, name)")


def edge_points(nodes: Sequence[Any], bm25: Any) -> list[EdgePoint]:
    """The points ``QdrantVectorStore`` would write for ``nodes``: the same payload
    (``node_to_metadata_dict``), dense vector and BM25 of the node's embedding text."""
    from llama_index.core.schema import MetadataMode
    from llama_index.core.vector_stores.utils import node_to_metadata_dict

    out = []
    for node in nodes:
        sv = bm25.encode_document(node.get_content(metadata_mode=MetadataMode.EMBED))
        vector = {DENSE: node.get_embedding(), SPARSE: sv}
        out.append(EdgePoint(node.node_id, vector, node_to_metadata_dict(node, remove_text=False, flat_metadata=False)))
    return out
