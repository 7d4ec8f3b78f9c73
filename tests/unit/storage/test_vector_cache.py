"""The per-repository vector cache (storage/vector_cache.py): by model and text, across instances."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ragcore.storage.vector_cache import VectorCache


def test_vectors_by_model_and_text_survive_reopening(tmp_path: Path) -> None:
    a = VectorCache.for_repository(tmp_path, "repo1", "minilm")
    vecs = np.arange(6, dtype=np.float32).reshape(2, 3)
    a.put(["alpha", "beta"], vecs)
    assert len(a) == 2
    a.close()
    b = VectorCache.for_repository(tmp_path, "repo1", "minilm")
    got = b.get(["beta", "gamma", "alpha"], dim=3)
    assert set(got) == {0, 2}
    assert np.array_equal(got[0], vecs[1]) and np.array_equal(got[2], vecs[0])
    assert (b.hits, b.misses) == (2, 1)
    assert b.get(["alpha"], dim=4) == {}  # another width: another model's vector, never mixed in
    other_model = VectorCache.for_repository(tmp_path, "repo1", "openai:text-embedding-3-small")
    assert other_model.get(["alpha"], dim=3) == {}
    b.close()
    other_model.close()
