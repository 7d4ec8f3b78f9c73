"""The chunks of a query snapshot, read per row on demand.

A million chunks decoded into ``Chunk`` objects take ~9 GB and ~90 s (bench/results/scale.md,
snapshot format 1 read ``chunks.json`` whole). A question needs a few dozen of them: the pool's
entries. So the payloads are one JSON array per line (``chunks.jsonl``) with the byte offset of
each line (``chunk_offsets.npy``, int64, n + 1), and a :class:`ChunkTable` decodes a row when it is
asked for it (a small LRU keeps the last ones). What the default question path needs of *every*
chunk is persisted as columns at publish, so nothing scans the rows on open or per question:

    paths.json      the unique paths, sorted          doc_of.npy      int32 path index per chunk
    chunk_ids.npy   chunk id per row (bytes, ≥ 32)    id_order.npy    rows sorted by chunk id (lookup)

Consumers that do scan every chunk (the field index, document profiles, a document's chunks)
still work through iteration: correct, at the cost of decoding every row.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from dataclasses import fields
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence, overload

import numpy as np

from ragcore.types import Chunk

CHUNK_FIELDS = tuple(f.name for f in fields(Chunk))
ID_BYTES = 32  # chunk ids are sha256 hex prefixes (ingest.chunking.chunk_id)
CACHE_ROWS = 16_384  # ~30 MB of decoded chunks: the pools of a few hundred recent questions (the lab re-cuts them)


class TableError(Exception):
    """The table's files are missing, truncated or disagree with each other."""


def row_bytes(c: Chunk) -> bytes:
    """One row of ``chunks.jsonl`` (without its newline)."""
    row = [list(v) if isinstance(v, tuple) else v for v in (getattr(c, k) for k in CHUNK_FIELDS)]
    return json.dumps(row, ensure_ascii=False).encode("utf-8")


class PackedChunks(Sequence[Chunk]):
    """Chunks held as their table rows (UTF-8 JSON bytes) and decoded when asked for: what a
    publish reads from the store. A million ``Chunk`` objects take ~5 GB; their rows ~1.5 GB, and
    ``write_table`` writes them as they are."""

    def __init__(self) -> None:
        self._rows: list[bytes] = []

    def append(self, c: Chunk) -> None:
        self._rows.append(row_bytes(c))

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, i):  # type: ignore[override]  # an int gives a Chunk, a slice a list of them
        rows = self._rows[i]
        return [chunk_of(json.loads(r)) for r in rows] if isinstance(i, slice) else chunk_of(json.loads(rows))

    def row(self, i: int) -> bytes:
        return self._rows[i]


def write_table(d: Path, chunks: Sequence[Chunk]) -> None:
    """Write the rows and the columns a question reads (see the module docstring)."""
    n = len(chunks)
    offsets = np.zeros(n + 1, dtype=np.int64)
    packed = chunks if isinstance(chunks, PackedChunks) else None
    with open(d / "chunks.jsonl", "wb") as f:
        for i in range(n):
            raw = packed.row(i) if packed is not None else row_bytes(chunks[i])
            offsets[i + 1] = offsets[i] + f.write(raw + b"\n")
    np.save(d / "chunk_offsets.npy", offsets)
    paths = sorted({c.path for c in chunks})
    at = {p: i for i, p in enumerate(paths)}
    (d / "paths.json").write_text(json.dumps({"fields": CHUNK_FIELDS, "paths": paths}, ensure_ascii=False), "utf-8")
    np.save(d / "doc_of.npy", np.fromiter((at[c.path] for c in chunks), dtype=np.int32, count=n))
    raw = [c.chunk_id.encode("utf-8") for c in chunks]
    ids = np.array(raw, dtype=f"S{max([ID_BYTES, *map(len, raw)])}").reshape(n)  # never truncated
    np.save(d / "chunk_ids.npy", ids)
    np.save(d / "id_order.npy", np.argsort(ids, kind="stable").astype(np.int64))


def _load(path: Path, mmap: bool = True) -> np.ndarray:
    # plain arrays over the mapped files: slicing np.memmap objects costs ~20 us each
    return np.asarray(np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False))


class ChunkIds(Mapping[str, int]):
    """chunk_id -> row, by binary search in the persisted sorted order (nothing built on open)."""

    def __init__(self, ids: np.ndarray, order: np.ndarray) -> None:
        self._ids, self._order = ids, order

    def __getitem__(self, key: str) -> int:
        try:
            k = np.bytes_(key.encode("utf-8"))
        except (UnicodeEncodeError, AttributeError):
            raise KeyError(key) from None
        lo, hi = 0, len(self._order)
        while lo < hi:  # bisect over the order column: log2(n) reads of mapped pages
            mid = (lo + hi) // 2
            if self._ids[self._order[mid]] < k:
                lo = mid + 1
            else:
                hi = mid
        if lo < len(self._order) and self._ids[self._order[lo]] == k:
            return int(self._order[lo])
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return (bytes(x).decode("utf-8") for x in self._ids)

    def __len__(self) -> int:
        return len(self._ids)


class ChunkTable(Sequence[Chunk]):
    """The snapshot's chunks: ``table[i]`` decodes row i (cached), iteration decodes them all."""

    def __init__(self, d: Path, n: int) -> None:
        try:
            head = json.loads((d / "paths.json").read_text("utf-8"))
            if tuple(head["fields"]) != CHUNK_FIELDS:
                raise TableError("written for another Chunk shape")
            self.paths: tuple[str, ...] = tuple(head["paths"])
            self._offsets = _load(d / "chunk_offsets.npy")
            self.doc_of = _load(d / "doc_of.npy")
            ids, order = _load(d / "chunk_ids.npy"), _load(d / "id_order.npy")
            rows = np.memmap(d / "chunks.jsonl", dtype=np.uint8, mode="r") if n else np.zeros(0, np.uint8)
            self._rows = np.asarray(rows)  # a plain array over the map: slicing a memmap object costs ~40 us
        except TableError:
            raise
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise TableError(f"{d}: {type(exc).__name__}: {exc}") from exc
        if self._offsets.shape != (n + 1,) or self.doc_of.shape != (n,) or ids.shape != (n,) or order.shape != (n,) \
                or ids.dtype.kind != "S" or ids.dtype.itemsize < ID_BYTES or int(self._offsets[-1]) != len(self._rows) \
                or (n and (int(self._offsets[0]) != 0 or int(self.doc_of.max()) >= len(self.paths))):
            raise TableError(f"{d}: the chunk table's files do not agree with each other")
        self.dir = d
        self.by_id = ChunkIds(ids, order)
        self._n = n
        self._cache: OrderedDict[int, Chunk] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> Chunk: ...
    @overload
    def __getitem__(self, i: slice) -> list[Chunk]: ...

    def __getitem__(self, i: int | slice) -> Chunk | list[Chunk]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._n))]
        i = int(i)
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        with self._lock:
            hit = self._cache.get(i)
            if hit is not None:
                self._cache.move_to_end(i)
                return hit
        c = self._decode(i)
        with self._lock:
            self._cache[i] = c
            if len(self._cache) > CACHE_ROWS:
                self._cache.popitem(last=False)
        return c

    def __iter__(self) -> Iterator[Chunk]:
        # a whole scan does not go through the LRU (it would evict what questions use)
        return (self._decode(i) for i in range(self._n))

    def _decode(self, i: int) -> Chunk:
        raw = self._rows[int(self._offsets[i]) : int(self._offsets[i + 1])].tobytes()
        try:
            return chunk_of(json.loads(raw))
        except (ValueError, TypeError) as exc:
            raise TableError(f"{self.dir}: row {i} is damaged: {exc}") from exc

    def path_rows(self, path: str) -> np.ndarray:
        """The rows of one document (a scan of the int32 column, not of the payloads)."""
        import bisect

        k = bisect.bisect_left(self.paths, path)
        if k == len(self.paths) or self.paths[k] != path:
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(self.doc_of == k)

    def persisted_names(self) -> dict[str, Any] | None:
        """The name index written at publish (names.json; see storage.name_index), None when absent."""
        return self.persisted("names.json")

    def persisted(self, name: str) -> Any | None:
        """A JSON file written with the table at publish (names.json, topics.json, doc_hashes.json),
        None when absent or unreadable: the caller then derives it from the rows."""
        try:
            return json.loads((self.dir / name).read_text("utf-8"))
        except (OSError, ValueError):
            return None


def chunk_of(row: list[Any]) -> Chunk:
    c = dict(zip(CHUNK_FIELDS, row, strict=True))
    c["section"] = tuple(c["section"] or ())
    return Chunk(**c)
