"""Approximate dense search for large snapshots: a 64-d PCA projection scanned first, the best
few thousand rows rescored exactly from the float32 matrix.

Why: an exact scan reads the whole n × 384 float32 matrix per question; at 1M chunks that is
1.5 GB and ~130-180 ms on this machine whatever the code (memory-bound). The projection is
n × 64 float32 (256 MB at 1M, one BLAS matrix-vector product), and only ``oversample`` rows of
the full matrix are read back.

Why PCA and not sign bits: measured on the real MiniLM vectors of the Django and Git
collections (12,363 chunks, 125 real questions), dense top-10 recall after exact rescoring of
the best M candidates was, for M = 100 / 250 / 500 / 1000:
sign bits + Hamming 0.91 / 0.97 / 0.98 / 0.99; 64-d PCA 0.97 / 0.99 / 0.99 / 1.00. Sign bits
need ~8% of the collection rescored for 0.99, which at 1M is 80k rows; and numpy's Hamming
scan (XOR + bitwise_count, then a partition over many tied distances) cost 15-17 ms at 1M,
no less than the 64-d product. Below ``APPROX_MIN`` chunks search stays exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

COMPONENTS = 64


def components_for(dim: int) -> int:
    """Projection width for ``dim``-d vectors: 64 up to 1,024-d; 128 above, where 64 components hold
    less of a wide model's variance (bench/results/dims.md, synthetic vectors shaped like embeddings:
    recall@10 with 2% of the rows rescored 1.000 at 384-d, 0.994 at 768-d and 0.985 at 3,072-d with
    64 components; 0.995 at 3,072-d with 128)."""
    return COMPONENTS if dim <= 1024 else 2 * COMPONENTS
APPROX_MIN = 200_000  # chunks: at and above this the dense branch scans the codes (below: exact, as before)
OVERSAMPLE = 4_000  # rows rescored exactly per question
FIT_SAMPLE = 20_000  # rows the projection is fitted on
SEED = 20261123
BLOCK = 65_536


@dataclass(frozen=True)
class DenseCodes:
    """The projection of every row and what projects a question onto it."""

    mean: np.ndarray  # (384,) float32
    basis: np.ndarray  # (COMPONENTS, 384) float32, orthonormal rows
    codes: np.ndarray  # (n, COMPONENTS) float32, memory-mapped

    def approximate(self, q: np.ndarray) -> np.ndarray:
        """Per row, (x − mean)·q as the projection sees it: the order of x·q up to a constant."""
        return self.codes @ (self.basis @ q.astype(np.float32))

    def candidates(self, q: np.ndarray, m: int, mask: np.ndarray | None = None) -> np.ndarray:
        """The ``m`` rows the projection ranks best (among ``mask``), unordered."""
        h = self.approximate(q)
        if mask is None:
            return best_rows(h, min(m, len(h))) if m > 0 and len(h) else np.zeros(0, dtype=np.int64)
        eligible = np.flatnonzero(mask)
        if len(eligible) <= m:  # a narrow path filter: every eligible row is rescored (exact)
            return eligible.astype(np.int64)
        return eligible[best_rows(h[eligible], m)]


def best_rows(h: np.ndarray, m: int, step: int = 16) -> np.ndarray:
    """The ``m`` rows with the largest ``h`` (unordered). A partition of all n costs ~4 ms at 1M;
    a strided sample gives a threshold that keeps ~2m rows in one pass, and it is safe whenever
    at least m rows pass it (then the m-th largest value passes too)."""
    n = len(h)
    if n > 50 * m:
        sample = h[::step]
        keep = min(len(sample), 2 * m // step + 16)
        t = np.partition(sample, len(sample) - keep)[len(sample) - keep]
        rows = np.flatnonzero(h >= t)
        if len(rows) >= m:
            return rows[np.argpartition(h[rows], len(rows) - m)[len(rows) - m :]].astype(np.int64)
    return np.argpartition(h, n - m)[n - m :].astype(np.int64)


def fit(dense: np.ndarray, components: int = COMPONENTS, sample: int = FIT_SAMPLE) -> tuple[np.ndarray, np.ndarray]:
    """Mean and principal directions of a seeded sample of rows."""
    n = len(dense)
    rows = np.sort(np.random.default_rng(SEED).choice(n, size=sample, replace=False)) if n > sample else np.arange(n)
    x = np.asarray(dense[rows], dtype=np.float64)
    dim = dense.shape[1]
    mean = x.mean(axis=0) if n else np.zeros(dim)
    # the top eigenvectors of the d × d scatter matrix are the SVD's top right singular vectors (signs
    # aside, which cancel: codes and queries use the same basis) at a fraction of the cost: an SVD of
    # 731 × 384 took 2.4 s on this machine under load (OpenBLAS threads fighting for 2 busy cores), the
    # product and eigh 0.2 s; it was most of the ~5 s an ingest's snapshot publish took
    xc = x - mean
    vt = np.linalg.eigh(xc.T @ xc)[1][:, ::-1].T if n else np.eye(dim)
    basis = np.zeros((components, dim))
    k = min(components, len(vt), max(n, 1))  # as the thin SVD had: no more directions than rows
    basis[:k] = vt[:k]
    return mean.astype(np.float32), basis.astype(np.float32)


def write_codes(d: Path, dense: np.ndarray) -> None:
    """``dense_codes.npy`` (n × 64 float32) and ``dense_basis.npy`` (row 0 the mean, then the basis)."""
    k = components_for(dense.shape[1])
    mean, basis = fit(dense, components=k)
    np.save(d / "dense_basis.npy", np.vstack([mean[None, :], basis]))
    out = np.lib.format.open_memmap(d / "dense_codes.npy", mode="w+", dtype=np.float32, shape=(len(dense), k))
    for lo in range(0, len(dense), BLOCK):
        block = np.asarray(dense[lo : lo + BLOCK], dtype=np.float32)
        out[lo : lo + len(block)] = (block - mean) @ basis.T
    out.flush()
    del out


def read_codes(d: Path, n: int, dim: int) -> DenseCodes:
    """The codes of a snapshot directory (ValueError when they do not fit its n and dimension)."""
    mb = np.load(d / "dense_basis.npy", allow_pickle=False)
    codes = np.asarray(np.load(d / "dense_codes.npy", mmap_mode="r", allow_pickle=False))
    k = components_for(dim)
    if mb.shape != (k + 1, dim) or codes.shape != (n, k) or codes.dtype != np.float32:
        raise ValueError("dense codes do not fit the snapshot")
    return DenseCodes(mb[0].astype(np.float32), np.ascontiguousarray(mb[1:], dtype=np.float32), codes)


def recall_at(dense: np.ndarray, queries: np.ndarray, oversample: tuple[int, ...], k: int = 10) -> dict[int, float]:
    """Mean top-``k`` recall of projection + exact rescoring against the exact scan, per
    ``oversample`` (how the default was chosen: bench/results/scale.md)."""
    mean, basis = fit(dense, components=components_for(dense.shape[1]))
    codes = DenseCodes(mean, basis, np.vstack([(np.asarray(dense[lo : lo + BLOCK]) - mean) @ basis.T
                                               for lo in range(0, len(dense), BLOCK)]).astype(np.float32))
    hits = {m: 0 for m in oversample}
    for q in queries.astype(np.float32):
        exact = dense @ q
        truth = set(np.argpartition(-exact, k - 1)[:k].tolist())
        approx = codes.approximate(q)
        for m in oversample:
            cand = np.argpartition(approx, len(approx) - m)[len(approx) - m :] if m < len(approx) else np.arange(len(approx))
            best = cand[np.argpartition(-exact[cand], min(k, len(cand)) - 1)[:k]]
            hits[m] += len(truth & set(best.tolist()))
    return {m: round(h / (k * len(queries)), 4) for m, h in hits.items()}
