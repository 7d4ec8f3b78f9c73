"""`ragcore bench ingest | query | answer`: speed measured against a baseline in the same run.

The machine this runs on is shared and noisy, so every result is reported next to a baseline
timed in the same process, and the ratio is the number to compare across runs. Results are
written as JSON (and a short Markdown summary) under ``bench/results/``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from .config import RagcoreSettings
from .store import utc_now

REPO = Path(__file__).resolve().parent.parent
DEFAULT_RESULTS = REPO / "bench" / "results"
DJANGO = REPO.parent / "shared" / "data" / "django-docs-qa"


def _pcts(ms: Sequence[float]) -> dict[str, float]:
    a = np.asarray(ms, dtype=float)
    return {"p50_ms": round(float(np.percentile(a, 50)), 2), "p95_ms": round(float(np.percentile(a, 95)), 2),
            "mean_ms": round(float(a.mean()), 2), "n": int(a.size)}


def _machine() -> dict[str, Any]:
    import os

    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
            "load_avg": [round(x, 2) for x in os.getloadavg()]}


def _write(results_dir: Path, name: str, payload: dict[str, Any], summary: str) -> Path:
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n")
    (results_dir / f"{name}.md").write_text(summary + "\n")
    return path


def _sample_files(corpus: Path, limit: int | None) -> list[Path]:
    from .ingest.loaders import kind_for

    files = sorted(p for p in corpus.rglob("*") if p.is_file() and kind_for(p) is not None)
    if limit and len(files) > limit:
        step = len(files) / limit
        files = [files[int(i * step)] for i in range(limit)]
    return files


# ------------------------------------------------------------------ ingest


def _stage(corpus: Path, files: list[Path], staging: Path) -> Path:
    """A copy of the sample, so both sides read exactly these files."""
    for f in files:
        dest = staging / f.relative_to(corpus)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(f.read_bytes())
    return staging


def bench_ingest(corpus: Path, limit: int | None, results_dir: Path) -> dict[str, Any]:
    """Chunks/s of ``ragcore ingest`` vs LlamaIndex ``VectorStoreIndex.from_documents``.

    Both read the same files with the same loaders (so the baseline gets clean text, not raw
    HTML) and embed with the same ONNX model; the baseline uses LlamaIndex's defaults
    otherwise (SentenceSplitter 1024/200 tokens, embed batch 10, in-memory vector store).
    """
    from llama_index.core import Document, VectorStoreIndex

    from .embeddings import OnnxEmbedding, OnnxMiniLM
    from .ingest.loaders import LoadError, load_file
    from .pipeline import Engine

    files = _sample_files(corpus, limit)
    with tempfile.TemporaryDirectory() as tmp:
        staging = _stage(corpus, files, Path(tmp) / "corpus")
        encoder = OnnxMiniLM()
        encoder.encode(["warm up"])

        # baseline first, then ragcore, then the baseline again: drift on a shared machine
        # shows up as a difference between the two baseline runs
        def baseline() -> dict[str, Any]:
            t0 = time.perf_counter()
            docs = []
            for f in sorted(staging.rglob("*")):
                if not f.is_file():
                    continue
                try:
                    d = load_file(f, staging, max_bytes=50_000_000)
                except LoadError:
                    continue
                docs.append(Document(text="\n".join(line.text for line in d.lines), metadata={"path": d.path}))
            index = VectorStoreIndex.from_documents(docs, embed_model=OnnxEmbedding(encoder))
            secs = time.perf_counter() - t0
            n = len(index.index_struct.nodes_dict)
            return {"seconds": round(secs, 2), "chunks": n, "chunks_per_s": round(n / secs, 2)}

        base1 = baseline()
        engine = Engine(RagcoreSettings(data_dir=Path(tmp) / "data"), encoder=encoder)
        t0 = time.perf_counter()
        report = engine.ingest([staging], "bench")
        secs = time.perf_counter() - t0
        chunks = report.chunks_written
        engine.close()
        ours = {"seconds": round(secs, 2), "chunks": chunks, "chunks_per_s": round(chunks / secs, 2),
                "failed_files": report.count("failed")}
        base2 = baseline()

    base_cps = statistics.mean([base1["chunks_per_s"], base2["chunks_per_s"]])
    base_secs = statistics.mean([base1["seconds"], base2["seconds"]])
    payload = {
        "bench": "ingest", "when": utc_now(), "machine": _machine(),
        "corpus": str(corpus), "files": len(files), "ragcore": ours, "baseline_runs": [base1, base2],
        "ratio_chunks_per_s": round(ours["chunks_per_s"] / base_cps, 2),
        "ratio_wall_time": round(base_secs / ours["seconds"], 2),
        "settings": {"chunk_size_words": RagcoreSettings().chunk_size, "chunk_overlap_words": RagcoreSettings().chunk_overlap},
    }
    _write(results_dir, "ingest", payload, _ingest_summary(payload, corpus))
    return payload


def _ingest_summary(payload: dict[str, Any], corpus: Path) -> str:
    base1, base2 = payload["baseline_runs"]
    ours = payload["ragcore"]
    return (
        f"# bench ingest ({payload['when']})\n\n{payload['files']} files of {corpus.name}.\n\n"
        f"| run | chunks | seconds | chunks/s |\n|---|---|---|---|\n"
        f"| LlamaIndex VectorStoreIndex (before) | {base1['chunks']} | {base1['seconds']} | {base1['chunks_per_s']} |\n"
        f"| ragcore ingest | {ours['chunks']} | {ours['seconds']} | {ours['chunks_per_s']} |\n"
        f"| LlamaIndex VectorStoreIndex (after) | {base2['chunks']} | {base2['seconds']} | {base2['chunks_per_s']} |\n\n"
        f"Throughput ratio (chunks/s, ragcore / baseline): **{payload['ratio_chunks_per_s']}x**; "
        f"wall-time ratio for the same files (baseline / ragcore): {payload['ratio_wall_time']}x."
    )


# ------------------------------------------------------------------ query


def _questions() -> list[str]:
    qs: list[str] = []
    for name in ("questions.jsonl", "unanswerable.jsonl"):
        p = DJANGO / name
        if p.is_file():
            qs += [json.loads(line)["question"] for line in p.read_text().splitlines() if line.strip()]
    if not qs:
        qs = [line.strip("# ").strip() + "?" for f in sorted((REPO / "docs").glob("*.md"))
              for line in f.read_text().splitlines() if line.startswith("## ")]
    return qs


def _pad_collection(src_engine, src: str, dest_engine, dest: str, size: int) -> int:
    """Copy ``src``'s points (vectors included, no re-embedding) into ``dest`` until it holds
    ``size`` chunks; copies get their own ids and a ``copyN/`` path prefix."""
    from dataclasses import replace

    from .ingest.chunking import chunk_id

    data = src_engine.store.load(src)
    dest_engine.store.ensure_collection(dest)
    n, k = 0, 0
    while n < size:
        take = min(size - n, len(data.chunks))
        prefix = f"copy{k}/" if k else ""
        chunks = [replace(c, path=prefix + c.path, chunk_id=chunk_id(prefix + c.path, c.start_line, c.end_line, c.text))
                  for c in data.chunks[:take]]
        counts: dict[str, int] = {}
        for c in chunks:
            counts[c.path] = counts.get(c.path, 0) + 1
        for i in range(0, take, 512):
            dest_engine.store.write_chunks(dest, chunks[i : i + 512], data.dense[i : i + 512], counts)
        n += take
        k += 1
    dest_engine.store.write_meta(dest, {"corpus_version": uuid.uuid4().hex[:16], "built_at": "bench", "documents": 0})
    return n


def bench_query(source_collection: str, size: int, top_k: int, repeats: int, results_dir: Path, settings: RagcoreSettings) -> dict[str, Any]:
    """p50/p95 retrieval latency per mode at ``size`` chunks, vs a LlamaIndex VectorStoreIndex
    (in-memory, same vectors, same query encoder) and vs querying embedded Qdrant directly."""
    from .embeddings import OnnxMiniLM
    from .pipeline import Engine
    from .retrieval.pools import server_pool

    encoder = OnnxMiniLM()
    src = Engine(settings, encoder=encoder)
    if not src.store.exists(source_collection):
        raise SystemExit(f"no collection {source_collection!r} under {settings.qdrant_path}; ingest one first "
                         f"(e.g. ragcore ingest {DJANGO / 'corpus'} --collection {source_collection})")
    questions = _questions()
    with tempfile.TemporaryDirectory() as tmp:
        eng = Engine(RagcoreSettings(data_dir=Path(tmp)), encoder=encoder)
        n = _pad_collection(src, source_collection, eng, "bench", size)
        src.close()
        encoder.encode(questions)  # the query encoder's cache is not what we measure:
        encoder.clear_cache()  # warm the session, then drop cached query vectors
        timed = _timer(encoder, questions, repeats)
        t0 = time.perf_counter()
        eng.retriever.index("bench")
        index_load_s = time.perf_counter() - t0
        modes = {}
        for mode in ("dense", "sparse", "hybrid"):
            s = eng.settings.with_(retrieval_mode=mode, top_k=top_k)
            modes[mode] = _pcts(timed(lambda q, s=s: eng.retrieve(q, s, "bench")))

        # embedded Qdrant queried directly (what the in-process index replaces)
        s_h = eng.settings.with_(retrieval_mode="hybrid", top_k=top_k)

        def qdrant_direct(q: str) -> None:
            qv = encoder.encode([q])[0]
            server_pool(eng.store.client, "bench", qv, eng.retriever.bm25.encode_query(q), s_h)

        direct = _pcts(timed(qdrant_direct)[: max(20, len(questions) // 2)])

        retriever = _llamaindex_retriever(eng, encoder, top_k)
        baseline = _pcts(timed(lambda q: retriever.retrieve(q)))
        eng.close()

    payload = {
        "bench": "query", "when": utc_now(), "machine": _machine(),
        "chunks": n, "source_collection": source_collection, "queries": len(questions), "repeats": repeats,
        "top_k": top_k, "index_load_s": round(index_load_s, 2), "ragcore": modes,
        "embedded_qdrant_direct_hybrid": direct, "baseline_llamaindex_dense": baseline,
        "ratio_hybrid_p95_vs_baseline_dense_p95": round(modes["hybrid"]["p95_ms"] / baseline["p95_ms"], 2),
    }
    _write(results_dir, "query", payload, _query_summary(payload))
    return payload


def _timer(encoder, questions: list[str], repeats: int) -> Callable[[Callable[[str], Any]], list[float]]:
    """A function that times ``fn(q)`` for every question, ``repeats`` times, with the query
    encoder's vector cache emptied before each call (the cache is not what is measured)."""
    def timed(fn: Callable[[str], Any]) -> list[float]:
        out = []
        for _ in range(repeats):
            for q in questions:
                encoder.clear_cache()
                t0 = time.perf_counter()
                fn(q)
                out.append((time.perf_counter() - t0) * 1e3)
        return out

    return timed


def _llamaindex_retriever(eng, encoder, top_k: int):
    """The baseline: a LlamaIndex VectorStoreIndex over the same vectors, default in-memory store."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.schema import TextNode

    from .embeddings import OnnxEmbedding

    data = eng.store.load("bench")
    nodes = [TextNode(id_=c.chunk_id, text=c.text, embedding=v.tolist()) for c, v in zip(data.chunks, data.dense)]
    return VectorStoreIndex(nodes, embed_model=OnnxEmbedding(encoder)).as_retriever(similarity_top_k=top_k)


def _query_summary(payload: dict[str, Any]) -> str:
    rows = "\n".join(f"| ragcore {m} | {v['p50_ms']} | {v['p95_ms']} |" for m, v in payload["ragcore"].items())
    baseline, direct = payload["baseline_llamaindex_dense"], payload["embedded_qdrant_direct_hybrid"]
    return (
        f"# bench query ({payload['when']})\n\n{payload['chunks']} chunks, {payload['queries']} questions × "
        f"{payload['repeats']}, top-k {payload['top_k']}; "
        f"latency includes embedding the question.\n\n| run | p50 ms | p95 ms |\n|---|---|---|\n{rows}\n"
        f"| LlamaIndex VectorStoreIndex (dense, in memory) | {baseline['p50_ms']} | {baseline['p95_ms']} |\n"
        f"| embedded Qdrant queried directly (hybrid) | {direct['p50_ms']} | {direct['p95_ms']} |\n\n"
        f"Loading the in-process index once per corpus version: {payload['index_load_s']} s."
    )


# ------------------------------------------------------------------ answer


def bench_answer(source_collection: str, size: int, tokens: int, repeats: int, results_dir: Path, settings: RagcoreSettings) -> dict[str, Any]:
    """Time to the ``sources`` event, and ragcore's own cost per streamed token.

    The LLM is the scripted OpenAI-protocol server (127.0.0.1, no model, no delay per token),
    so everything measured is ragcore + the openai SDK + HTTP on loopback. The per-token
    overhead is (stream time through ``Engine.stream`` − stream time of the same reply read
    straight from ``OpenAIGenerator.stream``) / tokens, both in this run.
    """
    from .config import LlmSettings
    from .embeddings import OnnxMiniLM
    from .pipeline import Engine
    from .synthesis.openai_generator import OpenAIGenerator
    from .testing.scripted_openai import ScriptedOpenAIServer, Text

    encoder = OnnxMiniLM()
    questions = [q for q in _questions()][:30]
    pieces = [f"w{i} " for i in range(tokens - 1)] + ["[1]."]
    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAIServer() as server:
        src = Engine(settings, encoder=encoder)
        if not src.store.exists(source_collection):
            raise SystemExit(f"no collection {source_collection!r} under {settings.qdrant_path}; ingest one first")
        eng = Engine(RagcoreSettings(data_dir=Path(tmp)), encoder=encoder)
        n = _pad_collection(src, source_collection, eng, "bench", size)
        src.close()
        llm = LlmSettings(base_url=server.base_url, api_key="bench", model="scripted", timeout_s=30, max_retries=0)
        # always call the LLM: a bar of 0 is below any support score these questions reach
        s = eng.settings.with_(collection="bench", llm=llm, abstain_bar=0.0)
        eng.retriever.index("bench")
        encoder.encode(questions)
        to_sources: list[float] = []
        engine_stream: list[float] = []
        raw_stream: list[float] = []
        gen = OpenAIGenerator(llm)
        msgs = [{"role": "user", "content": "x"}]
        for r in range(repeats + 1):  # the first round warms up and is not counted
            for q in questions:
                encoder.clear_cache()
                server.script([Text(pieces)])
                t0 = time.perf_counter()
                sources, first, last = _timeline(eng.stream(q, settings=s))
                if r and sources:
                    to_sources.append((sources - t0) * 1e3)
                if r and first and last:
                    engine_stream.append((last - first) * 1e3)
                server.script([Text(pieces)])
                _, first, last = _timeline(gen.stream(msgs))
                if r and first and last:
                    raw_stream.append((last - first) * 1e3)
        gen.close()
        eng.close()
    overhead = (statistics.median(engine_stream) - statistics.median(raw_stream)) / (tokens - 1)
    payload = {
        "bench": "answer", "when": utc_now(), "machine": _machine(),
        "chunks": n, "questions": len(questions), "repeats": repeats, "tokens_per_answer": tokens,
        "time_to_sources": _pcts(to_sources),
        "token_stream_engine_ms": _pcts(engine_stream), "token_stream_raw_sdk_ms": _pcts(raw_stream),
        "ragcore_overhead_ms_per_token": round(overhead, 4),
    }
    _write(results_dir, "answer", payload, _answer_summary(payload))
    return payload


def _timeline(items: Any) -> tuple[float | None, float | None, float | None]:
    """When the ``sources`` event, the first and the last token arrived (perf_counter seconds);
    plain text pieces (the SDK's stream) count as tokens."""
    sources = first = last = None
    for item in items:
        now = time.perf_counter()
        kind = getattr(item, "type", "token")
        if kind == "sources":
            sources = now
        elif kind == "token":
            first = first or now
            last = now
    return sources, first, last


def _answer_summary(payload: dict[str, Any]) -> str:
    return (
        f"# bench answer ({payload['when']})\n\n{payload['chunks']} chunks, {payload['questions']} questions × "
        f"{payload['repeats']}, {payload['tokens_per_answer']}-token answers from the scripted OpenAI-protocol "
        f"server on 127.0.0.1.\n\n"
        f"| measure | p50 | p95 |\n|---|---|---|\n"
        f"| request → `sources` event (ms) | {payload['time_to_sources']['p50_ms']} | {payload['time_to_sources']['p95_ms']} |\n"
        f"| first → last token through Engine.stream (ms) | {payload['token_stream_engine_ms']['p50_ms']} | {payload['token_stream_engine_ms']['p95_ms']} |\n"
        f"| first → last token straight from the SDK (ms) | {payload['token_stream_raw_sdk_ms']['p50_ms']} | {payload['token_stream_raw_sdk_ms']['p95_ms']} |\n\n"
        f"ragcore's own time per streamed token (median difference / tokens): **{payload['ragcore_overhead_ms_per_token']} ms**."
    )


# ------------------------------------------------------------------ CLI


def add_bench_parser(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("bench", help="benchmarks against a baseline in the same run (results in bench/results/)")
    bsub = b.add_subparsers(dest="bench", required=True)
    bi = bsub.add_parser("ingest", help="ingest throughput vs LlamaIndex VectorStoreIndex")
    bi.add_argument("--corpus", type=Path, default=DJANGO / "corpus" if (DJANGO / "corpus").is_dir() else REPO / "docs")
    bi.add_argument("--limit", type=int, default=60, help="files to sample (0 = all)")
    bi.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    bi.set_defaults(func=_cmd_ingest)
    bq = bsub.add_parser("query", help="query latency per mode at a corpus size")
    bq.add_argument("--collection", default="django", help="collection whose vectors are copied up to --size")
    bq.add_argument("--size", type=int, default=10_000)
    bq.add_argument("--top-k", type=int, default=6, dest="top_k")
    bq.add_argument("--repeats", type=int, default=2)
    bq.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    bq.set_defaults(func=_cmd_query)
    ba = bsub.add_parser("answer", help="time to the sources event and per-token overhead, against a scripted LLM server")
    ba.add_argument("--collection", default="django")
    ba.add_argument("--size", type=int, default=10_000)
    ba.add_argument("--tokens", type=int, default=200)
    ba.add_argument("--repeats", type=int, default=2)
    ba.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    ba.set_defaults(func=_cmd_answer)


def _cmd_ingest(args: argparse.Namespace) -> int:
    out = bench_ingest(args.corpus, args.limit or None, args.results)
    print((args.results / "ingest.md").read_text())
    return 0 if out else 1


def _cmd_query(args: argparse.Namespace) -> int:
    from .cli_common import settings_from_args

    out = bench_query(args.collection, args.size, args.top_k, args.repeats, args.results, settings_from_args(args))
    print((args.results / "query.md").read_text())
    return 0 if out else 1


def _cmd_answer(args: argparse.Namespace) -> int:
    from .cli_common import settings_from_args

    out = bench_answer(args.collection, args.size, args.tokens, args.repeats, args.results, settings_from_args(args))
    print((args.results / "answer.md").read_text())
    return 0 if out else 1
