"""Qdrant's own engine in process (``qdrant-edge-py``): the embedded store of record.

Qdrant's local mode (qdrant-client's pure-Python store) holds every point in memory and loads them
all when it opens: 4.2 GB to write 100,000 chunks and 131 s to open them, so a million would need
~40 GB (bench/results/scale.md). Qdrant Edge is Qdrant's storage engine, the server's segments and
write-ahead log, run inside this process: a write lands in its log before ``update`` returns (a
killed writer loses nothing it was told), and opening a shard reads its segment files, not every
point.

``EdgeClient`` gives the Store the part of ``QdrantClient``'s API it uses (create, list and delete
collections; upsert, delete, scroll, retrieve and count points), taking qdrant-client's models, so
the Store's code is one for local mode, Edge and a server. Each collection is one shard with
Qdrant's own schema (named vectors ``dense``, cosine, and ``sparse`` with the IDF modifier), under
``<root>/<name>/shard``; ``schema.json`` beside it marks a collection whose creation completed.

Locking: Edge lets one process open a shard (its write-ahead log is locked). The client holds an
exclusive ``flock`` on ``<root>/.lock`` from open to close, as local mode does on its folder, so
"wait for the writer" and "busy" work the same for both engines (``store.folder_locked``).

Stamps: a query snapshot records the stamp of the collection it was made from (snapshot.py). Edge
changes many files per write, so each collection has a ``stamp`` file of its own, replaced (a new
inode) *before* every write: from a writer's first operation on, killed or not, the published
snapshot no longer matches and readers rebuild it once the writer is gone.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Sequence

from ragcore.storage.damage import damaged, is_busy

UNNAMED = ""  # Qdrant's name for a collection's single unnamed vector
SCHEMA_FILE = "schema.json"
STAMP_FILE = "stamp"
BATCH = 512  # points per Edge update: one log entry each
# a shard whose write-ahead log is still locked (a handle being let go of) is loaded again for this long
WAL_RETRY_S = 5.0


class EdgeBusy(RuntimeError):
    """Another process has this folder open."""


@dataclass(frozen=True)
class EdgeRecord:
    """A point as qdrant-client returns one: ``id`` (str), ``payload``, ``vector`` (a list for an
    unnamed vector, else by name; sparse vectors have ``indices`` and ``values``)."""

    id: str
    payload: dict[str, Any] | None
    vector: Any


@dataclass(frozen=True)
class EdgePoint:
    """A point to write, without qdrant-client's validation (the Store's bulk path)."""

    id: str
    vector: Any
    payload: dict[str, Any]


class EdgeClient:
    """The collections under ``root``, each an Edge shard; open while this object is."""

    def __init__(self, root: Path) -> None:
        import qdrant_edge as qe  # ~0.1 s: imported by writers only

        self._qe = qe
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = open(self.root / ".lock", "a+")  # noqa: SIM115 (held until close)
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.close()
            raise EdgeBusy(f"{self.root} is already accessed by another process") from None
        self._shards: dict[str, Any] = {}
        # A shard may be opened once per process (its write-ahead log is locked): two threads that
        # both found it unopened (the service answers on several) must not both load it.
        self._opening = threading.Lock()
        self._closed = False

    # ------------------------------------------------------------------ collections

    def _dir(self, name: str) -> Path:
        return self.root / name

    def stamp_path(self, name: str) -> Path:
        return self._dir(name) / STAMP_FILE

    def collection_exists(self, name: str) -> bool:
        return (self._dir(name) / SCHEMA_FILE).is_file()

    def get_collections(self) -> SimpleNamespace:
        return SimpleNamespace(collections=[SimpleNamespace(name=n) for n in collection_names(self.root)])

    def create_collection(self, name: str, vectors_config: Any, sparse_vectors_config: Any = None, **_: Any) -> bool:
        qe = self._qe
        if self.collection_exists(name):
            raise ValueError(f"Collection {name} already exists")
        d = self._dir(name)
        if d.exists():  # a creation that did not complete (no schema.json): start it again
            shutil.rmtree(d)
        named = isinstance(vectors_config, dict)
        dense = vectors_config if named else {UNNAMED: vectors_config}
        schema = {
            "vectors": {k: {"size": int(v.size), "distance": _enum_name(v.distance)} for k, v in dense.items()},
            "sparse": {k: {"modifier": _enum_name(getattr(v, "modifier", None))} for k, v in (sparse_vectors_config or {}).items()},
        }
        cfg = qe.EdgeConfig(
            vectors={k: qe.EdgeVectorParams(size=v["size"], distance=_edge_distance(qe, v["distance"]))
                     for k, v in schema["vectors"].items()},
            sparse_vectors={k: qe.EdgeSparseVectorParams(modifier=_edge_modifier(qe, v["modifier"]))
                            for k, v in schema["sparse"].items()} or None,
        )
        d.mkdir(parents=True)
        self.bump(name)
        self._shards[name] = qe.EdgeShard.create(str(d / "shard"), cfg)
        _write_atomic(d / SCHEMA_FILE, json.dumps(schema))
        return True

    def delete_collection(self, name: str) -> bool:
        shard = self._shards.pop(name, None)
        if shard is not None:
            shard.close()
        d = self._dir(name)
        if not d.exists():
            return False
        # out of sight first (one rename), then removed: a crash in between leaves only trash
        trash = self.root / f".trash-{uuid.uuid4().hex}"
        os.replace(d, trash)
        shutil.rmtree(trash, ignore_errors=True)
        return True

    def _shard(self, name: str) -> Any:
        if self._closed:
            raise RuntimeError("the Edge client is closed")
        shard = self._shards.get(name)
        if shard is not None:
            return shard
        with self._opening:
            shard = self._shards.get(name)
            if shard is None:
                if not self.collection_exists(name):
                    raise ValueError(f"Collection {name} not found")
                shard = self._shards[name] = self._load(name)
        return shard

    def _load(self, name: str) -> Any:
        """Load one shard (under ``_opening``). Its log's lock may still be held for a moment by a
        handle being let go of: that is waited for, not reported. Anything else the engine cannot
        read is damage in this collection alone (damage.py): the other collections load as usual."""
        until = time.monotonic() + WAL_RETRY_S
        while True:
            try:
                return self._qe.EdgeShard.load(str(self._dir(name) / "shard"))
            except Exception as exc:  # noqa: BLE001 - qdrant-edge raises bare Exceptions
                if not is_busy(exc):
                    raise damaged(name, exc, self.root) from exc
                if time.monotonic() >= until:
                    raise EdgeBusy(f"the collection {name} is held by another process") from exc
                time.sleep(0.05)

    def bump(self, name: str) -> None:
        """A new stamp for ``name``: called before every write (see the module's docstring)."""
        _write_atomic(self.stamp_path(name), uuid.uuid4().hex)

    def flush(self, name: str) -> None:
        """Everything written to ``name`` into its segment files (the log already holds it)."""
        if name in self._shards:
            self._shards[name].flush()

    def release(self) -> None:
        """Close every open shard but keep the folder's lock; the next call opens them again. A shard
        keeps the pages of its files mapped once read (3.8 GB at a million chunks): a publish lets
        go of them before it builds the snapshot."""
        with self._opening:  # no other thread loads a shard again before these are closed
            shards, self._shards = self._shards, {}
            for shard in shards.values():
                shard.flush()
                shard.close()

    # ------------------------------------------------------------------ writes

    def upsert(self, collection_name: str, points: Sequence[Any], wait: bool = True, **_: Any) -> None:
        """``points``: qdrant-client ``PointStruct``s or ``EdgePoint``s (anything with id, vector, payload)."""
        qe = self._qe
        shard = self._shard(collection_name)
        self.bump(collection_name)
        for i in range(0, len(points), BATCH):
            batch = [qe.Point(str(p.id), self._vector_in(p.vector), p.payload or {}) for p in points[i : i + BATCH]]
            shard.update(qe.UpdateOperation.upsert_points(batch))

    def delete(self, collection_name: str, points_selector: Any, wait: bool = True, **_: Any) -> None:
        ids = getattr(points_selector, "points", None)
        if ids is None:
            raise NotImplementedError("EdgeClient.delete takes a PointIdsList (ids), not a filter")
        shard = self._shard(collection_name)
        self.bump(collection_name)
        for i in range(0, len(ids), BATCH):
            shard.update(self._qe.UpdateOperation.delete_points([str(x) for x in ids[i : i + BATCH]]))

    def _vector_in(self, v: Any) -> Any:
        if isinstance(v, dict):
            return {k: self._one_vector_in(x) for k, x in v.items()}
        return {UNNAMED: self._one_vector_in(v)}

    def _one_vector_in(self, x: Any) -> Any:
        if hasattr(x, "indices"):
            return self._qe.SparseVector(list(map(int, x.indices)), list(map(float, x.values)))
        if isinstance(x, list):
            return x
        return x.tolist() if hasattr(x, "tolist") else list(x)

    # ------------------------------------------------------------------ reads

    def scroll(self, collection_name: str, limit: int = 10, offset: Any = None, with_payload: Any = True,
               with_vectors: Any = False, scroll_filter: Any = None, **_: Any) -> tuple[list[EdgeRecord], str | None]:
        qe = self._qe
        req = qe.ScrollRequest(offset=None if offset is None else str(offset), limit=limit,
                               filter=self._filter(scroll_filter), with_payload=with_payload,
                               with_vector=_with_vector(with_vectors))
        recs, nxt = self._shard(collection_name).scroll(req)
        return [_record(r) for r in recs], None if nxt is None else str(nxt)

    def retrieve(self, collection_name: str, ids: Sequence[Any], with_payload: Any = True,
                 with_vectors: Any = False, **_: Any) -> list[EdgeRecord]:
        recs = self._shard(collection_name).retrieve([str(i) for i in ids], with_payload=with_payload,
                                                     with_vector=_with_vector(with_vectors))
        return [_record(r) for r in recs]

    def query_points(self, collection_name: str, query: Any, using: str | None = None, limit: int = 10,
                     with_payload: Any = True, with_vectors: Any = False, **_: Any) -> SimpleNamespace:
        """One nearest-neighbour branch (dense list or sparse vector), exact, as ``QdrantClient.query_points``
        returns it (``.points`` with id, score, payload, vector): the server path's code runs on Edge too."""
        qe = self._qe
        req = qe.QueryRequest(limit=limit, query=qe.Query.Nearest(self._one_vector_in(query), using=using or UNNAMED),
                              params=qe.SearchParams(exact=True), with_payload=with_payload,
                              with_vector=_with_vector(with_vectors))
        hits = self._shard(collection_name).query(req)
        return SimpleNamespace(points=[SimpleNamespace(id=str(h.id), score=float(h.score), payload=h.payload,
                                                       vector=_record(h).vector) for h in hits])

    def count(self, collection_name: str, exact: bool = True, **_: Any) -> SimpleNamespace:
        return SimpleNamespace(count=self._shard(collection_name).count(self._qe.CountRequest(exact=exact)))

    def _filter(self, flt: Any) -> Any:
        """qdrant-client's ``Filter(must=[FieldCondition(key, match=MatchValue(value))])``, the one
        kind the Store uses; anything else is refused rather than half-translated."""
        if flt is None:
            return None
        qe = self._qe
        must = flt.must if isinstance(flt.must, list) else [flt.must] if flt.must is not None else []
        values = [getattr(getattr(c, "match", None), "value", None) for c in must]
        if flt.should or flt.must_not or getattr(flt, "min_should", None) or not must or None in values:
            raise NotImplementedError("EdgeClient filters: only must = [FieldCondition(key, match=MatchValue)]")
        return qe.Filter(must=[qe.FieldCondition(key=c.key, match=qe.MatchValue(v)) for c, v in zip(must, values)])

    # ------------------------------------------------------------------ lifetime

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.release()
        finally:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()


def collection_names(root: Path) -> list[str]:
    """The collections under ``root`` whose creation completed, read from the folder alone (no lock)."""
    try:
        entries = list(Path(root).iterdir())
    except FileNotFoundError:
        return []
    return sorted(p.name for p in entries if not p.name.startswith(".") and (p / SCHEMA_FILE).is_file())


def _record(r: Any) -> EdgeRecord:
    v = r.vector
    if isinstance(v, dict) and set(v) == {UNNAMED}:
        v = v[UNNAMED]
    return EdgeRecord(str(r.id), r.payload, v)


def _with_vector(w: Any) -> Any:
    if isinstance(w, (list, tuple)):
        return list(w)
    return bool(w)


def _enum_name(x: Any) -> str | None:
    if x is None:
        return None
    return str(getattr(x, "value", x)).lower()


def _edge_distance(qe: Any, name: str) -> Any:
    return {"cosine": qe.Distance.Cosine, "dot": qe.Distance.Dot, "euclid": qe.Distance.Euclid,
            "manhattan": qe.Distance.Manhattan}[name]


def _edge_modifier(qe: Any, name: str | None) -> Any:
    return qe.Modifier.Idf if name == "idf" else None


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    tmp.write_text(text, "utf-8")
    os.replace(tmp, path)
