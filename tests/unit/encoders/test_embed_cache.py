"""The on-disk embedding cache (ragcore/encoders/cache.py): vectors by (model, text) key, kept
across processes, bounded."""

from __future__ import annotations

import numpy as np

from ragcore.encoders.cache import EmbeddingCache


def test_vectors_are_kept_by_model_and_text_across_opens(tmp_path) -> None:
    path = tmp_path / "c.sqlite3"
    cache = EmbeddingCache(path)
    a, b = EmbeddingCache.key("openai:m", "alpha"), EmbeddingCache.key("openai:other", "alpha")
    assert a != b  # another model's vector of the same text is another entry
    cache.put_many([(a, np.arange(4, dtype=np.float32))])
    cache.close()
    again = EmbeddingCache(path)
    got = again.get_many([a, b])
    assert list(got) == [a] and np.array_equal(got[a], np.arange(4, dtype=np.float32))
    again.close()


def test_the_oldest_entries_go_past_the_bound(tmp_path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite3", max_entries=3)
    keys = [EmbeddingCache.key("m", str(i)) for i in range(5)]
    for k in keys:
        cache.put_many([(k, np.ones(2, dtype=np.float32))])
    assert len(cache) == 3 and set(cache.get_many(keys)) == set(keys[2:])
    cache.close()
