"""`ragcore bench scale`: candidate embedded engines at 10k, 100k and 1M chunks, on the same data.

For each engine and size this measures write throughput, the open time of a cold process, hybrid
query latency (dense + BM25, fused by ragcore's own ``rank_pool`` so every chunk keeps its cosine
and BM25), peak RSS and disk size. Engines:

- ``qdrant-local``: today's path, qdrant-client local mode written through ``Store.write_chunks``
  and searched by the in-process ``SearchIndex``.
- ``edge-exact`` / ``edge-hnsw``: Qdrant's own engine in process (``qdrant-edge-py``, the optional
  core dependency); two branch queries fused here, since its prefetch + RRF returns only the fused score.
- ``ragcore-snapshot``: ragcore's own query snapshot (``snapshot.py``, format 2) searched by
  ``SearchIndex`` + ``retrieval.pools.local_pool``: exact below ``dense_codes.APPROX_MIN`` chunks, a
  projected dense scan with exact rescoring above it (its recall is reported per size, and on real
  embeddings with ``--real-vectors``).

Data: real Django chunks (ragcore's chunker and BM25) replicated to size with a ``copyN/`` path
prefix; dense vectors are seeded random unit vectors (timing does not depend on their meaning);
queries are real Django questions embedded by the ONNX model. Each write and each query phase runs
in its own process, so open time is a cold process's and peak RSS is the phase's own; a watchdog
kills a phase whose RSS passes the limit (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ragcore.settings.config import RagcoreSettings
from ragcore.ingest.chunking import chunk_id
from ragcore.retrieval.fusion import PoolEntry, rank_pool
from ragcore.encoders.sparse import Bm25Encoder, SparseVec
from ragcore.storage.store import DENSE, SPARSE, chunk_context, embed_text, point_id, utc_now
from ragcore.types import Chunk

DIM = 384
TOP = 10
COLLECTION = "bench"
SEED = 20261122
WRITE_BATCH = 512  # the batch ``bench_common.pad_collection`` and ingest hand to Store.write_chunks
LOCAL_MAX = 100_000  # local mode holds every point in memory: 4.2 GB to write 100k, ~40 GB at 1M
RECALL_AT = (250, 1000, 2000, 4000, 8000)  # oversampling sizes whose dense recall@10 the report shows


# ------------------------------------------------------------------ data


@dataclass(frozen=True)
class Base:
    """The real chunks everything is replicated from, their BM25 vectors (CSR) and the queries."""

    chunks: tuple[Chunk, ...]
    doc_chunks: dict[str, int]  # chunks per base path (a payload field)
    indptr: np.ndarray
    terms: np.ndarray  # uint32 term ids (ragcore's hashed BM25 terms)
    weights: np.ndarray  # float32 BM25 document weights
    q_dense: np.ndarray  # (questions, 384) real question embeddings
    q_sparse: tuple[SparseVec, ...]


@dataclass(frozen=True)
class DataSet:
    base: Base
    dense: np.ndarray  # (size, 384) float32, memory-mapped
    size: int

    def chunk(self, i: int) -> Chunk:
        c = self.base.chunks[i % len(self.base.chunks)]
        k = i // len(self.base.chunks)
        if not k:
            return c
        path = f"copy{k}/{c.path}"
        return replace(c, path=path, chunk_id=chunk_id(path, c.start_line, c.end_line, c.text))

    def sparse(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        b = i % len(self.base.chunks)
        lo, hi = self.base.indptr[b], self.base.indptr[b + 1]
        return self.base.terms[lo:hi], self.base.weights[lo:hi]

    def doc_chunks(self, i: int) -> int:
        return self.base.doc_chunks[self.base.chunks[i % len(self.base.chunks)].path]

    def dense_rows(self, lo: int, hi: int) -> np.ndarray:
        """Rows ``lo:hi`` read from the file, not through the mapping: pages read through a mapping
        stay in this process's RSS (1.5 GB at 1M) and would be counted against the engine written."""
        path = getattr(self.dense, "filename", None)
        if path is None:
            return np.asarray(self.dense[lo:hi])
        header = self.dense.offset
        with open(path, "rb") as f:
            f.seek(header + lo * DIM * 4)
            return np.fromfile(f, dtype=np.float32, count=(hi - lo) * DIM).reshape(hi - lo, DIM)


def base_chunks(corpus: Path, settings: RagcoreSettings) -> list[Chunk]:
    """The corpus cut by ragcore's own chunker, chunks with identical text dropped."""
    from bench.common import sample_files as _sample_files
    from ragcore.ingest.chunking import chunk_document
    from ragcore.ingest.read.loaders import LoadError, load_file

    out: list[Chunk] = []
    seen: set[str] = set()
    for f in _sample_files(corpus, None):
        try:
            doc = load_file(f, corpus, max_bytes=settings.max_file_bytes)
        except LoadError:
            continue
        for c in chunk_document(doc, chunk_size=settings.chunk_size, chunk_overlap=settings.chunk_overlap):
            if c.text not in seen:
                seen.add(c.text)
                out.append(c)
    return out


def build_base(corpus: Path, questions: list[str], encoder=None) -> Base:
    from ragcore.encoders.minilm import OnnxMiniLM

    chunks = base_chunks(corpus, RagcoreSettings())
    if not chunks:  # a wrong --corpus (or a relative default from another folder) would divide by zero later
        raise SystemExit(f"no chunks under {corpus}: point --corpus at a folder of documents")
    bm25 = Bm25Encoder()
    vecs = [bm25.encode_document(embed_text(c)) for c in chunks]
    indptr = np.cumsum([0] + [len(v.indices) for v in vecs]).astype(np.int64)
    terms = np.fromiter((i for v in vecs for i in v.indices), dtype=np.uint32, count=int(indptr[-1]))
    weights = np.fromiter((x for v in vecs for x in v.values), dtype=np.float32, count=int(indptr[-1]))
    counts: dict[str, int] = {}
    for c in chunks:
        counts[c.path] = counts.get(c.path, 0) + 1
    q_dense = (encoder or OnnxMiniLM()).encode(questions).astype(np.float32)
    return Base(tuple(chunks), counts, indptr, terms, weights, q_dense,
                tuple(bm25.encode_query(q) for q in questions))


def write_dense(path: Path, size: int, seed: int = SEED, block: int = 65_536) -> None:
    """Seeded random unit vectors, written block by block (1M x 384 float32 is 1.5 GB)."""
    out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(size, DIM))
    rng = np.random.default_rng(seed)
    for lo in range(0, size, block):
        v = rng.standard_normal((min(block, size - lo), DIM), dtype=np.float32)
        out[lo : lo + len(v)] = v / np.linalg.norm(v, axis=1, keepdims=True)
    out.flush()
    del out


def load_dataset(workdir: Path, size: int) -> DataSet:
    with open(workdir / "base.pkl", "rb") as f:
        base = pickle.load(f)
    return DataSet(base, np.load(workdir / f"dense-{size}.npy", mmap_mode="r"), size)


def payload_of(c: Chunk, doc_chunks: int) -> dict[str, Any]:
    """The payload a chunk point carries (``Chunk.to_payload``), with its text as a plain key
    (``Chunk.from_payload`` reads it there before LlamaIndex's ``_node_content``)."""
    return c.to_payload(text=c.text, doc_chunks=doc_chunks, context=chunk_context(c))


# ------------------------------------------------------------------ engine (a): local mode + SearchIndex


def progress(done: int, t0: float) -> None:
    """A line on stderr the parent reads if it has to stop a slow write: the rate so far."""
    print(f"progress {done} {time.perf_counter() - t0:.2f}", file=sys.stderr, flush=True)


def local_write(data: DataSet, store_dir: Path, engine: str = "local") -> dict[str, Any]:
    """``engine="edge"`` is the embedded default's write: the same Store calls into Qdrant Edge,
    then ``write_meta`` publishes the query snapshot (read back by ``store_snapshot_open``)."""
    from ragcore.storage.store import Store

    t0 = time.perf_counter()
    store = Store(RagcoreSettings(data_dir=store_dir, embedded_engine=engine))
    # one write session, as an ingest holds: outside one, each write would open embedded Qdrant
    # again (loading every point written so far) and close it (the first runs measured that)
    with store.session():
        store.ensure_collection(COLLECTION)
        for lo in range(0, data.size, WRITE_BATCH):
            ids = range(lo, min(lo + WRITE_BATCH, data.size))
            chunks = [data.chunk(i) for i in ids]
            counts = {c.path: data.doc_chunks(i) for c, i in zip(chunks, ids)}
            store.write_chunks(COLLECTION, chunks, data.dense_rows(lo, lo + len(chunks)), counts)
            progress(lo + len(chunks), t0)
        store.write_meta(COLLECTION, {"corpus_version": "bench", "built_at": utc_now(), "documents": 0})
    store.close()
    return {}


def local_open(store_dir: Path) -> Any:
    from ragcore.storage.search_index import SearchIndex
    from ragcore.storage.store import Store

    store = Store(RagcoreSettings(data_dir=store_dir, embedded_engine="local"))
    return store, SearchIndex(store.load(COLLECTION))


def local_pool(handle: Any, q_dense: np.ndarray, q_sparse: SparseVec, n: int) -> list[PoolEntry]:
    """``handle`` is (store or None, SearchIndex)."""
    from ragcore.retrieval.pools import local_pool as pool

    return pool(handle[1], q_dense, q_sparse, RagcoreSettings().with_(retrieval_mode="hybrid", candidates=n))


# ------------------------------------------------------------------ engine (b): qdrant-edge-py


def edge_write(data: DataSet, store_dir: Path, hnsw: bool = False) -> dict[str, Any]:
    import qdrant_edge as qe

    cfg = qe.EdgeConfig(vectors={DENSE: qe.EdgeVectorParams(size=DIM, distance=qe.Distance.Cosine)},
                        sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)})
    shard = qe.EdgeShard.create(str(store_dir), cfg)
    t0 = time.perf_counter()
    for lo in range(0, data.size, 1000):
        points = []
        for i in range(lo, min(lo + 1000, data.size)):
            c = data.chunk(i)
            idx, vals = data.sparse(i)
            vec = {DENSE: data.dense[i].tolist(), SPARSE: qe.SparseVector(idx.tolist(), vals.tolist())}
            points.append(qe.Point(point_id(c.chunk_id), vec, payload_of(c, data.doc_chunks(i))))
        shard.update(qe.UpdateOperation.upsert_points(points))
        progress(lo + len(points), t0)
    shard.flush()
    extra: dict[str, Any] = {}
    if hnsw:  # the HNSW graph is built by the optimizer; its time is part of the write
        t0 = time.perf_counter()
        shard.optimize()
        extra["index_build_s"] = round(time.perf_counter() - t0, 2)
        extra["indexed_vectors"] = shard.info().indexed_vectors_count  # 0 would mean no graph was built
    shard.close()
    return extra


def edge_open(store_dir: Path) -> Any:
    import qdrant_edge as qe

    return qe.EdgeShard.load(str(store_dir))


def edge_pool(shard: Any, q_dense: np.ndarray, q_sparse: SparseVec, n: int, exact: bool = True) -> list[PoolEntry]:
    """Two branch queries, merged as ``retrieval.pools.server_pool`` merges a server's: every entry
    gets its cosine (sparse-only hits from their stored vector), BM25 where the sparse branch found it."""
    import qdrant_edge as qe

    dense_hits = shard.query(qe.QueryRequest(
        limit=n, query=qe.Query.Nearest(q_dense.tolist(), using=DENSE), params=qe.SearchParams(exact=exact),
        with_payload=True))
    sparse_hits = shard.query(qe.QueryRequest(
        limit=n, query=qe.Query.Nearest(qe.SparseVector(list(q_sparse.indices), list(q_sparse.values)), using=SPARSE),
        with_payload=True, with_vector=[DENSE])) if q_sparse.indices else []
    from ragcore.retrieval.pools import merge_branches

    return merge_branches(dense_hits, sparse_hits, q_dense)


# ------------------------------------------------------------------ engine (c'): ragcore's own query snapshot


def snapshot_write(data: DataSet, store_dir: Path) -> dict[str, Any]:
    """What the Store publishes after a write (``snapshot.py``), from the same chunks and vectors."""
    from ragcore.storage.snapshot import SnapshotFiles, Stamp, sparse_columns

    chunks = [data.chunk(i) for i in range(data.size)]
    sparse = sparse_columns([data.sparse(i) for i in range(data.size)])
    SnapshotFiles(store_dir).publish(COLLECTION, chunks=chunks, dense=np.asarray(data.dense), sparse=sparse,
                                     headings={}, meta={"corpus_version": "bench"}, stamp=Stamp(0, 0, 0))
    return {}


def snapshot_open(store_dir: Path) -> Any:
    from ragcore.storage.search_index import SearchIndex
    from ragcore.storage.snapshot import SnapshotFiles

    files = SnapshotFiles(store_dir)
    return None, SearchIndex.from_snapshot(files.data(files.manifest(COLLECTION)))


def store_snapshot_open(store_dir: Path) -> Any:
    """The snapshot a Store published under its data folder, opened as ``ragcore ask`` opens it."""
    return snapshot_open(store_dir / "snapshots")


# ------------------------------------------------------------------ the engines


@dataclass(frozen=True)
class EngineSpec:
    name: str
    label: str
    write: Callable[[DataSet, Path], dict[str, Any]]
    open: Callable[[Path], Any]
    pool: Callable[[Any, np.ndarray, SparseVec, int], list[PoolEntry]]
    max_size: int | None = None
    skip_reason: str = ""
    needs: str | None = None  # an optional module the engine needs


ENGINES: dict[str, EngineSpec] = {
    "qdrant-local": EngineSpec(
        "qdrant-local", "(a) Qdrant local mode + in-process numpy SearchIndex (the store of record before Edge; "
        "`RAGCORE_EMBEDDED_ENGINE=local`)", local_write, local_open,
        local_pool, LOCAL_MAX, "local mode holds every point in memory (4.2 GB peak RSS to write 100,000 "
        "points here, so about 40 GB at 1M, more than this machine has) and loads them all on open"),
    "edge-exact": EngineSpec(
        "edge-exact", "(b) qdrant-edge-py 0.9 in process, exact dense", edge_write, edge_open, edge_pool,
        needs="qdrant_edge"),
    "edge-hnsw": EngineSpec(
        "edge-hnsw", "(b) qdrant-edge-py 0.9 in process, HNSW dense", lambda d, p: edge_write(d, p, hnsw=True),
        edge_open, lambda h, qd, qs, n: edge_pool(h, qd, qs, n, exact=False), 100_000,
        "the issue measured > 10 min and 17 GB peak RSS for the HNSW build at 1M, over this shared "
        "machine's 12 GB limit", needs="qdrant_edge"),
    "ragcore-edge": EngineSpec(
        "ragcore-edge", "(b') the embedded default: `Store.write_chunks` into Qdrant Edge, the store of record "
        "(`edge_client.py`), then `write_meta` publishes the query snapshot (the write column includes it); "
        "queries as `ragcore-snapshot`", lambda d, p: local_write(d, p, engine="edge"), store_snapshot_open,
        local_pool, needs="qdrant_edge"),
    "ragcore-snapshot": EngineSpec(
        "ragcore-snapshot", "(c) ragcore's query snapshot, format 2 (`snapshot.py`: every file memory-mapped, "
        "chunks decoded per row, BM25 summed from the query terms' postings; from 200,000 chunks the dense branch "
        "scans a 64-d projection and rescores its best 4,000 exactly, `dense_codes.py`) + SearchIndex.from_snapshot "
        "+ `local_pool`", snapshot_write, snapshot_open, local_pool, needs="ragcore.storage.snapshot"),
}


def available_engines() -> list[str]:
    import importlib.util

    return [n for n, s in ENGINES.items() if s.needs is None or importlib.util.find_spec(s.needs) is not None]


# ------------------------------------------------------------------ worker (one phase, one process)


def peak_rss_mb() -> float:
    """This process's peak RSS. Not ``getrusage``'s ru_maxrss: Linux carries that over from the
    parent's image across fork + exec, so a child would report the parent's peak."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def run_write(spec: EngineSpec, workdir: Path, size: int, store_dir: Path) -> dict[str, Any]:
    data = load_dataset(workdir, size)
    t0 = time.perf_counter()
    extra = spec.write(data, store_dir)
    secs = time.perf_counter() - t0
    return {"write_s": round(secs, 2), "points_per_s": round(size / secs, 1), "write_peak_rss_mb": peak_rss_mb(), **extra}


def _hybrid(pool: list[PoolEntry], settings: RagcoreSettings) -> list[str]:
    ranked = rank_pool(pool, retrieval_mode="hybrid", fusion="rrf", rrf_k=settings.rrf_k, dense_weight=settings.dense_weight)
    return [c.chunk.chunk_id for c in ranked[:TOP]]


def _answer(pool: list[PoolEntry], settings: RagcoreSettings) -> dict[str, Any]:
    """What one query returned: the top-10 of each branch and of the fusion, and whether the
    sparse branch had tied scores (ties may be broken differently by each engine)."""
    dense = sorted((e for e in pool if e.dense_rank is not None), key=lambda e: e.dense_rank)
    sparse = sorted((e for e in pool if e.sparse_rank is not None), key=lambda e: e.sparse_rank)
    bm25 = [round(e.bm25 or 0.0, 3) for e in sparse]
    return {"dense": [e.chunk.chunk_id for e in dense[:TOP]], "hybrid": _hybrid(pool, settings),
            "bm25_top": bm25[:TOP], "sparse_tied": len(set(bm25)) < len(bm25)}


def run_query(spec: EngineSpec, workdir: Path, size: int, store_dir: Path, repeats: int, candidates: int) -> dict[str, Any]:
    """Open the store in this fresh process, then time every question ``repeats`` times:
    both branches, the merge and ragcore's fusion (the question embedding is not timed)."""
    with open(workdir / "base.pkl", "rb") as f:
        base: Base = pickle.load(f)
    settings = RagcoreSettings()
    t0 = time.perf_counter()
    handle = spec.open(store_dir)
    open_s = time.perf_counter() - t0
    qs = list(zip(base.q_dense, base.q_sparse))
    first = _hybrid(spec.pool(handle, qs[0][0], qs[0][1], candidates), settings)
    first_s = time.perf_counter() - t0
    ready_at = time.time()
    answers = [_answer(spec.pool(handle, qd, qsp, candidates), settings) for qd, qsp in qs]
    times: list[float] = []
    cpu: list[float] = []  # CPU time of this process (all its threads): what a loaded machine distorts least
    for _ in range(repeats):
        for qd, qsp in qs:
            t, c = time.perf_counter(), time.process_time()
            _hybrid(spec.pool(handle, qd, qsp, candidates), settings)
            times.append((time.perf_counter() - t) * 1e3)
            cpu.append((time.process_time() - c) * 1e3)
    a = np.asarray(times)
    return {"open_s": round(open_s, 3), "open_first_query_s": round(first_s, 3), "ready_at": ready_at,
            "first_top": first, "query_p50_ms": round(float(np.percentile(a, 50)), 2),
            "query_p95_ms": round(float(np.percentile(a, 95)), 2), "queries_timed": int(a.size),
            "query_cpu_p50_ms": round(float(np.percentile(cpu, 50)), 2), "query_cpu_p95_ms": round(float(np.percentile(cpu, 95)), 2),
            "query_peak_rss_mb": peak_rss_mb(), "answers": answers}


def worker_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.scale")
    p.add_argument("phase", choices=("write", "query"))
    p.add_argument("--engine", required=True, choices=sorted(ENGINES))
    p.add_argument("--workdir", type=Path, required=True)
    p.add_argument("--size", type=int, required=True)
    p.add_argument("--store", type=Path, required=True)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--candidates", type=int, default=50)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    spec = ENGINES[a.engine]
    if a.phase == "write":
        res = run_write(spec, a.workdir, a.size, a.store)
    else:
        res = run_query(spec, a.workdir, a.size, a.store, a.repeats, a.candidates)
    a.out.write_text(json.dumps(res))
    return 0


# ------------------------------------------------------------------ the run (parent process)


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


@dataclass(frozen=True)
class RunLimits:
    rss_mb: float = 12_000.0  # others share this machine: a phase passing this is killed
    phase_timeout_s: float = 3600.0
    stop_at: float | None = None  # epoch seconds after which no new phase starts
    repeats: int = 2
    candidates: int = 50
    # OpenBLAS's own threads spin and wait on a loaded 2-core machine: one 10k x 384 product took
    # 17-25 ms with its default 2 threads and 1.5-4.5 ms with 1 in the same minute. None = library default.
    blas_threads: int | None = 1


def spawn(phase: str, engine: str, workdir: Path, size: int, store: Path, limits: RunLimits) -> dict[str, Any]:
    """One phase in a fresh process, watched: killed if its RSS passes the limit or it overruns."""
    out = workdir / f"{engine}-{size}-{phase}.json"
    out.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "bench.scale", phase, "--engine", engine, "--workdir", str(workdir),
           "--size", str(size), "--store", str(store), "--repeats", str(limits.repeats),
           "--candidates", str(limits.candidates), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parent.parent),
                                                         os.environ.get("PYTHONPATH", "")])}
    if limits.blas_threads:
        env.update({v: str(limits.blas_threads) for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")})
    load = round(os.getloadavg()[0], 2)
    spawned = time.time()
    with open(workdir / f"{engine}-{size}-{phase}.stderr", "w") as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env)
        peak, why = 0.0, None
        while proc.poll() is None:
            peak = max(peak, _rss_mb(proc.pid))
            if peak > limits.rss_mb or time.time() - spawned > limits.phase_timeout_s:
                why = f"killed: RSS {peak:.0f} MB > {limits.rss_mb:.0f} MB" if peak > limits.rss_mb else "killed: timeout"
                proc.kill()
                proc.wait()
            time.sleep(0.1)
    if why or proc.returncode or not out.is_file():
        return _failed(workdir / f"{engine}-{size}-{phase}.stderr", why or f"{phase} failed (exit {proc.returncode})",
                       {f"{phase}_load_1m": load, f"{phase}_peak_rss_mb_seen": round(peak, 1)})
    res = json.loads(out.read_text())
    if "ready_at" in res:
        res["process_to_first_query_s"] = round(res.pop("ready_at") - spawned, 2)
    return {**res, f"{phase}_load_1m": load}


def _failed(stderr: Path, why: str, extra: dict[str, Any]) -> dict[str, Any]:
    """A stopped phase: why, the end of its stderr, and the write rate it had reached."""
    text = stderr.read_text().splitlines()
    lines = [ln.split() for ln in text if ln.startswith("progress ")]
    tail = "\n".join(ln for ln in text if not ln.startswith("progress "))[-600:]
    out = {"error": why if why.startswith("killed") else f"{why}: {tail}", **extra}
    if lines:
        done, secs = int(lines[-1][1]), float(lines[-1][2])
        out.update({"partial_points": done, "partial_s": secs, "points_per_s": round(done / secs, 1)})
    return out


def _disk_mb(path: Path) -> float:
    return round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20, 1) if path.exists() else 0.0


def measure(engine: str, size: int, workdir: Path, limits: RunLimits) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Write, then open and query in a second cold process; the store is deleted afterwards."""
    store = workdir / f"store-{engine}-{size}"
    shutil.rmtree(store, ignore_errors=True)
    row: dict[str, Any] = {"engine": engine, "size": size, "blas_threads": limits.blas_threads or "default"}
    try:
        row.update(spawn("write", engine, workdir, size, store, limits))
        row["disk_mb"] = _disk_mb(store)
        if "error" in row:
            return row, []
        q = spawn("query", engine, workdir, size, store, limits)
        answers = q.pop("answers", [])
        (workdir / f"answers-{engine}-{size}.json").write_text(json.dumps(answers))  # for a later --merge run
        row.update(q)
        return row, answers
    finally:
        shutil.rmtree(store, ignore_errors=True)


def agreement(ref: list[dict[str, Any]], other: list[dict[str, Any]]) -> dict[str, Any]:
    """How often ``other`` returned exactly the reference's top-10: dense (exact search must agree
    on every query), BM25 scores, and the fused list where neither engine had tied BM25 scores."""
    pairs = list(zip(ref, other))
    if not pairs:
        return {}
    comparable = [(a, b) for a, b in pairs if not a["sparse_tied"] and not b["sparse_tied"]]
    return {
        "queries": len(pairs),
        "dense_top10_same": round(sum(a["dense"] == b["dense"] for a, b in pairs) / len(pairs), 3),
        "dense_top10_overlap": round(float(np.mean([len(set(a["dense"]) & set(b["dense"])) / TOP for a, b in pairs])), 3),
        "bm25_top10_scores_same": round(sum(np.allclose(a["bm25_top"], b["bm25_top"], atol=2e-3) for a, b in pairs) / len(pairs), 3),
        "hybrid_comparable_queries": len(comparable),
        "hybrid_top10_same": round(sum(a["hybrid"] == b["hybrid"] for a, b in comparable) / len(comparable), 3) if comparable else None,
    }


def extrapolate(rows: list[dict[str, Any]], engine: str, size: int) -> dict[str, Any] | None:
    """Linear extrapolation of an engine's largest measured run to ``size`` (labelled as such)."""
    done = [r for r in rows if r["engine"] == engine and "query_p95_ms" in r]
    if not done:
        return None
    r = max(done, key=lambda r: r["size"])
    f = size / r["size"]
    return {"from_size": r["size"], "write_s": round(size / r["points_per_s"], 0), "open_s": round(r["open_s"] * f, 1),
            "query_peak_rss_mb": round(r["query_peak_rss_mb"] * f, 0), "disk_mb": round(r["disk_mb"] * f, 0),
            "query_p95_ms": round(r["query_p95_ms"] * f, 0)}


def _prepare(corpus: Path, questions: list[str], workdir: Path, encoder=None) -> Base:
    workdir.mkdir(parents=True, exist_ok=True)
    base = build_base(corpus, questions, encoder)
    with open(workdir / "base.pkl", "wb") as f:
        pickle.dump(base, f)
    return base


def _size_runs(size: int, engines: list[str], workdir: Path, limits: RunLimits, rows: list[dict[str, Any]],
               queries: np.ndarray | None = None) -> dict[str, Any]:
    """Every engine at one size, on one dense file; returns each engine's agreement with the reference
    (and, when the snapshot engine runs, its projection's recall at several oversampling sizes)."""
    if any(ENGINES[n].max_size is None or size <= ENGINES[n].max_size for n in engines):
        write_dense(workdir / f"dense-{size}.npy", size)
    answers: dict[str, list[dict[str, Any]]] = {}
    recall: dict[str, float] = {}
    try:
        if "ragcore-snapshot" in engines and queries is not None and (workdir / f"dense-{size}.npy").is_file():
            from ragcore.storage.dense_codes import recall_at

            dense = np.load(workdir / f"dense-{size}.npy", mmap_mode="r")
            recall = {str(m): r for m, r in recall_at(np.asarray(dense), queries, RECALL_AT).items()}
        for name in engines:
            spec = ENGINES[name]
            if spec.max_size is not None and size > spec.max_size:
                rows.append({"engine": name, "size": size, "skipped": spec.skip_reason,
                             "extrapolated": extrapolate(rows, name, size) if name == "qdrant-local" else None})
            elif limits.stop_at is not None and time.time() > limits.stop_at:
                rows.append({"engine": name, "size": size, "skipped": "not run: the run's time limit (--stop-at) had passed"})
            else:
                row, answers[name] = measure(name, size, workdir, limits)
                rows.append({**row, "when": utc_now()})
                print(json.dumps({k: v for k, v in row.items() if k != "first_top"}), file=sys.stderr, flush=True)
    finally:
        (workdir / f"dense-{size}.npy").unlink(missing_ok=True)
    for f in workdir.glob(f"answers-*-{size}.json"):  # engines measured by an earlier run in this workdir
        answers.setdefault(f.name[len("answers-") : -len(f"-{size}.json")], json.loads(f.read_text()))
    ref = "ragcore-snapshot" if answers.get("ragcore-snapshot") else next((n for n in answers if answers[n]), None)
    out = {"reference": ref, **{n: agreement(answers[ref], a) for n, a in answers.items() if ref and n != ref and a}}
    return {**out, "projection_recall": recall} if recall else out


def run_scale(sizes: list[int], engines: list[str], corpus: Path, questions: list[str], workdir: Path,
              limits: RunLimits, encoder=None, on_size: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Every engine at every size (smallest first); returns the report's payload, and hands the
    payload so far to ``on_size`` after each size (a long run leaves results if it is stopped)."""
    base = _prepare(corpus, questions, workdir, encoder)
    rows: list[dict[str, Any]] = []
    agree: dict[str, Any] = {}
    started = [round(x, 2) for x in os.getloadavg()]
    payload: dict[str, Any] = {}
    for size in sorted(sizes):
        agree[str(size)] = _size_runs(size, engines, workdir, limits, rows, base.q_dense)
        payload = {
            "bench": "scale", "when": utc_now(), "machine": _machine(), "load_avg_start": started,
            "versions": versions(), "base_chunks": len(base.chunks), "corpus": str(corpus), "questions": len(questions),
            "repeats": limits.repeats, "candidates": limits.candidates, "rss_limit_mb": limits.rss_mb,
            "engines": {n: ENGINES[n].label for n in engines}, "sizes": sorted(sizes), "runs": rows, "agreement": agree,
        }
        if on_size:
            on_size(payload)
    return payload


def real_recall(specs: list[str], encoder=None) -> dict[str, Any]:
    """Dense recall@10 of the projection on real embeddings: each spec is ``name=DENSE.npy:QUESTIONS.jsonl[:...]``
    (a snapshot's matrix and the questions asked of it); ``all`` is every matrix stacked, every question."""
    from ragcore.storage.dense_codes import recall_at
    from ragcore.encoders.minilm import OnnxMiniLM

    enc = encoder or OnnxMiniLM()
    sets: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for spec in specs:
        name, _, rest = spec.partition("=")
        dense_path, *q_paths = rest.split(":")
        qs = [json.loads(line)["question"] for q in q_paths for line in Path(q).read_text().splitlines() if line.strip()]
        sets[name] = (np.load(dense_path, allow_pickle=False).astype(np.float32), enc.encode(qs).astype(np.float32))
    if len(sets) > 1:
        sets["all"] = (np.vstack([d for d, _ in sets.values()]), np.vstack([q for _, q in sets.values()]))
    return {name: {"chunks": len(d), "questions": len(q), "recall": {str(m): r for m, r in recall_at(d, q, RECALL_AT).items()}}
            for name, (d, q) in sets.items()}


def _recall_md(p: dict[str, Any]) -> list[str]:
    """Dense recall@10 against the exact scan, by oversampling size (real vectors, then synthetic)."""
    rows = [(f"{n} (real MiniLM, {r['chunks']:,} chunks, {r['questions']} questions)", r["recall"])
            for n, r in p.get("real_recall", {}).items()]
    rows += [(f"synthetic random, {int(size):,} chunks, {p['questions']} questions", a["projection_recall"])
             for size, a in p["agreement"].items() if a.get("projection_recall")]
    if not rows:
        return []
    head = ["## Dense recall of the projection (64-d PCA, then exact rescoring of the best M)", "",
            "| vectors | " + " | ".join(f"M = {m:,}" for m in RECALL_AT) + " |", "|---|" + "---|" * len(RECALL_AT)]
    return head + [f"| {label} | " + " | ".join(str(r.get(str(m), "–")) for m in RECALL_AT) + " |" for label, r in rows] + [""]


def _machine() -> dict[str, Any]:
    from bench.common import machine

    m = machine()
    with open("/proc/meminfo") as f:
        m["mem_total_gb"] = round(int(f.readline().split()[1]) / 2**20, 1)
    return m


def versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("qdrant-client", "qdrant-edge-py", "numpy", "scipy"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "not installed"
    return out


# ------------------------------------------------------------------ report and CLI


def _fmt(v: Any, unit: str = "") -> str:
    if v is None:
        return "–"
    return f"{v:,.0f}{unit}" if isinstance(v, (int, float)) and abs(v) >= 100 else f"{v}{unit}"


def _row_md(r: dict[str, Any]) -> str:
    name, size = r["engine"], f"{r['size']:,}"
    if "skipped" in r:
        x = r.get("extrapolated")
        ext = (f" Extrapolated linearly from {x['from_size']:,} (not measured): write {_fmt(x['write_s'])} s, open "
               f"{_fmt(x['open_s'])} s, RSS {_fmt(x['query_peak_rss_mb'])} MB, disk {_fmt(x['disk_mb'])} MB, "
               f"p95 ~{_fmt(x['query_p95_ms'])} ms.") if x else ""
        return f"| {name} | {size} | not run: {r['skipped']}.{ext} ||||||||||{_day(r)} |"
    if "error" in r:
        rate = (f" It had written {r['partial_points']:,} points in {r['partial_s']:,.0f} s "
                f"({r['points_per_s']} points/s).") if "partial_points" in r else ""
        return f"| {name} | {size} | {' '.join(r['error'].split())[:200]}.{rate} ||||||||||{_day(r)} |"
    build = f" (HNSW build {r['index_build_s']} s)" if "index_build_s" in r else ""
    return (f"| {name} | {size} | {_fmt(r['points_per_s'])}{build} | {_fmt(r['write_peak_rss_mb'])} | {r['open_s']} / {r['open_first_query_s']} | "
            f"{r['process_to_first_query_s']} | {r['query_p50_ms']} | {r['query_p95_ms']} | "
            f"{_fmt(r.get('query_cpu_p50_ms'))} / {_fmt(r.get('query_cpu_p95_ms'))} | {_fmt(r['query_peak_rss_mb'])} | "
            f"{_fmt(r['disk_mb'])} | {r['write_load_1m']} / {r['query_load_1m']} | {_day(r)} |")


def _day(r: dict[str, Any]) -> str:
    return str(r.get("when") or "–")[:16].replace("T", " ")


def _agreement_md(agree: dict[str, Any]) -> list[str]:
    out = ["| size | engine vs reference | dense top-10 identical | dense top-10 overlap | BM25 top-10 scores equal | "
           "fused top-10 identical (queries without BM25 ties) |", "|---|---|---|---|---|---|"]
    for size, a in agree.items():
        for name, g in a.items():
            if name not in ("reference", "projection_recall") and g:
                out.append(f"| {int(size):,} | {name} vs {a['reference']} | {g['dense_top10_same']} | {g['dense_top10_overlap']} | "
                           f"{g['bm25_top10_scores_same']} | {g['hybrid_top10_same']} ({g['hybrid_comparable_queries']} of {g['queries']}) |")
    return out


# The bar for the embedded default at 1M chunks ("RSS within a few GB" read as 4 GB).
TARGETS = (("query_p95_ms", 50.0, "hybrid p95 ≤ 50 ms (wall, loaded machine)"),
           ("query_cpu_p95_ms", 50.0, "hybrid CPU p95 ≤ 50 ms"),
           ("open_first_query_s", 2.0, "open + first query ≤ 2 s"), ("query_peak_rss_mb", 4096.0, "query RSS ≤ 4 GB"))


def _targets_md(p: dict[str, Any]) -> list[str]:
    """Each engine's largest measured size against the targets (measured figures only)."""
    out = ["| engine | at chunks | " + " | ".join(t[2] for t in TARGETS) + " |", "|---|---|" + "---|" * len(TARGETS)]
    for name in p["engines"]:
        done = [r for r in p["runs"] if r["engine"] == name and "query_p95_ms" in r]
        if done:
            r = max(done, key=lambda r: r["size"])
            cells = [f"{'yes' if r[k] <= bar else 'no'} ({_fmt(r[k])})" if k in r else "–" for k, bar, _ in TARGETS]
            out.append(f"| {name} | {r['size']:,} | " + " | ".join(cells) + " |")
    return out


def summary_md(p: dict[str, Any], command: str, verdict: str = "") -> str:
    m = p["machine"]
    head = [
        f"# bench scale ({p['when']})", "",
        "Produced by " + " then ".join(f"`{c}`" for c in dict.fromkeys([*p.get("earlier_commands", []), command]))
        + " (`ragcore bench scale --help` lists the options), run under `nice -n 19`.", "",
        f"Machine: {m['cpus']} CPUs, {m['mem_total_gb']} GB RAM, shared with other work; 1-minute load average "
        f"{p['load_avg_start'][0]} at the start, {m['load_avg'][0]} at the end, and per phase in the last column "
        "(write / query); versions " + ", ".join(f"{k} {v}" for k, v in p["versions"].items()) + ".", "",
        f"Data: {p['base_chunks']:,} real Django chunks (ragcore's chunker, ragcore's BM25 from `Bm25Encoder`) replicated "
        "to size with a `copyN/` path prefix; dense vectors are seeded random unit vectors (384-d); queries are "
        f"{p['questions']} real Django questions embedded by the ONNX model (embedding not timed), each timed "
        f"{p['repeats']}×. A query is both branches (top {p['candidates']} each), the merge into one pool where every "
        "chunk keeps its cosine and BM25, and ragcore's `rank_pool` RRF fusion, so each engine returns the same kind of "
        "result. Write and query run in separate fresh processes; *open* is opening the store in a cold process "
        "(the files are in the OS page cache: the run cannot drop it), *process → first result* adds interpreter "
        "start, imports and the first query. Peak RSS is each process's VmHWM (~0.4 GB of it is Python + ragcore's "
        f"imports); a watchdog kills a phase passing {p['rss_limit_mb']:,.0f} MB. numpy's BLAS threads per row: "
        + ", ".join(f"{r['engine']} {r['size']:,}: {r.get('blas_threads', 'default')}" for r in p["runs"] if "open_s" in r)
        + " (OpenBLAS's default, 2 threads here, spins on a loaded machine: see `RunLimits.blas_threads`).", "",
        "| engine | chunks | write points/s | write peak RSS MB | open s / with first query s | process → first result s | hybrid p50 ms | "
        "hybrid p95 ms | query CPU p50 / p95 ms | query peak RSS MB | disk MB | load (write / query) | measured (UTC) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    engines = [f"- `{n}`: {label}" for n, label in p["engines"].items()]
    body = head + [_row_md(r) for r in p["runs"]] + ["", "Engines:", *engines, "",
                                                     "## Same results (correctness, not timing)", "",
                                                     *_agreement_md(p["agreement"]), ""]
    note = ("BM25 scores tie wherever chunks repeat (every size above the base set is replicated text), and each "
            "engine breaks ties its own way, so fused lists are compared only on queries whose BM25 branch has no "
            "ties; dense scores never tie (random vectors). The dense top-10 overlap is the recall@10 of an "
            "approximate dense search against the exact one (HNSW; the snapshot's projection from 200,000 chunks); "
            "on these random vectors it is far lower than on real embeddings (next table).")
    targets = ["Targets from issue 11, at each engine's largest measured size:", "", *_targets_md(p), ""]
    return "\n".join(body + [note, "", *_recall_md(p), "## Which engine and why", "", *targets,
                             verdict or "(no verdict written)", ""])


def write_results(results_dir: Path, payload: dict[str, Any], command: str, verdict: str = "") -> None:
    from bench.common import write as _write

    payload["command"] = command
    _write(results_dir, "scale", payload, summary_md(payload, command, verdict))


def merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new``'s runs added to ``old``'s (a run of the same engine and size replaces the old one),
    so a slow engine can be measured by a second command; both commands are kept."""
    done = {(r["engine"], r["size"]) for r in new["runs"]}
    runs = [_dated(r, old.get("when")) for r in old["runs"] if (r["engine"], r["size"]) not in done] + \
        [_dated(r, new.get("when")) for r in new["runs"]]
    runs.sort(key=lambda r: (r["size"], list({**old["engines"], **new["engines"]}).index(r["engine"])))
    runs = [{**r, "extrapolated": extrapolate(runs, r["engine"], r["size"])} if "skipped" in r and r["engine"] == "qdrant-local"
            else r for r in runs]  # from the largest size measured by any of the merged runs
    return {**new, "runs": runs, "engines": {**old["engines"], **new["engines"]},
            "sizes": sorted(set(old["sizes"]) | set(new["sizes"])),
            "agreement": {k: _merged_agreement(old["agreement"].get(k, {}), new["agreement"].get(k, {}))
                          for k in {**old["agreement"], **new["agreement"]}},
            "load_avg_start": old["load_avg_start"], "real_recall": new.get("real_recall") or old.get("real_recall") or {},
            "earlier_commands": [c for c in dict.fromkeys([*old.get("earlier_commands", []), old["command"]]) if c != new.get("command")]}


def _merged_agreement(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """One size's agreement rows: a run that compared nothing (one engine alone in its workdir)
    keeps the earlier reference and rows, instead of naming itself the reference."""
    if not any(k not in ("reference", "projection_recall") for k in new):
        return {**old, **({"projection_recall": new["projection_recall"]} if "projection_recall" in new else {})}
    return {**old, **new}


def _dated(row: dict[str, Any], when: str | None) -> dict[str, Any]:
    """A row keeps the date it was measured (rows from before rows carried one: their run's date)."""
    return row if "when" in row or not when else {**row, "when": when}


def add_scale_parser(bsub: argparse._SubParsersAction) -> None:
    from bench.common import DEFAULT_RESULTS, DJANGO

    b = bsub.add_parser("scale", help="embedded engines at 10k/100k/1M chunks: writes, open, hybrid p50/p95, RSS, disk")
    b.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated chunk counts (run smallest first)")
    b.add_argument("--engines", default=",".join(ENGINES), help=f"comma-separated, of: {', '.join(ENGINES)}")
    b.add_argument("--corpus", type=Path, default=DJANGO / "corpus", help="folder whose chunks are replicated to size")
    b.add_argument("--questions", type=int, default=50, help="Django questions to time")
    b.add_argument("--repeats", type=int, default=2)
    b.add_argument("--rss-limit-gb", type=float, default=12.0, dest="rss_limit_gb")
    b.add_argument("--blas-threads", type=int, default=1, dest="blas_threads", help="numpy's BLAS threads (0 = its default)")
    b.add_argument("--phase-timeout-min", type=float, default=60.0, dest="phase_timeout_min",
                   help="stop a write or query phase after this long (its write rate so far is reported)")
    b.add_argument("--stop-at", default=None, dest="stop_at", help="UTC HH:MM after which no new phase starts")
    b.add_argument("--workdir", type=Path, default=None, help="scratch folder (default: a temp folder)")
    b.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    b.add_argument("--render", action="store_true", help="only rewrite scale.md from the figures in scale.json")
    b.add_argument("--merge", action="store_true", help="add these runs to scale.json's (same --workdir for agreement)")
    b.add_argument("--real-vectors", default="", dest="real_vectors",
                   help="comma-separated NAME=DENSE.npy:QUESTIONS.jsonl[:MORE.jsonl]: the projection's recall on real embeddings")
    b.set_defaults(func=_cmd_scale)


def _stop_epoch(hhmm: str | None) -> float | None:
    if not hhmm:
        return None
    from datetime import datetime, timedelta, timezone

    now = datetime.now(timezone.utc)
    h, m = (int(x) for x in hhmm.split(":"))
    at = now.replace(hour=h, minute=m, second=0, microsecond=0)
    return (at if at > now else at + timedelta(days=1)).timestamp()


def _cmd_scale(args: argparse.Namespace) -> int:
    import tempfile

    from bench.common import questions as _questions

    if args.render:  # the reasoning changed, the figures did not: no need for an hour's rerun
        payload = json.loads((args.results / "scale.json").read_text())
        write_results(args.results, payload, payload["command"], verdict())
        print((args.results / "scale.md").read_text())
        return 0
    engines = [e for e in args.engines.split(",") if e]
    unknown = [e for e in engines if e not in ENGINES]
    if unknown:
        raise SystemExit(f"unknown engine(s) {unknown}; choose from {list(ENGINES)}")
    missing = [e for e in engines if e not in available_engines()]
    if missing:
        print(f"not installed, skipped: {missing} (pip install -e .)", file=sys.stderr)
    limits = RunLimits(rss_mb=args.rss_limit_gb * 1024, stop_at=_stop_epoch(args.stop_at), repeats=args.repeats,
                       phase_timeout_s=args.phase_timeout_min * 60, blas_threads=args.blas_threads or None)
    command = "ragcore bench scale " + " ".join(sys.argv[sys.argv.index("scale") + 1 :]) if "scale" in sys.argv else "ragcore bench scale"
    real = real_recall([x for x in args.real_vectors.split(",") if x]) if args.real_vectors else None
    with tempfile.TemporaryDirectory(prefix="ragcore-scale-") as tmp:
        run_scale([int(x) for x in args.sizes.split(",") if x], [e for e in engines if e not in missing],
                  args.corpus, _questions()[: args.questions], args.workdir or Path(tmp), limits,
                  on_size=lambda p: _save(args, {**p, "real_recall": real} if real else p, command))
    print((args.results / "scale.md").read_text())
    return 0


def _save(args: argparse.Namespace, payload: dict[str, Any], command: str) -> None:
    old = args.results / "scale.json"
    if args.merge and old.is_file():
        payload = merged(json.loads(old.read_text()), payload)
    write_results(args.results, payload, command, verdict())



def verdict() -> str:
    """The decision the committed run supports, kept as prose in bench/scale-decision.md."""
    text = (Path(__file__).with_name("scale-decision.md")).read_text(encoding="utf-8")
    return text.split("\n\n", 2)[2]  # the prose after the title and the note on how it is rendered


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1:]))
