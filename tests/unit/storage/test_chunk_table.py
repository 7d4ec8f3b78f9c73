"""The snapshot's chunk table (ragcore/storage/chunk_table.py): rows decoded on demand from
chunks.jsonl + chunk_offsets.npy, the persisted columns, and damage detection."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ragcore.storage.chunk_table import ChunkTable, PackedChunks, TableError, write_table
from ragcore.storage.snapshot import SparseRows, sparse_columns
from ragcore.types import Chunk


def _chunks() -> list[Chunk]:
    out = []
    for i in range(40):
        path = ["b/guide.md", "a/intro.rst", "c/naïve.html", "a/z.md"][i % 4]
        out.append(Chunk(
            chunk_id=f"{(i * 7919) % 1000:04d}".ljust(32, "f"), text=f"Text {i} — “quoted” line\nsecond", path=path,
            doc_hash=f"h{i % 4}", kind="markdown", start_line=i, end_line=i + 3,
            section=("Top", f"Sub {i % 3}") if i % 5 else (), anchor=None if i % 2 else f"a{i}",
            page=None if i % 3 else i, ordinal=i // 4, title=None if i % 7 == 0 else "Guide"))
    return out


@pytest.fixture
def table_dir(tmp_path: Path) -> Path:
    write_table(tmp_path, _chunks())
    return tmp_path


def test_round_trip(table_dir: Path) -> None:
    chunks = _chunks()
    t = ChunkTable(table_dir, len(chunks))
    assert len(t) == len(chunks) and list(t) == chunks
    assert t[0] == chunks[0] and t[-1] == chunks[-1] and t[3:6] == chunks[3:6]
    assert t[5] is t[5]  # the LRU hands back the decoded row
    with pytest.raises(IndexError):
        t[len(chunks)]
    for i, c in enumerate(chunks):
        assert t.by_id[c.chunk_id] == i
    assert "0000".ljust(32, "e") not in t.by_id and t.by_id.get("not an id") is None
    assert t.paths == tuple(sorted({c.path for c in chunks}))
    assert [t.paths[k] for k in t.doc_of] == [c.path for c in chunks]
    assert t.path_rows("a/z.md").tolist() == [i for i, c in enumerate(chunks) if c.path == "a/z.md"]
    assert t.path_rows("missing.md").tolist() == []


def test_empty_table(tmp_path: Path) -> None:
    write_table(tmp_path, [])
    t = ChunkTable(tmp_path, 0)
    assert len(t) == 0 and list(t) == [] and t.paths == ()


@pytest.mark.parametrize("damage", ["truncated", "offsets", "fields", "ids", "pickle", "count"])
def test_damage_is_detected_on_open(table_dir: Path, damage: str) -> None:
    n = len(_chunks())
    if damage == "truncated":
        (table_dir / "chunks.jsonl").write_bytes((table_dir / "chunks.jsonl").read_bytes()[:-1])
    elif damage == "offsets":
        np.save(table_dir / "chunk_offsets.npy", np.load(table_dir / "chunk_offsets.npy")[:-1])
    elif damage == "fields":
        (table_dir / "paths.json").write_text('{"fields": ["chunk_id", "text"], "paths": []}')
    elif damage == "ids":
        np.save(table_dir / "chunk_ids.npy", np.array(["short"] * n, dtype="S5"))
    elif damage == "pickle":  # an .npy holding Python objects is refused, never unpickled
        np.save(table_dir / "doc_of.npy", np.array([{"x": 1}] * n, dtype=object), allow_pickle=True)
    else:
        n += 1
    with pytest.raises(TableError):
        ChunkTable(table_dir, n)


def test_a_damaged_row_is_an_error_when_read(table_dir: Path) -> None:
    raw = bytearray((table_dir / "chunks.jsonl").read_bytes())
    offsets = np.load(table_dir / "chunk_offsets.npy")
    raw[offsets[3] : offsets[3] + 4] = b"{{{{"  # same length: only reading row 3 can tell
    (table_dir / "chunks.jsonl").write_bytes(bytes(raw))
    t = ChunkTable(table_dir, len(offsets) - 1)
    assert t[2] == _chunks()[2]
    with pytest.raises(TableError):
        t[3]


def test_packed_chunks_are_the_chunks_and_write_the_same_table(tmp_path: Path) -> None:
    """What a publish loads from the store: rows kept as bytes, decoded when asked for."""
    chunks = _chunks()
    packed = PackedChunks()
    for c in chunks:
        packed.append(c)
    assert len(packed) == len(chunks) and list(packed) == chunks and packed[3:6] == chunks[3:6] and packed[-1] == chunks[-1]
    for name, rows in (("packed", packed), ("plain", chunks)):
        (tmp_path / name).mkdir()
        write_table(tmp_path / name, rows)
    for f in ("chunks.jsonl", "chunk_offsets.npy", "doc_of.npy", "chunk_ids.npy", "id_order.npy", "paths.json"):
        assert (tmp_path / "packed" / f).read_bytes() == (tmp_path / "plain" / f).read_bytes(), f


def test_sparse_rows_make_the_same_columns_as_per_chunk_pairs() -> None:
    pairs = [((5, 9), (1.0, 0.5)), ((), ()), ((9, 2, 7), (0.25, 2.0, 1.5)), ((5,), (3.0,))]
    lengths = [len(i) for i, _ in pairs]
    rows = SparseRows(np.concatenate(([0], np.cumsum(lengths))).astype(np.int64),
                      np.array([t for i, _ in pairs for t in i], np.int64), np.array([v for _, w in pairs for v in w], np.float32))
    assert len(rows) == 4 and [tuple(map(int, rows[k][0])) for k in range(4)] == [i for i, _ in pairs]
    a, b = sparse_columns(rows), sparse_columns(pairs)
    for field in ("terms", "indptr", "rows", "values"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
