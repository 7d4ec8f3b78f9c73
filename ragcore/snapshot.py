"""Query snapshots: what questions need of a collection, in plain files next to the store.

Opening embedded Qdrant loads every point of every collection (2.7 s for 7,209 chunks) and
takes the folder's lock, so a question that reads the collection from Qdrant is slow and keeps
every other process out. After each write that changes a collection, the Store writes here the
vectors (``.npy``, memory-mapped when read), the BM25 columns of the in-process index, the chunks
with their metadata, the vectors of their section headings and the collection's metadata:

    <data dir>/snapshots/<collection>/manifest.json           which version is current, and its stamp
    <data dir>/snapshots/<collection>/<corpus version>-<id>/  dense.npy, sparse_*.npy, chunks.json,
                                                              headings.json, headings.npy

A version directory is written under a temporary name and renamed; the manifest is replaced
atomically, then older versions are removed. The manifest records a stamp of the Qdrant file it
was made from (inode, size, mtime of the collection's ``storage.sqlite``): a snapshot whose stamp
no longer matches the store is not used (the Store rebuilds it). Only JSON and ``.npy`` without
pickles are read back, so a data folder cannot carry code.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import uuid
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
from scipy import sparse as sp

from .types import Chunk

FORMAT = 1
MANIFEST = "manifest.json"
DIMENSION = 384  # the dense vectors' width (embeddings.DIMENSION; not imported: that module loads onnxruntime)
_CHUNK_FIELDS = tuple(f.name for f in fields(Chunk))


class SnapshotError(Exception):
    """A snapshot that cannot be read (missing, truncated, of another format): rebuild it."""


@dataclass(frozen=True)
class Stamp:
    """Identifies one state of a Qdrant collection file: any write changes its size or mtime."""

    ino: int
    size: int
    mtime_ns: int


def file_stamp(path: Path) -> Stamp | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return Stamp(st.st_ino, st.st_size, st.st_mtime_ns)


@dataclass(frozen=True)
class Manifest:
    collection: str
    version: str  # the directory holding this version's files
    corpus_version: str | None
    stamp: Stamp
    chunks: int
    meta: Mapping[str, Any]


@dataclass(frozen=True)
class SparseColumns:
    """BM25 term weights as a chunks × terms CSC matrix (a query slices a few term columns)."""

    terms: np.ndarray  # int64: the hashed term id of each column
    matrix: sp.csc_matrix


@dataclass(frozen=True)
class SnapshotData:
    """One version of a collection as queries read it."""

    version: str
    chunks: tuple[Chunk, ...]
    dense: np.ndarray  # (n, 384) float32, L2-normalised, memory-mapped
    sparse: SparseColumns
    headings: Mapping[str, np.ndarray]  # heading text -> its vector


def sparse_columns(rows: Sequence[tuple[Sequence[int], Sequence[float]]]) -> SparseColumns:
    """Per-chunk (term ids, weights) as a CSC matrix with its column -> term id map."""
    lengths = np.fromiter((len(idx) for idx, _ in rows), dtype=np.int64, count=len(rows))
    indptr = np.concatenate(([0], np.cumsum(lengths)))
    flat_terms = np.fromiter((t for idx, _ in rows for t in idx), dtype=np.int64, count=int(indptr[-1]))
    values = np.fromiter((v for _, vals in rows for v in vals), dtype=np.float32, count=int(indptr[-1]))
    terms, cols = np.unique(flat_terms, return_inverse=True)
    csr = sp.csr_matrix((values, cols.astype(np.int64), indptr), shape=(len(rows), max(len(terms), 1)))
    return SparseColumns(terms=terms, matrix=csr.tocsc())


class SnapshotFiles:
    """The snapshots of one data folder: read (cached by file stat), publish, update, remove."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()
        self._manifests: dict[str, tuple[Stamp, Manifest | None]] = {}
        self._data: dict[tuple[str, str], SnapshotData] = {}

    def _dir(self, name: str) -> Path:
        return self.root / name

    # ------------------------------------------------------------------ read

    def manifest(self, name: str) -> Manifest | None:
        """The collection's current manifest (None: none, or unreadable); re-read only when its file changed."""
        path = self._dir(name) / MANIFEST
        stamp = file_stamp(path)
        if stamp is None:
            return None
        with self._lock:
            hit = self._manifests.get(name)
            if hit is not None and hit[0] == stamp:
                return hit[1]
        m = _read_manifest(path, name)
        with self._lock:
            self._manifests[name] = (stamp, m)
        return m

    def data(self, m: Manifest) -> SnapshotData:
        """The files of ``m``'s version (loaded once per version); SnapshotError when damaged."""
        key = (m.collection, m.version)
        with self._lock:
            hit = self._data.get(key)
        if hit is not None:
            return hit
        data = _read_data(self._dir(m.collection) / m.version, m)
        with self._lock:
            # one version per collection stays in memory: the previous one is dropped on a swap
            self._data = {k: v for k, v in self._data.items() if k[0] != m.collection}
            self._data[key] = data
        return data

    # ------------------------------------------------------------------ write

    def publish(
        self, name: str, *, chunks: Sequence[Chunk], dense: np.ndarray, sparse: SparseColumns,
        headings: Mapping[str, np.ndarray], meta: Mapping[str, Any], stamp: Stamp,
    ) -> Manifest:
        """Write a new version and make it current; older versions are removed."""
        base = self._dir(name)
        base.mkdir(parents=True, exist_ok=True)
        version = f"{_safe(meta.get('corpus_version'))}-{uuid.uuid4().hex[:8]}"
        tmp = base / f".tmp-{version}"
        tmp.mkdir()
        try:
            _write_data(tmp, chunks, dense, sparse, headings)
            os.replace(tmp, base / version)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        m = Manifest(name, version, meta.get("corpus_version"), stamp, len(chunks), dict(meta))
        self._write_manifest(m)
        self._remove_old(name, keep=version)
        return m

    def update_meta(self, m: Manifest, meta: Mapping[str, Any], stamp: Stamp) -> Manifest:
        """The same files with new collection metadata (e.g. an abstain bar): only the manifest changes."""
        new = Manifest(m.collection, m.version, meta.get("corpus_version"), stamp, m.chunks, dict(meta))
        self._write_manifest(new)
        return new

    def remove(self, name: str) -> None:
        with self._lock:
            self._manifests.pop(name, None)
            self._data = {k: v for k, v in self._data.items() if k[0] != name}
        shutil.rmtree(self._dir(name), ignore_errors=True)

    def _write_manifest(self, m: Manifest) -> None:
        body = {
            "format": FORMAT, "collection": m.collection, "version": m.version, "corpus_version": m.corpus_version,
            "stamp": [m.stamp.ino, m.stamp.size, m.stamp.mtime_ns], "chunks": m.chunks, "meta": m.meta,
        }
        path = self._dir(m.collection) / MANIFEST
        tmp = path.with_name(f".{MANIFEST}.{uuid.uuid4().hex[:8]}")
        tmp.write_text(json.dumps(body, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, path)

    def _remove_old(self, name: str, keep: str) -> None:
        # Publishing happens under Qdrant's folder lock, so no other publish is under way: every other
        # directory is an old version or a crashed publish's leftover. A reader that still maps an old
        # dense.npy keeps its pages (Linux frees them when it lets go).
        for p in self._dir(name).iterdir():
            if p.is_dir() and p.name != keep:
                shutil.rmtree(p, ignore_errors=True)


# --------------------------------------------------------------------------- files


def _safe(text: Any) -> str:
    s = "".join(ch for ch in str(text or "none") if ch.isalnum() or ch in "-_")
    return s[:40] or "none"


def _write_data(d: Path, chunks: Sequence[Chunk], dense: np.ndarray, sparse: SparseColumns,
                headings: Mapping[str, np.ndarray]) -> None:
    np.save(d / "dense.npy", np.ascontiguousarray(dense, dtype=np.float32).reshape(len(chunks), DIMENSION))
    m = sparse.matrix
    np.save(d / "sparse_terms.npy", sparse.terms.astype(np.int64))
    np.save(d / "sparse_indptr.npy", m.indptr.astype(np.int64))
    np.save(d / "sparse_rows.npy", m.indices.astype(np.int64))
    np.save(d / "sparse_values.npy", m.data.astype(np.float32))
    rows = [[_jsonable(getattr(c, f)) for f in _CHUNK_FIELDS] for c in chunks]
    (d / "chunks.json").write_text(json.dumps({"fields": _CHUNK_FIELDS, "rows": rows}, ensure_ascii=False), "utf-8")
    texts = sorted(headings)
    (d / "headings.json").write_text(json.dumps(texts, ensure_ascii=False), "utf-8")
    vecs = np.stack([headings[t] for t in texts]) if texts else np.zeros((0, DIMENSION), np.float32)
    np.save(d / "headings.npy", vecs.astype(np.float32))


def _jsonable(v: Any) -> Any:
    return list(v) if isinstance(v, tuple) else v


def _read_manifest(path: Path, name: str) -> Manifest | None:
    try:
        body = json.loads(path.read_text("utf-8"))
        if body.get("format") != FORMAT or body.get("collection") != name:
            return None
        ino, size, mtime = body["stamp"]
        return Manifest(name, str(body["version"]), body.get("corpus_version"), Stamp(int(ino), int(size), int(mtime)),
                        int(body["chunks"]), dict(body.get("meta") or {}))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # damaged: as if there were none


def _read_data(d: Path, m: Manifest) -> SnapshotData:
    try:
        body = json.loads((d / "chunks.json").read_text("utf-8"))
        if tuple(body["fields"]) != _CHUNK_FIELDS:
            raise SnapshotError("written for another Chunk shape")
        chunks = tuple(_chunk(row) for row in body["rows"])
        dense = np.load(d / "dense.npy", mmap_mode="r", allow_pickle=False)
        terms = np.load(d / "sparse_terms.npy", allow_pickle=False)
        indptr = np.load(d / "sparse_indptr.npy", allow_pickle=False)
        rows = np.load(d / "sparse_rows.npy", allow_pickle=False)
        values = np.load(d / "sparse_values.npy", allow_pickle=False)
        texts = json.loads((d / "headings.json").read_text("utf-8"))
        hvecs = np.load(d / "headings.npy", allow_pickle=False)
    except SnapshotError:
        raise
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise SnapshotError(f"{d}: {type(exc).__name__}: {exc}") from exc
    n = len(chunks)
    if n != m.chunks or dense.shape != (n, DIMENSION) or len(indptr) != max(len(terms), 1) + 1 \
            or len(rows) != len(values) or int(indptr[-1]) != len(rows) or hvecs.shape != (len(texts), DIMENSION) \
            or (len(rows) and int(rows.max()) >= n):
        raise SnapshotError(f"{d}: the files do not agree with each other or with the manifest")
    matrix = sp.csc_matrix((values, rows, indptr), shape=(n, max(len(terms), 1)))
    return SnapshotData(m.version, chunks, dense, SparseColumns(terms, matrix), dict(zip(texts, hvecs)))


def _chunk(row: list[Any]) -> Chunk:
    c = dict(zip(_CHUNK_FIELDS, row))
    c["section"] = tuple(c["section"] or ())
    return Chunk(**c)
