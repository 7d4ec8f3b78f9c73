"""Query snapshots: what questions need of a collection, in plain files next to the store.

Opening embedded Qdrant loads every point of every collection (2.7 s for 7,209 chunks) and
takes the folder's lock, so a question that reads the collection from Qdrant is slow and keeps
every other process out. After each write that changes a collection, the Store writes here the
vectors (``.npy``, memory-mapped when read), the BM25 columns of the in-process index, the chunks
with their metadata, the vectors of their section headings and the collection's metadata:

    <data dir>/snapshots/<collection>/manifest.json           which version is current, and its stamp
    <data dir>/snapshots/<collection>/<corpus version>-<id>/  dense.npy, dense_codes.npy, dense_basis.npy,
                                                              sparse_*.npy, chunks.jsonl + the chunk
                                                              table's columns (chunk_table.py),
                                                              names.json, headings.json, headings.npy

A version directory is written under a temporary name and renamed; the manifest is replaced
atomically, then older versions are removed. The manifest records a stamp of the Qdrant file it
was made from (inode, size, mtime of the collection's ``storage.sqlite`` and of its write-ahead log
while that holds frames): a snapshot whose stamp
no longer matches the store is not used (the Store rebuilds it). Only JSON and ``.npy`` without
pickles are read back, so a data folder cannot carry code.

Format 2 (format-1 snapshots are refused, hence rebuilt) opens in milliseconds at any size:
every large file is memory-mapped and chunks are decoded per row (chunk_table.py); the BM25
postings are read per query term; the name index is computed at publish (names.json); a 64-d
projection of the vectors (dense_codes.py) serves the dense branch of large collections.

Integrity: the manifest records a sha256 of every file of its version. Loading a version checks
them, and that every dense vector is finite and unit length (damage.py), whenever the files are
small enough to read in a moment (VERIFY_MAX_BYTES); :meth:`SnapshotFiles.verify` checks them at
any size (the repair step does). A version that fails is "damaged": questions read the store of
record instead, and ``ragcore collections --repair`` rewrites it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import numpy as np

from ragcore.storage.chunk_table import ChunkTable, TableError, write_table
from ragcore.storage.damage import bad_rows, vectors_reason
from ragcore.storage.dense_codes import DenseCodes, read_codes, write_codes
from ragcore.storage.sections import topic_rows
from ragcore.types import Chunk

FORMAT = 3  # 3: topics.json and doc_hashes.json; 2: chunks read per row, persisted columns
MANIFEST = "manifest.json"
CREATING = "creating"  # beside the manifest: a new collection not yet published (mark_created)
DIMENSION = 384  # the bundled MiniLM's width; a collection built with another model records its own (width_of)
FULL_CHECK_MAX = 5_000_000  # postings: up to this many, every row index is checked on open (O(1) reads above)
# a version up to this size is checked whole when a process first loads it (~0.1 s); above, by verify()
VERIFY_MAX_BYTES = 64 * 1024 * 1024


class SnapshotError(Exception):
    """A snapshot that cannot be read (missing, truncated, of another format): rebuild it."""


@dataclass(frozen=True)
class Stamp:
    """Identifies one state of a Qdrant collection file: any write changes its size or mtime
    (or its write-ahead log's, while the log holds frames: local_storage.py)."""

    ino: int
    size: int
    mtime_ns: int
    log_size: int = 0
    log_mtime_ns: int = 0


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
    checksums: Mapping[str, str] = dataclasses.field(default_factory=dict)  # file name -> sha256 (none before)


@dataclass(frozen=True)
class SparseColumns:
    """BM25 term weights by term column (CSC arrays): a query reads the postings of its few terms."""

    terms: np.ndarray  # int64, sorted: the hashed term id of each column
    indptr: np.ndarray  # int64, columns + 1
    rows: np.ndarray  # int32: the chunk row of each posting, column after column
    values: np.ndarray  # float32: its BM25 document weight
    n: int  # chunks

    @property
    def matrix(self) -> Any:
        """The chunks × terms scipy CSC matrix (built on each call: for consumers that want scipy)."""
        from scipy import sparse as sp  # ~0.3 s to import: not on the question path

        return sp.csc_matrix((self.values, self.rows, self.indptr), shape=(self.n, max(len(self.terms), 1)))

    def column(self, term: int) -> int | None:
        """The column of a hashed term id (None: no chunk holds it)."""
        k = int(np.searchsorted(self.terms, term))
        return k if k < len(self.terms) and int(self.terms[k]) == term else None


class HeadingVectors(Mapping[str, np.ndarray]):
    """Heading text -> its vector, over the mapped headings.npy (the text index is built on first use)."""

    def __init__(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        self._texts, self._vectors = tuple(texts), vectors
        self._at: dict[str, int] | None = None

    def __getitem__(self, text: str) -> np.ndarray:
        if self._at is None:
            self._at = {t: i for i, t in enumerate(self._texts)}
        return self._vectors[self._at[text]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._texts)

    def __len__(self) -> int:
        return len(self._texts)


@dataclass(frozen=True)
class SnapshotData:
    """One version of a collection as queries read it."""

    version: str
    chunks: ChunkTable  # a Sequence[Chunk] decoded per row
    dense: np.ndarray  # (n, 384) float32, L2-normalised, memory-mapped
    sparse: SparseColumns
    headings: Mapping[str, np.ndarray]  # heading text -> its vector
    codes: DenseCodes | None = None  # the dense projection (dense_codes.py)


@dataclass(frozen=True)
class SparseRows(Sequence[tuple[np.ndarray, np.ndarray]]):
    """Per-chunk sparse vectors as one CSR (row offsets, flat term ids, flat weights): what a publish
    reads from the store. A million chunks' vectors as separate arrays would cost ~1 GB of headers."""

    indptr: np.ndarray  # int64, n + 1
    terms: np.ndarray  # int64
    values: np.ndarray  # float32

    def __len__(self) -> int:
        return len(self.indptr) - 1

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        lo, hi = int(self.indptr[i]), int(self.indptr[i + 1])
        return self.terms[lo:hi], self.values[lo:hi]


def sparse_columns(rows: Sequence[tuple[Sequence[int], Sequence[float]]]) -> SparseColumns:
    """Per-chunk (term ids, weights) as CSC arrays with the column -> term id map."""
    from scipy import sparse as sp  # publishing only

    if isinstance(rows, SparseRows):
        indptr, flat_terms, values = rows.indptr, rows.terms, rows.values
    else:
        lengths = np.fromiter((len(idx) for idx, _ in rows), dtype=np.int64, count=len(rows))
        indptr = np.concatenate(([0], np.cumsum(lengths)))
        flat_terms = np.concatenate([np.asarray(idx, np.int64) for idx, _ in rows] or [np.zeros(0, np.int64)])
        values = np.concatenate([np.asarray(vals, np.float32) for _, vals in rows] or [np.zeros(0, np.float32)])
    terms, cols = np.unique(flat_terms, return_inverse=True)
    csr = sp.csr_matrix((values, cols.astype(np.int64), indptr), shape=(len(rows), max(len(terms), 1)))
    csc = csr.tocsc()
    csc.sort_indices()  # rows ascending within a column, as scipy's column slices read them
    indptr = csc.indptr.astype(np.int64)[: len(terms) + 1]
    return SparseColumns(terms.astype(np.int64), indptr, csc.indices.astype(np.int32),
                         csc.data.astype(np.float32), len(rows))


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

    def has_manifest(self, name: str) -> bool:
        """Whether a manifest file is there (readable or not)."""
        return (self._dir(name) / MANIFEST).is_file()

    def mark_created(self, name: str) -> None:
        """A writer is creating ``name``: until its first snapshot, readers know it as new (not as an
        existing collection whose snapshot is missing, which they read from Qdrant)."""
        base = self._dir(name)
        base.mkdir(parents=True, exist_ok=True)
        (base / CREATING).touch()

    def being_created(self, name: str) -> bool:
        """Created by a writer and never published since (the writer may be at work, or dead)."""
        return (self._dir(name) / CREATING).is_file() and not self.has_manifest(name)

    def verify(self, m: Manifest) -> None:
        """Check every file of ``m``'s version against its checksum and every vector's norm, at any size
        (SnapshotError naming what failed). The repair step runs it; a load runs it on small versions."""
        d = self._dir(m.collection) / m.version
        _check_sums(d, m.checksums)
        data = self.data(m)
        _check_vectors(d, data.dense)

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
            sums = {p.name: _sha256(p) for p in sorted(tmp.iterdir()) if p.is_file()}
            os.replace(tmp, base / version)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        m = Manifest(name, version, meta.get("corpus_version"), stamp, len(chunks), dict(meta), sums)
        self._write_manifest(m)
        (base / CREATING).unlink(missing_ok=True)
        self._remove_old(name, keep=version)
        return m

    def update_meta(self, m: Manifest, meta: Mapping[str, Any], stamp: Stamp) -> Manifest:
        """The same files with new collection metadata (e.g. an abstain bar): only the manifest changes."""
        new = Manifest(m.collection, m.version, meta.get("corpus_version"), stamp, m.chunks, dict(meta), m.checksums)
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
            "stamp": list(dataclasses.astuple(m.stamp)), "chunks": m.chunks, "meta": m.meta,
            "checksums": dict(m.checksums),
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
    dim = dense.shape[1] if getattr(dense, "ndim", 1) == 2 else DIMENSION
    np.save(d / "dense.npy", np.ascontiguousarray(dense, dtype=np.float32).reshape(len(chunks), dim))
    write_codes(d, np.load(d / "dense.npy", mmap_mode="r"))
    np.save(d / "sparse_terms.npy", sparse.terms.astype(np.int64))
    np.save(d / "sparse_indptr.npy", sparse.indptr.astype(np.int64))
    np.save(d / "sparse_rows.npy", sparse.rows.astype(np.int32))
    np.save(d / "sparse_values.npy", sparse.values.astype(np.float32))
    write_table(d, chunks)
    (d / "names.json").write_text(json.dumps(_names(chunks), ensure_ascii=False), "utf-8")
    # what the first question and the library would otherwise scan every row for
    (d / "topics.json").write_text(json.dumps(topic_rows(chunks), ensure_ascii=False), "utf-8")
    (d / "doc_hashes.json").write_text(json.dumps({c.path: c.doc_hash for c in chunks}, ensure_ascii=False), "utf-8")
    texts = sorted(headings)
    (d / "headings.json").write_text(json.dumps(texts, ensure_ascii=False), "utf-8")
    vecs = np.stack([headings[t] for t in texts]) if texts else np.zeros((0, dim), np.float32)
    np.save(d / "headings.npy", vecs.astype(np.float32))


def _names(chunks: Sequence[Chunk]) -> dict[str, Any]:
    """The name index (named pages are on by default), built here once instead of per process."""
    from ragcore.storage.name_index import NameIndex  # publishing only (the read path loads names.json)

    return NameIndex.build(chunks).to_json()


def _read_manifest(path: Path, name: str) -> Manifest | None:
    try:
        body = json.loads(path.read_text("utf-8"))
        if body.get("format") != FORMAT or body.get("collection") != name:
            return None
        stamp = Stamp(*(int(x) for x in body["stamp"]))
        return Manifest(name, str(body["version"]), body.get("corpus_version"), stamp,
                        int(body["chunks"]), dict(body.get("meta") or {}),
                        {str(k): str(v) for k, v in dict(body.get("checksums") or {}).items()})
    except (OSError, ValueError, KeyError, TypeError):
        return None  # damaged: as if there were none


def width_of(meta: Mapping[str, Any]) -> int:
    """The dense width a collection's metadata records (its embedding model's), else MiniLM's."""
    rec = meta.get("embedding")
    return int(rec.get("dimension") or DIMENSION) if isinstance(rec, Mapping) else DIMENSION


def _read_data(d: Path, m: Manifest) -> SnapshotData:
    n, dim = m.chunks, width_of(m.meta)
    small = m.checksums and sum(_size(d / f) for f in m.checksums) <= VERIFY_MAX_BYTES
    if small:
        _check_sums(d, m.checksums)
    try:
        chunks = ChunkTable(d, n)
        dense = np.asarray(np.load(d / "dense.npy", mmap_mode="r", allow_pickle=False))
        codes = read_codes(d, n, dim)
        terms = np.load(d / "sparse_terms.npy", allow_pickle=False)
        indptr = np.load(d / "sparse_indptr.npy", allow_pickle=False)
        rows = np.asarray(np.load(d / "sparse_rows.npy", mmap_mode="r", allow_pickle=False))
        values = np.asarray(np.load(d / "sparse_values.npy", mmap_mode="r", allow_pickle=False))
        texts = json.loads((d / "headings.json").read_text("utf-8"))
        hvecs = np.asarray(np.load(d / "headings.npy", mmap_mode="r", allow_pickle=False))
    except TableError as exc:
        raise SnapshotError(str(exc)) from exc
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise SnapshotError(f"{d}: {type(exc).__name__}: {exc}") from exc
    if dense.shape != (n, dim) or dense.dtype != np.float32 or len(indptr) != len(terms) + 1 \
            or len(rows) != len(values) or int(indptr[0]) != 0 or int(indptr[-1]) != len(rows) \
            or hvecs.shape != (len(texts), dim) or bool(np.any(np.diff(terms) <= 0)) \
            or bool(np.any(np.diff(indptr) < 0)) or (0 < len(rows) <= FULL_CHECK_MAX and int(rows.max()) >= n):
        raise SnapshotError(f"{d}: the files do not agree with each other or with the manifest")
    # above FULL_CHECK_MAX postings a bad row index is caught by numpy's bounds check when a query reads it
    if small or dense.nbytes <= VERIFY_MAX_BYTES:
        _check_vectors(d, dense)
    return SnapshotData(m.version, chunks, dense, SparseColumns(terms, indptr, rows, values, n),
                        HeadingVectors(texts, hvecs), codes)


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


def _sha256(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
    return h.hexdigest()


def _check_sums(d: Path, sums: Mapping[str, str]) -> None:
    for name, want in sums.items():
        try:
            got = _sha256(d / name)
        except OSError as exc:
            raise SnapshotError(f"{d.name}/{name}: {type(exc).__name__}") from exc
        if got != want:
            raise SnapshotError(f"{d.name}/{name}: its checksum does not match the manifest's (the file was changed)")


def _check_vectors(d: Path, dense: np.ndarray) -> None:
    bad = bad_rows(np.asarray(dense))
    if len(bad):
        raise SnapshotError(f"{d.name}/dense.npy: {vectors_reason(bad, len(dense))}")
