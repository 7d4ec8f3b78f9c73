"""damage.py: what counts as damage, and how it is said (no absolute paths, the recovery command)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragcore.storage.damage import CollectionDamaged, bad_rows, damaged, is_busy, rebuild_command


def test_bad_rows_finds_non_finite_and_non_unit_vectors() -> None:
    rng = np.random.default_rng(0)
    mat = rng.normal(size=(6, 384)).astype(np.float32)
    mat /= np.linalg.norm(mat, axis=1, keepdims=True)
    mat[1, 7] = np.nan
    mat[3, 0] = 3.0e38  # a flipped exponent bit
    mat[4] = 0.0  # nothing to score, not damage
    mat[5] *= 1.005  # float rounding of a stored vector stays within the tolerance
    assert bad_rows(mat).tolist() == [1, 3]
    assert bad_rows(np.zeros((0, 384), np.float32)).tolist() == []


def test_the_message_names_the_collection_and_the_way_out_not_the_servers_paths(tmp_path: Path) -> None:
    root = tmp_path / "data" / "qdrant-edge"
    exc = Exception(f"Service runtime error: failed to open file `{root}/guide/shard/segments/x/segment.json` "
                    "(also /etc/elsewhere)")
    err = damaged("guide", exc, root, "/home/me/docs")
    assert isinstance(err, CollectionDamaged) and err.name == "guide"
    assert str(tmp_path) not in str(err) and "/etc/elsewhere" not in str(err)
    assert "guide/shard/segments/x/segment.json" in str(err)
    assert str(err).endswith("ragcore ingest /home/me/docs --collection guide --rebuild")
    assert "upload them again" in rebuild_command("guide", "(upload)")
    assert rebuild_command("g", "/a b/it's") == "ragcore ingest '/a b/it'\\''s' --collection g --rebuild"


def test_a_locked_write_ahead_log_is_busy_not_damage() -> None:
    assert is_busy(Exception("failed to open WAL /x/wal: WouldBlock"))
    assert not is_busy(Exception("Failed to decompress LZ4 value"))
