"""Reads from Qdrant itself, the store of record: what incremental ingest needs, what a snapshot
is published from, and what a reader falls back to when a collection has no valid snapshot.
Every read runs inside a (read) session of the Store's connection."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np

from ragcore.encoders.minilm import DIMENSION
from ragcore.storage.chunk_table import PackedChunks
from ragcore.storage.damage import CollectionDamaged, bad_rows, damaged, is_busy, vectors_reason
from ragcore.storage.schema import (
    DENSE, META_COLLECTION, SPARSE, CollectionData, PointRef, StoreError, meta_id, qdrant_models,
)
from ragcore.storage.sections import SectionRef
from ragcore.storage.snapshot import SparseRows
from ragcore.types import Chunk


class PointReader:
    def __init__(self, conn: Any) -> None:
        self._conn = conn

    @contextmanager
    def guard(self, name: str) -> Iterator[None]:
        """Turn what the engine cannot read of ``name`` (a payload whose bytes were flipped, a lost
        segment) into CollectionDamaged naming the command that recovers it (damage.py), never a raw
        engine message; the store's own errors and a busy store pass as they are."""
        try:
            yield
        except CollectionDamaged as exc:
            raise CollectionDamaged(name, exc.reason, self._root_of(name)) from exc
        except (StoreError, ValueError, NotImplementedError):
            raise
        except Exception as exc:  # noqa: BLE001 - qdrant-edge raises bare Exceptions
            if is_busy(exc):
                raise
            raise damaged(name, exc, self._conn.backend.path, self._root_of(name)) from exc

    def _root_of(self, name: str) -> str | None:
        """The folder the collection was built from, for the recovery command (None when unreadable)."""
        try:
            return self.meta(name).get("root")
        except Exception:  # noqa: BLE001 - only improves a message about damage
            return None

    def scroll_batches(self, name: str, *, with_payload: Any, with_vectors: Any, flt: Any = None) -> Iterator[list[Any]]:
        with self._conn.session(write=False) as client, self.guard(name):
            offset = None
            while True:
                points, offset = client.scroll(name, scroll_filter=flt, limit=1024, offset=offset,
                                               with_payload=with_payload, with_vectors=with_vectors)
                yield points
                if offset is None:
                    break

    def scroll(self, name: str, *, with_payload: Any, with_vectors: Any, flt: Any = None) -> Iterator[Any]:
        for batch in self.scroll_batches(name, with_payload=with_payload, with_vectors=with_vectors, flt=flt):
            yield from batch

    def exists(self, name: str) -> bool:
        with self._conn.session(write=False) as client:
            return bool(client.collection_exists(name))

    def names(self) -> list[str]:
        with self._conn.session(write=False) as client:
            return [x.name for x in client.get_collections().collections]

    def count(self, name: str) -> int:
        with self._conn.session(write=False) as client, self.guard(name):
            return int(client.count(name, exact=True).count)

    def meta(self, name: str) -> dict[str, Any]:
        with self._conn.session(write=False) as client:
            if not client.collection_exists(META_COLLECTION):
                return {}
            got = client.retrieve(META_COLLECTION, [meta_id(name)], with_payload=True)
            return dict(got[0].payload) if got else {}

    def point_refs(self, name: str) -> list[PointRef]:
        with self._conn.session(write=False) as client:
            if not client.collection_exists(name):
                return []
            return [
                PointRef(str(p.id), p.payload["path"], p.payload["doc_hash"], int(p.payload.get("doc_chunks", 0)),
                         p.payload.get("fp") or "")
                for p in self.scroll(name, with_payload=["path", "doc_hash", "doc_chunks", "fp"], with_vectors=False)
            ]

    def stored_vectors(self, name: str, ids: Sequence[str]) -> dict[str, tuple[list[float], str]]:
        out: dict[str, tuple[list[float], str]] = {}
        with self._conn.session(write=False) as client, self.guard(name):
            for i in range(0, len(ids), 1000):
                for p in client.retrieve(name, list(ids[i : i + 1000]), with_vectors=[DENSE], with_payload=["context"]):
                    out[str(p.id)] = (p.vector[DENSE], (p.payload or {}).get("context") or "")
        return out

    def section_refs(self, name: str) -> list[SectionRef]:
        return [
            SectionRef(p.payload["path"], int(p.payload["start_line"]), tuple(p.payload.get("section") or ()),
                       p.payload.get("title"), p.payload.get("anchor"), p.payload.get("page"))
            for p in self.scroll(name, with_payload=["path", "start_line", "section", "title", "anchor", "page"],
                                 with_vectors=False)
        ]

    def chunks_of(self, name: str, path: str) -> list[Chunk]:
        qm = qdrant_models()
        flt = qm.Filter(must=[qm.FieldCondition(key="path", match=qm.MatchValue(value=path))])
        return [Chunk.from_payload(p.payload) for p in self.scroll(name, with_payload=True, with_vectors=False, flt=flt)]

    def load(self, name: str) -> CollectionData:
        """Every chunk with its vectors, compact all the way, so a million chunks load in a few GB:
        chunks kept as their table rows (PackedChunks, ~1/3 of Chunk objects), the matrix filled a
        batch at a time, the sparse vectors as one CSR (lists of Python floats would take ~12 GB)."""
        chunks = PackedChunks()
        lengths: list[int] = []
        terms: list[np.ndarray] = [np.zeros(0, np.int64)]  # one array per batch, joined once at the end
        weights: list[np.ndarray] = [np.zeros(0, np.float32)]
        with self._conn.session(write=False) as client, self.guard(name):
            mat = np.empty((client.count(name, exact=True).count, DIMENSION), np.float32)
            for batch in self.scroll_batches(name, with_payload=True, with_vectors=True):
                if not batch:  # an empty collection scrolls one empty batch
                    continue
                if not len(chunks) and len(batch[0].vector[DENSE]) != mat.shape[1]:  # the model's own width
                    mat = np.empty((len(mat), len(batch[0].vector[DENSE])), np.float32)
                if len(chunks) + len(batch) > len(mat):  # points written since the count (not inside a write)
                    mat = np.concatenate([mat, np.empty((len(chunks) + len(batch) - len(mat), mat.shape[1]), np.float32)])
                mat[len(chunks) : len(chunks) + len(batch)] = [p.vector[DENSE] for p in batch]
                t: list[int] = []
                w: list[float] = []
                for p in batch:
                    chunks.append(Chunk.from_payload(p.payload))
                    sv = p.vector.get(SPARSE)
                    lengths.append(len(sv.indices) if sv is not None else 0)
                    if sv is not None:
                        t.extend(sv.indices)
                        w.extend(sv.values)
                terms.append(np.asarray(t, np.int64))
                weights.append(np.asarray(w, np.float32))
        bad = bad_rows(mat[: len(chunks)])
        if len(bad):  # never scored, never copied into a snapshot (a flipped bit gave cosines of 2.3e38)
            raise CollectionDamaged(name, vectors_reason(bad, len(chunks)), self._root_of(name))
        indptr = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))
        return CollectionData(chunks, mat[: len(chunks)], SparseRows(indptr, np.concatenate(terms), np.concatenate(weights)))
