"""Qdrant: one collection per corpus, named vectors ``dense`` (384-d cosine) and ``sparse``
(BM25 term weights, Qdrant's IDF modifier).

Embedded on disk under ``settings.data_dir/qdrant`` by default; ``settings.qdrant_url`` switches
to a server with no other change. Points are written through LlamaIndex's
``QdrantVectorStore`` (so the same collection also works with a plain LlamaIndex
``VectorStoreIndex``); reads go through the client.

A point's id is the UUID form of its chunk id (a hash of path + span + text), so writing the
same chunk twice is idempotent: that is what makes an interrupted ingest safe to re-run.
"""

from __future__ import annotations

import fcntl
import json
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
from qdrant_client import QdrantClient
from qdrant_client import models as qm

from .config import RagcoreSettings
from .embeddings import DIMENSION, MODEL_NAME
from .nodes import chunk_to_node
from .sparse import Bm25Encoder
from .types import Chunk, CollectionInfo

DENSE = "dense"
SPARSE = "sparse"
META_COLLECTION = "ragcore__meta"
# Embedded section headings, shared by every collection: a heading's vector depends only on
# its text and the model, so one entry serves every corpus, re-ingest and process.
TOPICS_COLLECTION = "ragcore__topics"
RESERVED_PREFIX = "ragcore__"
# a second process (another `ragcore ask`, the app) waits this long for the embedded store
LOCK_WAIT_S = 15.0
LOCK_POLL_S = 0.1
# payload keys of a chunk point (besides LlamaIndex's own _node_content / doc_id …)
CHUNK_KEYS = (
    "chunk_id", "path", "doc_hash", "kind", "start_line", "end_line", "section",
    "anchor", "page", "ordinal", "title", "doc_chunks", "context", "fp",
)


class StoreError(RuntimeError):
    """A storage problem with a message that says what to do."""


def point_id(chunk_id: str) -> str:
    return str(uuid.UUID(hex=chunk_id[:32]))


def embed_text(chunk: Chunk) -> str:
    """What the encoders see: the chunk's title and section path, then its text.

    The heading path names the subject that the chunk's sentences often leave implicit
    ("It is set in settings.py"); the stored chunk text stays exactly the source text.
    """
    context = chunk_context(chunk)
    return f"{context}\n{chunk.text}" if context else chunk.text


def chunk_context(chunk: Chunk) -> str:
    """The document title and section path, as the encoders see them before the text."""
    return " › ".join(x for x in (chunk.title, *chunk.section) if x)


@dataclass(frozen=True)
class PointRef:
    """What incremental ingest needs to know about a stored point, without its vectors."""

    id: str
    path: str
    doc_hash: str
    doc_chunks: int
    fp: str = ""  # index fingerprint the point was written with (see ingest.pipeline)


@dataclass(frozen=True)
class SectionRef:
    """Where a chunk sits, for the topic index: no text, no vectors."""

    path: str
    start_line: int
    section: tuple[str, ...]
    title: str | None
    anchor: str | None = None
    page: int | None = None


@dataclass(frozen=True)
class CollectionData:
    """Everything the in-process search index needs, loaded in one scroll."""

    chunks: tuple[Chunk, ...]
    dense: np.ndarray  # (n, 384) float32, L2-normalised
    sparse: tuple[tuple[tuple[int, ...], tuple[float, ...]], ...]


def chunk_from_payload(payload: dict[str, Any]) -> Chunk:
    text = payload.get("text")
    if text is None:  # LlamaIndex keeps the text inside _node_content
        text = json.loads(payload.get("_node_content", "{}")).get("text", "")
    return Chunk(
        chunk_id=payload["chunk_id"],
        text=text,
        path=payload["path"],
        doc_hash=payload["doc_hash"],
        kind=payload["kind"],
        start_line=int(payload["start_line"]),
        end_line=int(payload["end_line"]),
        section=tuple(payload.get("section") or ()),
        anchor=payload.get("anchor"),
        page=payload.get("page"),
        ordinal=int(payload.get("ordinal", 0)),
        title=payload.get("title"),
    )


class Store:
    def __init__(self, settings: RagcoreSettings, client: QdrantClient | None = None) -> None:
        self.settings = settings
        self._client = client
        self._lock = threading.Lock()
        self._bm25 = Bm25Encoder()

    # ------------------------------------------------------------------ connection

    @property
    def is_embedded(self) -> bool:
        return not self.settings.qdrant_url

    @property
    def client(self) -> QdrantClient:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    self._client = self._open()
        return self._client

    def _open(self) -> QdrantClient:
        s = self.settings
        if s.qdrant_url:
            return QdrantClient(url=s.qdrant_url, api_key=s.qdrant_api_key, timeout=30)
        path = s.qdrant_path
        path.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            # Embedded Qdrant takes its folder lock only after loading every collection, so
            # retrying the client itself would reload the store each time: wait on the lock.
            wait_for_folder_lock(path, deadline)
            try:
                return QdrantClient(path=str(path))
            except RuntimeError as exc:
                if "already accessed" not in str(exc):
                    raise
                if time.monotonic() >= deadline:
                    raise StoreError(_busy_message(path)) from exc

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # ------------------------------------------------------------------ schema

    def exists(self, name: str) -> bool:
        return self.client.collection_exists(name)

    def ensure_collection(self, name: str) -> None:
        if name.startswith(RESERVED_PREFIX) or not name.replace("-", "").replace("_", "").isalnum():
            raise StoreError(f"Invalid collection name {name!r}: use letters, digits, - and _.")
        if self.client.collection_exists(name):
            return
        self.client.create_collection(
            name,
            vectors_config={DENSE: qm.VectorParams(size=DIMENSION, distance=qm.Distance.COSINE)},
            sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
        )
        if not self.is_embedded:  # payload indexes only matter (and only exist) on a server
            for key in ("path", "doc_hash"):
                self.client.create_payload_index(name, key, qm.PayloadSchemaType.KEYWORD)

    def vector_store(self, name: str):
        """LlamaIndex's QdrantVectorStore over this collection (hybrid, our BM25)."""
        from llama_index.vector_stores.qdrant import QdrantVectorStore

        def sparse_fn(texts: list[str]) -> tuple[list[list[int]], list[list[float]]]:
            vecs = [self._bm25.encode_document(t) for t in texts]
            return [list(v.indices) for v in vecs], [list(v.values) for v in vecs]

        def sparse_query_fn(texts: list[str]) -> tuple[list[list[int]], list[list[float]]]:
            vecs = [self._bm25.encode_query(t) for t in texts]
            return [list(v.indices) for v in vecs], [list(v.values) for v in vecs]

        return QdrantVectorStore(
            collection_name=name,
            client=self.client,
            enable_hybrid=True,
            sparse_doc_fn=sparse_fn,
            sparse_query_fn=sparse_query_fn,
            dense_vector_name=DENSE,
            sparse_vector_name=SPARSE,
            batch_size=256,
        )

    # ------------------------------------------------------------------ writes

    def write_chunks(
        self, name: str, chunks: Sequence[Chunk], dense: np.ndarray, doc_chunks: dict[str, int], fingerprint: str = ""
    ) -> None:
        """Upsert chunks with their dense vectors; sparse vectors are computed on the way in."""
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
            self.vector_store(name).add(nodes)

    def delete_points(self, name: str, ids: Sequence[str]) -> None:
        for i in range(0, len(ids), 1000):
            self.client.delete(name, points_selector=qm.PointIdsList(points=list(ids[i : i + 1000])), wait=True)

    def drop(self, name: str) -> None:
        if self.client.collection_exists(name):
            self.client.delete_collection(name)
        if self.client.collection_exists(META_COLLECTION):
            self.client.delete(META_COLLECTION, points_selector=qm.PointIdsList(points=[_meta_id(name)]))

    # ------------------------------------------------------------------ reads

    def _scroll(self, name: str, *, with_payload: Any, with_vectors: Any) -> Iterator[Any]:
        offset = None
        while True:
            points, offset = self.client.scroll(
                name, limit=1024, offset=offset, with_payload=with_payload, with_vectors=with_vectors
            )
            yield from points
            if offset is None:
                break

    def point_refs(self, name: str) -> list[PointRef]:
        if not self.exists(name):
            return []
        return [
            PointRef(str(p.id), p.payload["path"], p.payload["doc_hash"], int(p.payload.get("doc_chunks", 0)),
                     p.payload.get("fp") or "")
            for p in self._scroll(name, with_payload=["path", "doc_hash", "doc_chunks", "fp"], with_vectors=False)
        ]

    def stored_vectors(self, name: str, ids: Sequence[str]) -> dict[str, tuple[list[float], str]]:
        """Dense vector and embedding context of stored points, by point id (missing ids absent)."""
        out: dict[str, tuple[list[float], str]] = {}
        for i in range(0, len(ids), 1000):
            for p in self.client.retrieve(name, list(ids[i : i + 1000]), with_vectors=[DENSE], with_payload=["context"]):
                out[str(p.id)] = (p.vector[DENSE], (p.payload or {}).get("context") or "")
        return out

    def load(self, name: str) -> CollectionData:
        chunks: list[Chunk] = []
        dense: list[list[float]] = []
        sparse: list[tuple[tuple[int, ...], tuple[float, ...]]] = []
        for p in self._scroll(name, with_payload=True, with_vectors=True):
            chunks.append(chunk_from_payload(p.payload))
            dense.append(p.vector[DENSE])
            sv = p.vector.get(SPARSE)
            sparse.append((tuple(sv.indices), tuple(sv.values)) if sv is not None else ((), ()))
        mat = np.asarray(dense, dtype=np.float32).reshape(len(dense), DIMENSION)
        return CollectionData(tuple(chunks), mat, tuple(sparse))

    def section_refs(self, name: str) -> list[SectionRef]:
        """Where every chunk sits (path, line, section path, title), without text or vectors."""
        if not self.exists(name):
            return []
        return [
            SectionRef(p.payload["path"], int(p.payload["start_line"]), tuple(p.payload.get("section") or ()),
                       p.payload.get("title"), p.payload.get("anchor"), p.payload.get("page"))
            for p in self._scroll(name, with_payload=["path", "start_line", "section", "title", "anchor", "page"],
                                  with_vectors=False)
        ]

    # ------------------------------------------------------------------ heading vectors (see topics.py)

    def heading_vectors(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of these heading texts (texts never embedded are absent)."""
        if not texts or not self.client.collection_exists(TOPICS_COLLECTION):
            return {}
        out: dict[str, np.ndarray] = {}
        ids = {_heading_id(t): t for t in texts}
        keys = list(ids)
        for i in range(0, len(keys), 1000):
            for p in self.client.retrieve(TOPICS_COLLECTION, keys[i : i + 1000], with_vectors=True, with_payload=False):
                out[ids[str(p.id)]] = np.asarray(p.vector, dtype=np.float32)
        return out

    def write_heading_vectors(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        if not texts:
            return
        if not self.client.collection_exists(TOPICS_COLLECTION):
            self.client.create_collection(
                TOPICS_COLLECTION, vectors_config=qm.VectorParams(size=DIMENSION, distance=qm.Distance.COSINE)
            )
        points = [qm.PointStruct(id=_heading_id(t), vector=v.tolist(), payload={"text": t}) for t, v in zip(texts, vectors)]
        for i in range(0, len(points), 512):
            self.client.upsert(TOPICS_COLLECTION, points[i : i + 512], wait=True)

    def chunks_of(self, name: str, path: str) -> list[Chunk]:
        flt = qm.Filter(must=[qm.FieldCondition(key="path", match=qm.MatchValue(value=path))])
        pts = []
        offset = None
        while True:
            batch, offset = self.client.scroll(name, scroll_filter=flt, limit=1024, offset=offset, with_payload=True)
            pts.extend(batch)
            if offset is None:
                break
        return sorted((chunk_from_payload(p.payload) for p in pts), key=lambda c: (c.page or 0, c.start_line, c.ordinal))

    def count(self, name: str) -> int:
        return self.client.count(name, exact=True).count if self.exists(name) else 0

    # ------------------------------------------------------------------ collection metadata

    def write_meta(self, name: str, meta: dict[str, Any]) -> None:
        if not self.client.collection_exists(META_COLLECTION):
            self.client.create_collection(
                META_COLLECTION, vectors_config=qm.VectorParams(size=1, distance=qm.Distance.DOT)
            )
        # merged into what is there: an ingest must not erase, say, a calibrated abstain bar
        payload = {**self.read_meta(name), "name": name, "embedding_model": MODEL_NAME, **meta}
        self.client.upsert(META_COLLECTION, [qm.PointStruct(id=_meta_id(name), vector=[1.0], payload=payload)], wait=True)

    def read_meta(self, name: str) -> dict[str, Any]:
        if not self.client.collection_exists(META_COLLECTION):
            return {}
        got = self.client.retrieve(META_COLLECTION, [_meta_id(name)], with_payload=True)
        return dict(got[0].payload) if got else {}

    def collection_names(self) -> list[str]:
        return sorted(c.name for c in self.client.get_collections().collections if not c.name.startswith(RESERVED_PREFIX))

    def info(self, name: str) -> CollectionInfo:
        meta = self.read_meta(name)
        return CollectionInfo(
            name=name,
            documents=int(meta.get("documents", 0)),
            chunks=self.count(name),
            corpus_version=meta.get("corpus_version"),
            built_at=meta.get("built_at"),
            root=meta.get("root"),
            embedding_model=meta.get("embedding_model"),
            settings=meta.get("settings", {}),
        )


def wait_for_folder_lock(path: Path, deadline: float) -> None:
    """Return once no other process holds the embedded store's lock (or raise at ``deadline``)."""
    lock = path / ".lock"
    while lock.exists():
        with open(lock, "a+") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                if time.monotonic() >= deadline:
                    raise StoreError(_busy_message(path)) from None
                time.sleep(LOCK_POLL_S)
                continue
            fcntl.flock(f, fcntl.LOCK_UN)
            return


def _busy_message(path: Path) -> str:
    return (
        f"The embedded Qdrant folder {path} is open in another process (only one process may open it at a time; "
        f"waited {LOCK_WAIT_S:.0f} s). Close the other ragcore app or command, or share one store between "
        "processes with a Qdrant server: set RAGCORE_QDRANT_URL (see README, 'Where data lives')."
    )


def _heading_id(text: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ragcore-heading:{MODEL_NAME}:{text}"))


def _meta_id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ragcore:{name}"))


def utc_now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()
