"""qdrant-client as a Store backend: local mode (``embedded_engine="local"``, under
``settings.qdrant_path``) or a Qdrant server (``settings.qdrant_url``).

Points are written through LlamaIndex's ``QdrantVectorStore`` (hybrid, ragcore's BM25), so the
same collection works with a plain LlamaIndex ``VectorStoreIndex``. Local mode keeps each
collection in a SQLite file: it is put in write-ahead-log mode (``local_storage.py``) and its
stamp covers the file and the log. Nothing is stamped on a server (no snapshots there).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Sequence

from ragcore.encoders.minilm import DIMENSION
from ragcore.settings.config import RagcoreSettings
from ragcore.storage import locking
from ragcore.storage.local_storage import checkpoint, use_write_ahead_log
from ragcore.storage.schema import DENSE, SPARSE, StoreError, qdrant_models


class QdrantBackend:
    def __init__(self, settings: RagcoreSettings) -> None:
        self.settings = settings
        self.kind = "server" if settings.qdrant_url else "local"
        self.path: Path = settings.store_path
        self.copied: tuple[str, ...] = ()

    def migration_pending(self) -> bool:
        return False

    def open(self, progress: Any = None) -> Any:
        from qdrant_client import QdrantClient

        s = self.settings
        if s.qdrant_url:
            return QdrantClient(url=s.qdrant_url, api_key=s.qdrant_api_key, timeout=30)
        path = s.qdrant_path
        path.mkdir(parents=True, exist_ok=True)
        until = locking.deadline()
        while True:
            # Embedded Qdrant takes its folder lock only after loading every collection, so
            # retrying the client itself would reload the store each time: wait on the lock.
            locking.wait_for_folder_lock(path, until)
            try:
                client = QdrantClient(path=str(path))
            except RuntimeError as exc:
                if "already accessed" not in str(exc):
                    raise
                if time.monotonic() >= until:
                    raise StoreError(locking.busy_message(path)) from exc
                continue
            use_write_ahead_log(client)  # local mode commits per point: 3x the writes (local_storage.py)
            return client

    def stamp_file(self, name: str) -> Path | None:
        if self.kind == "server":
            return None
        return self.settings.qdrant_path / "collection" / name / "storage.sqlite"

    def settle(self, client: Any, name: str) -> None:
        checkpoint(client, name)

    def release(self, client: Any) -> None:
        pass  # local mode holds its points in memory anyway

    def names_on_disk(self) -> list[str] | None:
        if self.kind == "server":
            return None
        path = self.settings.qdrant_path / "meta.json"
        if not path.exists():
            return []
        try:
            return list(json.loads(path.read_text("utf-8")).get("collections", {}))
        except (OSError, ValueError, AttributeError):
            return None  # being rewritten right now: ask Qdrant

    def create_collection(self, client: Any, name: str, **config: Any) -> None:
        """Create a collection; an embedded one's new file gets the write-ahead log too (local_storage.py)."""
        client.create_collection(name, **config)
        use_write_ahead_log(client)

    def create_chunk_collection(self, client: Any, name: str, dimension: int = DIMENSION) -> None:
        qm = qdrant_models()
        self.create_collection(
            client, name, vectors_config={DENSE: qm.VectorParams(size=dimension, distance=qm.Distance.COSINE)},
            sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
        )
        if self.kind == "server":  # payload indexes only matter (and only exist) on a server
            for key in ("path", "doc_hash"):
                client.create_payload_index(name, key, qm.PayloadSchemaType.KEYWORD)

    def write_nodes(self, client: Any, name: str, nodes: Sequence[Any], bm25: Any) -> None:
        self.vector_store(client, name, bm25).add(nodes)

    def as_points(self, points: Sequence[Any]) -> Sequence[Any]:
        qm = qdrant_models()  # a server and local mode take their own models
        return [qm.PointStruct(id=p.id, vector=p.vector, payload=p.payload) for p in points]

    def vector_store(self, client: Any, name: str, bm25: Any) -> Any:
        from llama_index.vector_stores.qdrant import QdrantVectorStore

        def sparse_fn(texts: list[str]) -> tuple[list[list[int]], list[list[float]]]:
            vecs = [bm25.encode_document(t) for t in texts]
            return [list(v.indices) for v in vecs], [list(v.values) for v in vecs]

        def sparse_query_fn(texts: list[str]) -> tuple[list[list[int]], list[list[float]]]:
            vecs = [bm25.encode_query(t) for t in texts]
            return [list(v.indices) for v in vecs], [list(v.values) for v in vecs]

        return QdrantVectorStore(
            collection_name=name, client=client, enable_hybrid=True, sparse_doc_fn=sparse_fn,
            sparse_query_fn=sparse_query_fn, dense_vector_name=DENSE, sparse_vector_name=SPARSE, batch_size=256,
        )
