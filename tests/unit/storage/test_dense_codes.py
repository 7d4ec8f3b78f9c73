"""Large snapshots (format 2): the dense branch through the 64-d projection (dense_codes.py),
rescored exactly; below the size threshold every result is what the exact code gave before.

Real parts: the bundled guide (docs/) cut by ragcore's chunker, embedded by the ONNX model,
BM25 by ragcore's encoder, written as a query snapshot in a temp folder. The size threshold is
forced down so ~200 chunks take the large-collection path."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import sparse as sp

from ragcore.storage import dense_codes
from bench.scale import base_chunks
from ragcore.settings.config import RagcoreSettings
from ragcore.storage.pathfilter import parse_path_filter, path_matches
from ragcore.storage.name_index import NameIndex
from ragcore.retrieval.pools import local_pool
from ragcore.storage.search_index import SearchIndex, qdrant_idf, top_indices
from ragcore.storage.snapshot import SnapshotFiles, Stamp, sparse_columns
from ragcore.encoders.sparse import Bm25Encoder
from ragcore.storage.store import embed_text
from tests.conftest import REPO

DOCS = REPO / "demo"
N = 200
pytestmark = pytest.mark.slow  # ~10 s: embedding 200 texts on a loaded 2-core machine


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, encoder):
    chunks = base_chunks(DOCS, RagcoreSettings())[:N]
    bm25 = Bm25Encoder()
    rows = [bm25.encode_document(embed_text(c)) for c in chunks]
    dense = encoder.encode_uncached([embed_text(c)[:300] for c in chunks]).astype(np.float32)
    files = SnapshotFiles(tmp_path_factory.mktemp("snap"))
    m = files.publish("g", chunks=chunks, dense=dense, sparse=sparse_columns([(r.indices, r.values) for r in rows]),
                      headings={}, meta={"corpus_version": "t"}, stamp=Stamp(0, 0, 0))
    questions = [line.strip("# ").strip() + "?" for f in sorted(DOCS.glob("*.md"))
                 for line in f.read_text().splitlines() if line.startswith("## ")]
    q_dense = encoder.encode(questions).astype(np.float32)
    return files.data(m), chunks, rows, questions, q_dense, [bm25.encode_query(q) for q in questions]


def _index(world, approx_min: int | None = None, oversample: int = 50) -> SearchIndex:
    idx = SearchIndex.from_snapshot(world[0])
    if approx_min is not None:
        idx.approx_min, idx.oversample = approx_min, oversample
    return idx


def _old_pool(chunks, rows, dense, q, qs, settings):
    """The pool as the format-1 code computed it: scipy's CSC product, a full scan, top_indices."""
    cols = sparse_columns([(r.indices, r.values) for r in rows])
    m = sp.csc_matrix((cols.values, cols.rows, cols.indptr), shape=(len(chunks), max(len(cols.terms), 1)))
    at = dict(zip(cols.terms.tolist(), range(len(cols.terms))))
    hit = [(at[i], v) for i, v in zip(qs.indices, qs.values) if i in at]
    scores = np.zeros(len(chunks))
    if hit:
        c = np.array([x for x, _ in hit])
        w = np.array([v for _, v in hit]) * qdrant_idf(np.diff(m.indptr).astype(np.float64)[c], len(chunks))
        scores = np.asarray(m[:, c] @ w).ravel()
    cos = dense @ q
    pats = parse_path_filter(settings.path_filter)
    mask = np.array([path_matches(ch.path, pats) for ch in chunks]) if pats else None
    d_top, s_top = top_indices(cos, settings.candidates, mask), top_indices(scores, settings.candidates, mask, True)
    return [(chunks[i].chunk_id, float(cos[i]), float(scores[i]), i in d_top and d_top.index(i) + 1,
             i in s_top and s_top.index(i) + 1) for i in dict.fromkeys([*d_top, *s_top])]


@pytest.mark.parametrize("path_filter", [None, "02-*.md, 1", "docs/nothing/"])
def test_below_the_threshold_results_are_identical_to_before(world, path_filter) -> None:
    snap, chunks, rows, _, q_dense, q_sparse = world
    idx = _index(world)
    assert not idx.approximate  # 200 chunks: the exact path
    settings = RagcoreSettings().with_(candidates=20, path_filter=path_filter)
    for q, qs in zip(q_dense, q_sparse):
        got = [(e.chunk.chunk_id, e.cosine, e.bm25, e.dense_rank or False, e.sparse_rank or False)
               for e in local_pool(idx, q, qs, settings)]
        assert got == _old_pool(chunks, rows, np.asarray(snap.dense), q, qs, settings)  # bit for bit


def test_path_filter_and_named_pages_equal_the_old_computation(world) -> None:
    snap, chunks = world[0], world[1]
    idx = _index(world)
    for spec in ("0*.md", "docs/, 1*", "zzz"):
        old = np.array([path_matches(c.path, parse_path_filter(spec)) for c in chunks], dtype=bool)
        assert np.array_equal(idx.path_mask(spec), old)
    assert (snap.chunks.dir / "names.json").is_file()
    assert NameIndex.build(snap.chunks) == NameIndex.build(list(chunks))  # persisted == scanned
    assert all(idx.by_id[c.chunk_id] == i for i, c in enumerate(chunks))


def test_projection_recall_on_real_vectors(world) -> None:
    """Dense top-10 through the projection + exact rescoring of 50 of 200 rows vs the exact top-10."""
    snap, _, _, questions, q_dense, _ = world
    exact, approx = _index(world), _index(world, approx_min=100, oversample=50)
    assert approx.approximate and len(questions) >= 20
    recall = [len(set(exact.dense_top(q, 10)) & set(approx.dense_top(q, 10))) / 10 for q in q_dense]
    assert np.mean(recall) >= 0.99, recall
    # a projection with no signal (all zero codes) does not reach that: the test can fail
    blind = _index(world, approx_min=100, oversample=50)
    blind.codes = dense_codes.DenseCodes(snap.codes.mean, snap.codes.basis, np.zeros_like(np.asarray(snap.codes.codes)))
    blind_recall = [len(set(exact.dense_top(q, 10)) & set(blind.dense_top(q, 10))) / 10 for q in q_dense]
    assert np.mean(blind_recall) < 0.9


def test_large_pool_scores_stay_exact(world) -> None:
    """Above the threshold: every entry's cosine and BM25 are the exact ones; the BM25 branch is
    the exact branch; a path filter still applies to both branches."""
    snap, _, _, _, q_dense, q_sparse = world
    exact, approx = _index(world), _index(world, approx_min=100, oversample=50)
    for spec in (None, "0*.md", "02-*.md", "nothing/"):  # wide filter, narrow (fewer rows than oversample), none
        settings = RagcoreSettings().with_(candidates=10, path_filter=spec)
        for q, qs in zip(q_dense, q_sparse):
            pool = local_pool(approx, q, qs, settings)
            ref = {e.chunk.chunk_id: e for e in local_pool(exact, q, qs, settings)}
            for e in pool:
                i = exact.by_id[e.chunk.chunk_id]
                assert e.cosine == pytest.approx(float(np.asarray(snap.dense)[i] @ q), abs=1e-6)
                assert e.bm25 == exact.bm25((qs.indices, qs.values))[i]
                assert spec is None or path_matches(e.chunk.path, [spec])
            if spec == "02-*.md":  # every eligible row rescored: the dense branch is the exact one
                assert [e.chunk.chunk_id for e in sorted((e for e in pool if e.dense_rank), key=lambda e: e.dense_rank)] \
                    == [e.chunk.chunk_id for e in sorted((e for e in ref.values() if e.dense_rank), key=lambda e: e.dense_rank)]
            assert (spec == "nothing/") == (not pool)
            # the same branch up to the order of exactly tied scores (the exact path breaks those arbitrarily)
            assert sorted((e.sparse_rank, e.bm25) for e in pool if e.sparse_rank) == \
                sorted((e.sparse_rank, e.bm25) for e in ref.values() if e.sparse_rank)


@pytest.mark.parametrize("n", [731, 40])
def test_fit_gives_the_principal_directions_the_svd_gave(n) -> None:
    """fit() takes the eigenvectors of the scatter matrix (an SVD of the rows took seconds under load):
    the same directions as the thin SVD's right singular vectors, up to sign, in the same order; with
    fewer rows than components, no more directions than rows and zeros after, as before."""
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((n, 384)) @ rng.standard_normal((384, 384)) * 0.05).astype(np.float32)
    mean, basis = dense_codes.fit(x)
    centred = x.astype(np.float64) - x.astype(np.float64).mean(axis=0)
    vt = np.linalg.svd(centred, full_matrices=False)[2]
    k = min(dense_codes.COMPONENTS, n - 1)  # centred rows span n - 1 directions; the n-th is arbitrary in both
    assert np.allclose(mean, x.mean(axis=0), atol=1e-6)
    assert np.allclose(np.abs(np.sum(basis[:k].astype(np.float64) * vt[:k], axis=1)), 1.0, atol=1e-4)
    assert not basis[min(dense_codes.COMPONENTS, n):].any()
