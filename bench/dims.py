"""``ragcore bench dims``: recall of the approximate dense search (dense_codes.py: a 64-d PCA
projection, then the best M rows rescored exactly) for embedding widths 384 to 3,072.

No model of those widths runs here, so the vectors are synthetic but shaped like real embeddings:
a shared mean direction (real sentence embeddings are anisotropic: MiniLM's mean has norm ~0.74)
plus a random rotation of independent coordinates whose variances fall as k^-beta. ``beta`` is
fitted so that at 384-d the top 64 components hold the share of variance they hold in real MiniLM
vectors (0.80 on a real snapshot here; ``--real DENSE.npy`` re-measures it). Two spectra per width:

* ``same decay``: the same k^-beta at every width (a wider model adds small components);
* ``spread``: a flatter decay, chosen so that the top 64·D/384 components hold what the top 64
  hold at 384-d: a model that spreads its variance over proportionally more directions, so the
  top 64 hold much less (the pessimistic case). (Stretching a power law instead changes nothing:
  (k·384/D)^-beta is k^-beta times a constant.)

Questions are chunks moved away (cosine ~0.65 to the chunk they come from, as a question to its
answer passage), so each has real near neighbours. Recall@10 is measured against the exact scan,
per rescored M, with the 64 components shipped and with more.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np

from ragcore.storage.dense_codes import COMPONENTS, DenseCodes, fit

SEED = 20261127
MINILM_TOP64 = 0.80
QUERY_NOISE = 1.0  # how far a question is moved from its chunk (cosine to it: "question_cosine" in the results)


def spectrum(dim: int, beta: float, spread: bool) -> np.ndarray:
    k = np.arange(1, dim + 1, dtype=np.float64)
    if spread:
        beta = fit_beta(spectrum(384, beta, False)[:64].sum(), dim=dim, top=64 * dim // 384)
    lam = k ** -beta
    return lam / lam.sum()


def fit_beta(top64: float, dim: int = 384, top: int = 64) -> float:
    """The decay whose ``dim``-d spectrum puts ``top64`` of the variance in its first ``top`` components."""
    lo, hi = 0.0, 4.0
    for _ in range(60):
        mid = (lo + hi) / 2
        share = spectrum(dim, mid, False)[:top].sum()
        lo, hi = (mid, hi) if share < top64 else (lo, mid)
    return (lo + hi) / 2


def fit_cov(dense: np.ndarray, components: int) -> tuple[np.ndarray, np.ndarray]:
    """dense_codes.fit's projection (same seeded sample, same principal directions) through the
    covariance's eigenvectors: at 3,072-d an SVD of the 20,000-row sample costs ~4x more."""
    from ragcore.storage.dense_codes import FIT_SAMPLE, SEED as FIT_SEED

    n = len(dense)
    rows = np.sort(np.random.default_rng(FIT_SEED).choice(n, size=FIT_SAMPLE, replace=False)) if n > FIT_SAMPLE else np.arange(n)
    x = np.asarray(dense[rows], dtype=np.float64)
    mean = x.mean(axis=0)
    xc = x - mean
    w, v = np.linalg.eigh(xc.T @ xc)
    basis = v[:, np.argsort(w)[::-1][:components]].T
    return mean.astype(np.float32), basis.astype(np.float32)


def real_top64(path: Path) -> float:
    d = np.load(path, allow_pickle=False).astype(np.float64)
    s = np.linalg.svd(d - d.mean(axis=0), compute_uv=False) ** 2
    return float(s[:64].sum() / s.sum())


def synthetic(n: int, queries: int, dim: int, beta: float, stretched: bool, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    # no random rotation: PCA, dot products and so recall do not change under one, and at 3,072-d
    # rotating 200k rows would cost ~4 TFLOP
    sd = np.sqrt(spectrum(dim, beta, stretched)).astype(np.float32)
    mean = rng.standard_normal(dim).astype(np.float32)
    mean *= 0.74 / np.linalg.norm(mean)

    def draw(m: int) -> np.ndarray:
        x = rng.standard_normal((m, dim)).astype(np.float32) * sd * 0.67 + mean  # unit rows' mean: norm ~0.74, as MiniLM's
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    dense = np.vstack([draw(min(20_000, n - lo)) for lo in range(0, n, 20_000)])
    src = dense[rng.choice(n, size=queries, replace=False)]
    noise = draw(queries) - draw(queries)  # two draws' difference: a deviation without the mean
    q = src + QUERY_NOISE * noise
    return dense, (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def recall(dense: np.ndarray, q: np.ndarray, fitted: tuple[np.ndarray, np.ndarray], components: int,
           ms: tuple[int, ...], k: int = 10) -> dict[str, float]:
    """``fitted``: dense_codes.fit with the most components measured (PCA's first c rows are its top c)."""
    mean, basis = fitted[0], np.ascontiguousarray(fitted[1][:components])
    codes = DenseCodes(mean, basis, ((dense - mean) @ basis.T).astype(np.float32))
    exact = q @ dense.T
    hits = {m: 0 for m in ms}
    for i in range(len(q)):
        truth = set(np.argpartition(-exact[i], k - 1)[:k].tolist())
        approx = codes.approximate(q[i])
        for m in ms:
            cand = np.argpartition(approx, len(approx) - m)[len(approx) - m :]
            best = cand[np.argpartition(-exact[i][cand], k - 1)[:k]]
            hits[m] += len(truth & set(best.tolist()))
    return {str(m): round(h / (k * len(q)), 4) for m, h in hits.items()}


def bench_dims(dims: list[int], n: int, queries: int, ms: tuple[int, ...], components: list[int],
               results: Path, real: Path | None = None) -> dict[str, Any]:
    top64 = real_top64(real) if real else MINILM_TOP64
    beta = fit_beta(top64)
    rows: list[dict[str, Any]] = []
    payload = {"bench": "dims", "n": n, "queries": queries, "beta": round(beta, 4), "minilm_top64": round(top64, 3),
               "oversample": list(ms), "shipped_components": COMPONENTS, "rows": rows}
    for dim in dims:
        for stretched in (False, True) if dim != 384 else (False,):  # at 384 both spectra are one (stretched: spread)
            rng = np.random.default_rng(SEED + dim)
            t0 = time.perf_counter()
            dense, q = synthetic(n, queries, dim, beta, stretched, rng)
            fitted = fit(dense, components=max(components)) if dim <= 768 else fit_cov(dense, max(components))
            for c in components:
                r = recall(dense, q, fitted, c, ms)
                rows.append({"dim": dim, "spectrum": "spread" if stretched else "same decay", "components": c,
                             "top_share": round(float(spectrum(dim, beta, stretched)[:c].sum()), 3), "recall": r,
                             "seconds": round(time.perf_counter() - t0, 1)})
                print(json.dumps(rows[-1]), flush=True)
                _save(results, payload)  # after each row: a long run stopped early keeps what it measured
            del dense, q, fitted
    return payload


def _save(results: Path, payload: dict[str, Any]) -> None:
    results.mkdir(parents=True, exist_ok=True)
    (results / "dims.json").write_text(json.dumps(payload, indent=1))
    (results / "dims.md").write_text(summary(payload))


def summary(p: dict[str, Any]) -> str:
    ms = p["oversample"]
    shares = ", ".join(f"{m / p['n']:.1%}" for m in ms)
    out = [f"# bench dims: approximate dense recall@10 by embedding width\n",
           f"{p['n']:,} synthetic unit vectors per width, {p['queries']} questions (each a chunk moved to cosine ~0.65), "
           f"spectrum k^-{p['beta']} (top 64 of 384 hold {p['minilm_top64']} of the variance, as in real MiniLM). "
           f"Recall against the exact scan after rescoring the best M of the projection (M as a share of the "
           f"rows: {shares}); shipped: {p['shipped_components']} components up to 1,024-d, 128 above "
           f"(dense_codes.components_for), "
           f"M = 4,000 at ≥ 200k chunks (2% at 200k, 0.8% at 500k). `bench/dims.py` says how the vectors are made.\n",
           "| width | spectrum | components | variance held | " + " | ".join(f"M = {m:,}" for m in ms) + " |",
           "|---|---|---|---|" + "---|" * len(ms)]
    for r in p["rows"]:
        out.append(f"| {r['dim']} | {r['spectrum']} | {r['components']} | {r['top_share']} | "
                   + " | ".join(str(r["recall"][str(m)]) for m in ms) + " |")
    return "\n".join(out) + "\n"
