"""`ragcore bench ingest | query | cold | answer`: speed measured against a baseline in the same run.

The machine this runs on is shared and noisy, so every result is reported next to a baseline
timed in the same process, and the ratio is the number to compare across runs. Results are
written as JSON (and a short Markdown summary) under ``bench/results/``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from ragcore.settings.config import RagcoreSettings

from bench.common import DEFAULT_RESULTS, DJANGO, REPO, machine as _machine, pcts as _pcts, questions as _questions
from bench.common import pad_collection as _pad_collection, sample_files as _sample_files, utc_now, stage_sample, write as _write


# ------------------------------------------------------------------ ingest


def _recording_encoder():
    """An OnnxMiniLM that remembers every group of texts the model itself ran on (cache hits
    excluded): the tokens each side embedded, and the texts the raw-model ceiling replays."""
    from ragcore.encoders.minilm import OnnxMiniLM

    class RecordingMiniLM(OnnxMiniLM):
        calls: list[list[str]]

        def _encode(self, texts):  # type: ignore[override]
            self.calls.append(list(texts))
            return super()._encode(texts)

    enc = RecordingMiniLM()
    enc.calls = []
    return enc


def _start_run(encoder) -> float:
    encoder.clear_cache()  # neither side may reuse the other's (or its own earlier) vectors
    encoder.calls = []
    return time.perf_counter()


def _tokens(encoder) -> int:
    return sum(sum(encoder.count_tokens(texts)) for texts in encoder.calls)


def _run_ragcore(staging: Path, data_dir: Path, encoder) -> tuple[dict[str, Any], list[list[str]]]:
    """``Engine.ingest`` into a fresh store, as ``ragcore ingest`` runs it (auto-calibration included)."""
    from ragcore.engine.engine import Engine

    engine = Engine(RagcoreSettings(data_dir=data_dir), encoder=encoder)
    t0 = _start_run(encoder)
    report = engine.ingest([staging], "bench")
    secs = time.perf_counter() - t0
    engine.close()
    calls, tokens = encoder.calls, _tokens(encoder)
    return {"seconds": round(secs, 2), "ingest_seconds": round(report.seconds, 2), "tokens": tokens,
            "tokens_per_s": round(tokens / secs, 1), "chunks": report.chunks_written,
            "texts": sum(map(len, calls)), "failed_files": report.count("failed")}, calls


def _run_quickstart(staging: Path, encoder) -> tuple[dict[str, Any], list[list[str]]]:
    """LlamaIndex's quick-start as written: ``SimpleDirectoryReader`` (HTML read as text, tags
    and all) and ``VectorStoreIndex.from_documents`` (SentenceSplitter 1024/200 tokens, embed
    batch 10, in-memory store), with the same ONNX MiniLM; it truncates each chunk at 256 word
    pieces, so it embeds the first quarter of each chunk."""
    from llama_index.core import SimpleDirectoryReader, VectorStoreIndex

    from ragcore.llamaindex.embedding import OnnxEmbedding

    t0 = _start_run(encoder)
    docs = SimpleDirectoryReader(str(staging), recursive=True).load_data()
    index = VectorStoreIndex.from_documents(docs, embed_model=OnnxEmbedding(encoder))
    secs = time.perf_counter() - t0
    calls, tokens = encoder.calls, _tokens(encoder)
    return {"seconds": round(secs, 2), "tokens": tokens, "tokens_per_s": round(tokens / secs, 1),
            "chunks": len(index.index_struct.nodes_dict), "texts": sum(map(len, calls))}, calls


def _run_ceiling(encoder, calls: list[list[str]]) -> dict[str, Any]:
    """The raw model on one side's texts, in that side's groups (each sorted by length and cut in
    model batches as the side's were), with nothing else to do: the physical limit here."""
    from ragcore.encoders.minilm import OnnxMiniLM

    t0 = time.perf_counter()
    for texts in calls:
        OnnxMiniLM._encode(encoder, texts)  # the plain model: not recorded, not cached
    secs = time.perf_counter() - t0
    tokens = sum(sum(encoder.count_tokens(texts)) for texts in calls)
    return {"seconds": round(secs, 2), "tokens": tokens, "tokens_per_s": round(tokens / secs, 1)}


def bench_ingest(corpus: Path, limit: int | None, results_dir: Path, runs: int = 2) -> dict[str, Any]:
    """Wall time and tokens of ``ragcore ingest`` vs the LlamaIndex quick-start on the same
    files, and ragcore's tokens/s vs the raw model's on ragcore's own texts.

    Chunks/s would reward small chunks; tokens (word pieces the model ran on, truncated at its
    256-token window, counted with its own tokenizer) and wall time for the same files do not.
    The sides alternate (ragcore, model ceiling, quick-start; again) on the same encoder, and
    each ratio is taken within a pair: the machine is shared and noisy.
    """
    files = _sample_files(corpus, limit)
    pairs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        staging = stage_sample(corpus, files, Path(tmp) / "corpus")
        encoder = _recording_encoder()
        encoder.encode(["warm up"])
        for k in range(runs):
            ours, calls = _run_ragcore(staging, Path(tmp) / f"data{k}", encoder)
            ceiling = _run_ceiling(encoder, calls)
            quick, quick_calls = _run_quickstart(staging, encoder)
            quick_ceiling = _run_ceiling(encoder, quick_calls)
            pairs.append({"ragcore": ours, "model_ceiling": ceiling, "llamaindex_quickstart": quick,
                          "quickstart_model_ceiling": quick_ceiling,
                          "wall_time_ratio": round(ours["seconds"] / quick["seconds"], 2),
                          "model_speed_ratio": round(ours["tokens_per_s"] / ceiling["tokens_per_s"], 2),
                          # the best wall ratio any ragcore pipeline could reach with these texts:
                          # the model alone on its texts over the model alone on the quick-start's
                          "model_floor_ratio": round(ceiling["seconds"] / quick_ceiling["seconds"], 2)})
    payload = {
        "bench": "ingest", "when": utc_now(), "machine": _machine(), "threads": encoder.threads,
        "batch_size": encoder.batch_size, "corpus": str(corpus), "files": len(files), "runs": pairs,
        "wall_time_ratio": round(statistics.median(p["wall_time_ratio"] for p in pairs), 2),
        "model_speed_ratio": round(statistics.median(p["model_speed_ratio"] for p in pairs), 2),
        "model_floor_ratio": round(statistics.median(p["model_floor_ratio"] for p in pairs), 2),
        "settings": {"chunk_size_words": RagcoreSettings().chunk_size, "chunk_overlap_words": RagcoreSettings().chunk_overlap},
    }
    _write(results_dir, "ingest", payload, _ingest_summary(payload, corpus))
    return payload


def _ingest_summary(payload: dict[str, Any], corpus: Path) -> str:
    rows = []
    for k, p in enumerate(payload["runs"], 1):
        r, c, q = p["ragcore"], p["model_ceiling"], p["llamaindex_quickstart"]
        qc = p.get("quickstart_model_ceiling")
        rows += [
            f"| {k} | ragcore ingest (calibration {round(r['seconds'] - r['ingest_seconds'], 1)} s of it) | {r['seconds']} "
            f"| {r['tokens']:,} | {r['tokens_per_s']:,} | {r['chunks']} |",
            f"| {k} | raw model, ragcore's texts | {c['seconds']} | {c['tokens']:,} | {c['tokens_per_s']:,} | |",
            f"| {k} | LlamaIndex quick-start | {q['seconds']} | {q['tokens']:,} | {q['tokens_per_s']:,} | {q['chunks']} |",
        ]
        if qc:
            rows.append(f"| {k} | raw model, quick-start's texts | {qc['seconds']} | {qc['tokens']:,} | {qc['tokens_per_s']:,} | |")
        floor = f", model floor {p['model_floor_ratio']}×" if "model_floor_ratio" in p else ""
        rows.append(f"| {k} | ratios | wall {p['wall_time_ratio']}×{floor} | | model speed {p['model_speed_ratio']} | |")
    return (
        f"# bench ingest ({payload['when']})\n\n{payload['files']} files of {corpus.name}, the same files for every "
        f"run; load average at the end {payload['machine']['load_avg']} on {payload['machine']['cpus']} CPUs; "
        f"onnxruntime threads {payload['threads']}.\n\n"
        "Tokens are the word pieces the model ran on (its own tokenizer, truncated at 256 as each side embeds). "
        "ragcore embeds every chunk whole, plus section headings and its auto-calibration questions; the "
        "quick-start (SimpleDirectoryReader + VectorStoreIndex) embeds the first 256 tokens of each 1024-token "
        "chunk of the raw files. ragcore's seconds are the whole `Engine.ingest` call.\n\n"
        "| run | side | seconds | tokens | tokens/s | chunks |\n|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
        f"Median wall time, ragcore / quick-start: **{payload['wall_time_ratio']}×** (target ≤ 0.5). "
        f"Median end-to-end tokens/s, ragcore / raw model: **{payload['model_speed_ratio']}** (target ≥ 0.8).\n\n"
        f"Model floor: the raw model alone on ragcore's texts takes **{payload.get('model_floor_ratio', '–')}×** "
        "the time it takes alone on the quick-start's texts; no ragcore pipeline on these texts can have a "
        "lower wall ratio than that, whatever it overlaps."
    )


# ------------------------------------------------------------------ query


def bench_query(source_collection: str, size: int, top_k: int, repeats: int, results_dir: Path, settings: RagcoreSettings) -> dict[str, Any]:
    """p50/p95 retrieval latency per mode at ``size`` chunks, vs a LlamaIndex VectorStoreIndex
    (in-memory, same vectors, same query encoder) and vs querying embedded Qdrant directly."""
    from ragcore.encoders.minilm import OnnxMiniLM
    from ragcore.engine.engine import Engine
    from ragcore.retrieval.pools import server_pool

    encoder = OnnxMiniLM()
    src = Engine(settings, encoder=encoder)
    if not src.store.exists(source_collection):
        raise SystemExit(f"no collection {source_collection!r} under {settings.store_path}; ingest one first "
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
        eng.hybrid_search.index("bench")
        index_load_s = time.perf_counter() - t0
        modes = {}
        for mode in ("dense", "sparse", "hybrid"):
            s = eng.settings.with_(retrieval_mode=mode, top_k=top_k)
            modes[mode] = _pcts(timed(lambda q, s=s: eng.retrieve(q, s, "bench")))

        # embedded Qdrant queried directly (what the in-process index replaces)
        s_h = eng.settings.with_(retrieval_mode="hybrid", top_k=top_k)

        def qdrant_direct(q: str) -> None:
            qv = encoder.encode([q])[0]
            server_pool(eng.store.client, "bench", qv, eng.hybrid_search.bm25.encode_query(q), s_h)

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

    from ragcore.llamaindex.embedding import OnnxEmbedding

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
    ) + _cold_section()


def _cold_section(results_dir: Path = DEFAULT_RESULTS) -> str:
    """The cold-question section of query.md (bench cold), kept when bench query rewrites the file."""
    p = results_dir / "query-cold.json"
    return "\n\n" + _cold_summary(json.loads(p.read_text())) if p.is_file() else ""


# ------------------------------------------------------------------ cold question

COLD_MARK = "## Cold question"
# what a fresh process spends before and during its first answer; printed by the child as JSON
_PHASES = """
import json, sys, time
t0 = time.perf_counter()
from ragcore.settings.config import RagcoreSettings
from ragcore.engine.engine import Engine
t1 = time.perf_counter()
e = Engine(RagcoreSettings.from_env())
e.encoder.encode(["load the model"])
t2 = time.perf_counter()
e.hybrid_search.index("bench"); e.topic_index("bench")
t3 = time.perf_counter()
a = e.ask(sys.argv[1], collection="bench")
t4 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "model_s": t2 - t1, "indexes_s": t3 - t2, "ask_s": t4 - t3,
                  "qdrant_opened": e.store.opened, "qdrant_imported": "qdrant_client" in sys.modules,
                  "ask_latency_ms": {k: round(v) for k, v in a.metadata["latency_ms"].items()}}))
"""


def _wall(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    import subprocess

    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - t0
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])}… failed ({out.returncode}): {out.stderr[-1500:]}")
    return wall, out.stdout


ANSWERED_QUESTION = "What does login_required do?"  # the Django docs answer it: composing and checking run


def bench_cold(source_collection: str, size: int, runs: int, questions: Sequence[str] | None, results_dir: Path,
               settings: RagcoreSettings, baseline: Path | None = None) -> dict[str, Any]:
    """Wall time of a new `ragcore ask` process (start included) on a copy of ``source_collection``
    padded to ``size`` chunks: query snapshots off (RAGCORE_SNAPSHOTS=0: open embedded Qdrant and
    load the collection, as before) and on, alternated, median of ``runs``, for each question (by
    default the data set's first, which the engine abstains on, and one it answers: an answered
    question also composes and checks); then where the time goes. ``baseline``: another checkout's
    ragcore (an older commit) takes the place of snapshots off, snapshots on for both, alternated."""
    import os
    import sys

    from ragcore.encoders.minilm import OnnxMiniLM
    from ragcore.engine.engine import Engine

    encoder = OnnxMiniLM()
    src = Engine(settings, encoder=encoder)
    if not src.store.exists(source_collection):
        raise SystemExit(f"no collection {source_collection!r} under {settings.store_path}")
    questions = list(questions or [_questions()[0], ANSWERED_QUESTION])
    with tempfile.TemporaryDirectory() as tmp:
        dest = Engine(RagcoreSettings(data_dir=Path(tmp)), encoder=encoder)
        n = _pad_collection(src, source_collection, dest, "bench", size or src.store.count(source_collection))
        src.close()
        dest.close()
        # Python's defaults, as on a user's machine: bytecode is cached (a sandbox or CI may turn that
        # off, and then every process compiles ragcore's modules again, ~0.2 s); one warm-up run writes it
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAGCORE_") and k != "PYTHONDONTWRITEBYTECODE"} \
            | {"RAGCORE_DATA_DIR": tmp}
        for warm in (env, *([env | {"PYTHONPATH": str(baseline)}] if baseline is not None else [])):
            _wall([sys.executable, "-m", "ragcore.cli.main", "ask", questions[0], "-c", "bench"], warm)
        per_question = [_cold_question(q, runs, env, baseline) for q in questions]
        floor = {"python_start_s": _wall([sys.executable, "-c", "pass"], env)[0],
                 "import_llama_index_core_s": _wall([sys.executable, "-c", "import llama_index.core"], env)[0],
                 "import_qdrant_client_s": _wall([sys.executable, "-c", "import qdrant_client"], env)[0]}
    payload = {
        "bench": "cold", "when": utc_now(), "machine": _machine(), "chunks": n, "source_collection": source_collection,
        "runs": runs, "questions": per_question, "floor": {k: round(v, 2) for k, v in floor.items()},
        "baseline": _baseline_label(baseline),
    }
    results_dir.mkdir(parents=True, exist_ok=True)
    (results_dir / "query-cold.json").write_text(json.dumps(payload, indent=2) + "\n")
    md = results_dir / "query.md"
    head = md.read_text().split(COLD_MARK)[0].rstrip() + "\n\n" if md.is_file() else ""
    md.write_text(head + _cold_summary(payload) + "\n")
    return payload


def _baseline_label(baseline: Path | None) -> str | None:
    import subprocess

    if baseline is None:
        return None
    head = subprocess.run(["git", "-C", str(baseline), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return head.stdout.strip() or str(baseline)


def _cold_question(question: str, runs: int, env: dict[str, str], baseline: Path | None = None) -> dict[str, Any]:
    """One question: ``runs`` alternated pairs of processes (snapshots off, or ``baseline``'s code; on), then its phases."""
    import sys

    cmd = [sys.executable, "-m", "ragcore.cli.main", "ask", question, "-c", "bench", "--json"]
    other, other_env = ("snapshots_off", env | {"RAGCORE_SNAPSHOTS": "0"}) if baseline is None else \
        ("baseline", env | {"RAGCORE_SNAPSHOTS": "1", "PYTHONPATH": str(baseline)})
    walls: dict[str, list[float]] = {other: [], "snapshots_on": []}
    status = None
    for _ in range(runs):  # alternated, so both feel the same machine load
        walls[other].append(_wall(cmd, other_env)[0])
        secs, out = _wall(cmd, env | {"RAGCORE_SNAPSHOTS": "1"})
        walls["snapshots_on"].append(secs)
        status = json.loads(out)["status"]
    phases = json.loads(_wall([sys.executable, "-c", _PHASES, question], env)[1].strip().splitlines()[-1])
    return {
        "question": question, "status": status, "wall_s": {k: [round(x, 2) for x in v] for k, v in walls.items()},
        "median_s": {k: round(statistics.median(v), 2) for k, v in walls.items()},
        "phases_snapshots_on": {k: round(v, 2) if isinstance(v, float) else v for k, v in phases.items()},
    }


def _cold_summary(p: dict[str, Any]) -> str:
    fl = p["floor"]
    rows, phases = [], []
    for q in p["questions"]:
        other = "baseline" if "baseline" in q["wall_s"] else "snapshots_off"
        off, on, ph = q["wall_s"][other], q["wall_s"]["snapshots_on"], q["phases_snapshots_on"]
        rows.append(f"| {q['question']} | {q['status']} | {q['median_s'][other]} ({off}) "
                    f"| **{q['median_s']['snapshots_on']}** ({on}) |")
        phases.append(
            f"- *{q['question']}*: importing ragcore {ph['import_s']} s, loading the model {ph['model_s']} s, reading "
            f"the snapshot into the search and topic indexes {ph['indexes_s']} s, the question itself {ph['ask_s']} s "
            f"({ph['ask_latency_ms']} ms by stage); Qdrant opened: {ph['qdrant_opened']}, its client imported: "
            f"{ph['qdrant_imported']}.")
    return (
        f"{COLD_MARK} ({p['when']}, `ragcore bench cold`)\n\n"
        f"A new `ragcore ask` process on {p['chunks']} chunks (copies of {p['source_collection']!r}), process start "
        f"included, median of {p['runs']} alternated runs (each run's seconds in brackets) after one warm-up run "
        f"(Python's bytecode cache on, as by default); load average at the start {p['machine']['load_avg']}.\n\n"
        + (f"| question | answer | {p['baseline']} (the baseline's code, query snapshot) s | this code, query snapshot s |\n"
           if p.get("baseline") else
           "| question | answer | snapshots off (open embedded Qdrant, load the collection) s | query snapshot s |\n")
        + "|---|---|---|---|\n" + "\n".join(rows) + "\n\n"
        "Where the time goes, with the snapshot, each step run alone in one process (`ragcore ask` itself loads the "
        "model in a background thread while it imports the rest and reads the snapshot, so its wall time is less "
        "than their sum):\n\n" + "\n".join(phases) + "\n\n"
        f"For scale: starting Python alone {fl['python_start_s']} s, `import llama_index.core` alone "
        f"{fl['import_llama_index_core_s']} s, `import qdrant_client` alone {fl['import_qdrant_client_s']} s."
    )


# ------------------------------------------------------------------ answer


def bench_answer(source_collection: str, size: int, tokens: int, repeats: int, results_dir: Path, settings: RagcoreSettings) -> dict[str, Any]:
    """Time to the ``sources`` event, and ragcore's own cost per streamed token.

    The LLM is the scripted OpenAI-protocol server (127.0.0.1, no model, no delay per token),
    so everything measured is ragcore + the openai SDK + HTTP on loopback. The per-token
    overhead is (stream time through ``Engine.stream`` − stream time of the same reply read
    straight from ``OpenAIGenerator.stream``) / tokens, both in this run.
    """
    from ragcore.settings.config import LlmSettings
    from ragcore.encoders.minilm import OnnxMiniLM
    from ragcore.engine.engine import Engine
    from ragcore.synthesis.llm.generator import OpenAIGenerator
    from bench.support.scripted_openai import ScriptedOpenAIServer, Text

    encoder = OnnxMiniLM()
    questions = [q for q in _questions()][:30]
    pieces = [f"w{i} " for i in range(tokens - 1)] + ["[1]."]
    with tempfile.TemporaryDirectory() as tmp, ScriptedOpenAIServer() as server:
        src = Engine(settings, encoder=encoder)
        if not src.store.exists(source_collection):
            raise SystemExit(f"no collection {source_collection!r} under {settings.store_path}; ingest one first")
        eng = Engine(RagcoreSettings(data_dir=Path(tmp)), encoder=encoder)
        n = _pad_collection(src, source_collection, eng, "bench", size)
        src.close()
        llm = LlmSettings(base_url=server.base_url, api_key="bench", model="scripted", timeout_s=30, max_retries=0)
        # always call the LLM: a bar of 0 is below any support score these questions reach
        s = eng.settings.with_(collection="bench", llm=llm, abstain_bar=0.0)
        eng.hybrid_search.index("bench")
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
    bi = bsub.add_parser("ingest", help="ingest wall time and tokens vs the LlamaIndex quick-start and the raw model")
    bi.add_argument("--corpus", type=Path, default=DJANGO / "corpus" if (DJANGO / "corpus").is_dir() else REPO / "demo")
    bi.add_argument("--limit", type=int, default=80, help="files to sample (0 = all)")
    bi.add_argument("--runs", type=int, default=2, help="alternating pairs of runs (ragcore, quick-start)")
    bi.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    bi.add_argument("--endpoint", help="an OpenAI-compatible embeddings endpoint (up to /v1): ragcore ingest through it "
                    "against the endpoint alone on the same texts (bench/endpoint.py); scripted:MS: the scripted "
                    "protocol server taking MS ms per text")
    bi.add_argument("--model", default="embed", help="with --endpoint: the model name sent")
    bi.add_argument("--server", default="", help="with --endpoint: what serves it, for the results")
    bi.add_argument("--busy", type=int, default=0, help="with --endpoint: busy loops running throughout (a loaded machine)")
    bi.add_argument("--busy-nice", type=int, default=0, dest="busy_nice", help="with --busy: the loops' niceness")
    bi.add_argument("--server-log", type=Path, dest="server_log", help="with --endpoint: a llama.cpp server's log, for the "
                    "server's own computing time during the ingest (bench/server_log.py)")
    bi.add_argument("--no-replay", action="store_false", dest="replay", help="with --endpoint: skip the endpoint-alone "
                    "replay (use with --server-log)")
    bi.set_defaults(func=_cmd_ingest)
    bq = bsub.add_parser("query", help="query latency per mode at a corpus size")
    bq.add_argument("--collection", default="django", help="collection whose vectors are copied up to --size")
    bq.add_argument("--size", type=int, default=10_000)
    bq.add_argument("--top-k", type=int, default=6, dest="top_k")
    bq.add_argument("--repeats", type=int, default=2)
    bq.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    bq.set_defaults(func=_cmd_query)
    bc = bsub.add_parser("cold", help="a new `ragcore ask` process's wall time, query snapshots off vs on")
    bc.add_argument("--collection", default="django", help="collection whose vectors are copied up to --size")
    bc.add_argument("--size", type=int, default=0, help="chunks (0 = as many as the collection has)")
    bc.add_argument("--runs", type=int, default=3)
    bc.add_argument("--question", action="append", dest="questions",
                    help="repeatable; default: the first question of django-docs-qa and one the Django docs answer")
    bc.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    bc.add_argument("--baseline", type=Path, help="another checkout (e.g. `git worktree add --detach DIR COMMIT`): its "
                    "ragcore against this one, both on the query snapshot, alternated (instead of snapshots off)")
    bc.set_defaults(func=_cmd_cold)
    ba = bsub.add_parser("answer", help="time to the sources event and per-token overhead, against a scripted LLM server")
    ba.add_argument("--collection", default="django")
    ba.add_argument("--size", type=int, default=10_000)
    ba.add_argument("--tokens", type=int, default=200)
    ba.add_argument("--repeats", type=int, default=2)
    ba.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    ba.set_defaults(func=_cmd_answer)
    bw = bsub.add_parser("writes", help="points/s into the embedded store of record: local mode (two SQLite journals) and Qdrant Edge")
    bw.add_argument("--collection", default="django", help="collection whose chunks are copied")
    bw.add_argument("--size", type=int, default=10_000, help="points in the collection written into")
    bw.add_argument("--batch", type=int, default=1_000, help="chunks per timed write")
    bw.add_argument("--runs", type=int, default=3)
    bw.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    bw.set_defaults(func=_cmd_writes)
    bd = bsub.add_parser("dims", help="recall of the approximate dense search (64-d projection) at embedding widths 384-3,072")
    bd.add_argument("--dims", default="384,768,1024,1536,3072")
    bd.add_argument("--size", type=int, default=200_000, help="synthetic vectors per width")
    bd.add_argument("--questions", type=int, default=200)
    bd.add_argument("--components", default="64,128", help="projection widths measured (64 is shipped)")
    bd.add_argument("--real", type=Path, help="a real MiniLM dense.npy to fit the spectrum on")
    bd.add_argument("--oversample", default="1000,2000,4000,8000", help="rows rescored exactly (M), measured")
    bd.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    bd.set_defaults(func=_cmd_dims)
    from bench.scale import add_scale_parser  # here: its engines are imported only when it runs

    add_scale_parser(bsub)  # `bench scale` (engines at 10k-1M chunks)
    from bench.serve_cli import add_serve_parser

    add_serve_parser(bsub)  # `bench serve` (the HTTP service against the same calls in process)
    from bench.pdf import add_pdf_parser

    add_pdf_parser(bsub)  # `bench pdf` (PDF text extractors compared)
    from bench.browser import add_browser_parser

    add_browser_parser(bsub)  # `bench browser` (Enter → answer in headless chromium)
    from bench.stress_store import add_stress_parser

    add_stress_parser(bsub)  # `bench stress` (2 servers + CLI readers + a writer on one store, errors counted)
    from bench.reader_train import add_reader_parser

    add_reader_parser(bsub)  # `bench reader` (the extractive reader retrained, leave one corpus out)
    from bench.gitbench import add_git_parser

    add_git_parser(bsub)  # `bench git` (collections from git refs: incremental re-ingest, shared vector cache)


def _cmd_dims(args: argparse.Namespace) -> int:
    from bench.dims import bench_dims, summary

    out = bench_dims([int(d) for d in args.dims.split(",")], args.size, args.questions,
                     tuple(int(m) for m in args.oversample.split(",")),
                     [int(c) for c in args.components.split(",")], args.results, args.real)
    print(summary(out))
    return 0


def _cmd_ingest(args: argparse.Namespace) -> int:
    if args.endpoint:
        from bench.endpoint import bench_endpoint, summary
        from ragcore.cli.common import settings_from_args

        s = settings_from_args(args)
        scripted = float(args.endpoint.split(":", 1)[1]) if args.endpoint.startswith("scripted:") else None
        s = s.with_(embed_base_url=args.endpoint) if scripted is None else s
        print(summary(bench_endpoint(args.corpus, args.limit or None, args.results, s, args.model,
                                     runs=max(1, args.runs), server=args.server, scripted_ms=scripted,
                                     busy=args.busy, busy_nice=args.busy_nice, server_log=args.server_log,
                                     replay=args.replay)))
        return 0
    out = bench_ingest(args.corpus, args.limit or None, args.results, runs=max(1, args.runs))
    print((args.results / "ingest.md").read_text())
    return 0 if out else 1


def _cmd_query(args: argparse.Namespace) -> int:
    from ragcore.cli.common import settings_from_args

    out = bench_query(args.collection, args.size, args.top_k, args.repeats, args.results, settings_from_args(args))
    print((args.results / "query.md").read_text())
    return 0 if out else 1


def _cmd_cold(args: argparse.Namespace) -> int:
    from ragcore.cli.common import settings_from_args

    out = bench_cold(args.collection, args.size, max(1, args.runs), args.questions, args.results, settings_from_args(args),
                     args.baseline)
    print(_cold_summary(out))
    return 0


def _cmd_writes(args: argparse.Namespace) -> int:
    from bench.writes import bench_writes, summary
    from ragcore.cli.common import settings_from_args

    out = bench_writes(args.collection, args.size, args.batch, max(1, args.runs), args.results, settings_from_args(args))
    print(summary(out))
    return 0


def _cmd_answer(args: argparse.Namespace) -> int:
    from ragcore.cli.common import settings_from_args

    out = bench_answer(args.collection, args.size, args.tokens, args.repeats, args.results, settings_from_args(args))
    print((args.results / "answer.md").read_text())
    return 0 if out else 1
