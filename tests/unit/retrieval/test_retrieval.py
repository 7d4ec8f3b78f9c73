"""Retrieval over a real embedded Qdrant: dense, BM25 and hybrid ranking, every score kept,
cuts explained (threshold, dedupe, top-K), recut without re-querying, fusion formulas, path
filters, and parity between the in-process index and Qdrant's own query API."""

from __future__ import annotations

import fnmatch
from typing import Iterator

import numpy as np
import pytest

from ragcore.settings.config import RagcoreSettings
from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.engine.engine import Engine
from ragcore.retrieval import apply_cuts, fuse, rank_score_kind
from ragcore.retrieval.pools import local_pool, server_pool
from ragcore.types import RetrievalResult
from tests.conftest import write_corpus

COLLECTION = "cfg"
IDENT = "FROBNICATE_QUUX_TIMEOUT"
IDENT_QUERY = f"What is {IDENT}?"
GENERIC_QUERY = "How long does the server wait for a slow client before it gives up?"

# 29 sections about configuration, in similar words. Only two of them use the literal word
# "timeout"; the others say "time limit", "deadline", "expiry" …
SECTIONS = [
    ("Request timeout", "The request timeout limits how long the server waits for a client to send a complete request. When the limit is reached the connection is closed and a timeout error is logged. Raise this value for slow clients on poor networks."),
    ("Connection time limit", "The connection time limit sets how many seconds a worker waits when opening a connection to the database. A short time limit fails fast when the database is down; a long time limit tolerates slow networks."),
    ("Read time limit", "The read time limit is the maximum time the client waits for the server to answer after the request was sent. Values are given in seconds and the default is thirty seconds."),
    ("Idle time limit", "The idle time limit closes connections that have not been used for a while. It keeps the pool small and frees resources held by clients that went away."),
    ("Retry limit", "The retry limit caps how many times a failed job is attempted again before it is marked as failed. Each retry waits longer than the previous one."),
    ("Rate limits", "Rate limits restrict how many requests one client may send per minute. Requests over the limit receive an error and should be retried later."),
    ("Memory limit", "The memory limit is the largest amount of memory a worker may use before it is restarted. Set it below the memory of the machine so that the system stays responsive."),
    ("Upload size limit", "The upload size limit rejects files larger than the configured number of megabytes. The default allows files up to ten megabytes."),
    ("Session lifetime", "The session lifetime controls how long a login stays valid. After this many seconds without activity the user has to sign in again."),
    ("Cache expiry", "Cache entries expire after the configured number of seconds. A short expiry keeps data fresh, a long expiry saves work on the server."),
    ("Worker count", "The worker count is the number of processes that handle requests in parallel. A good value is twice the number of CPU cores."),
    ("Queue length", "The queue length limits how many jobs can wait at the same time. When the queue is full new jobs are rejected until space frees up."),
    ("Shutdown grace period", "The shutdown grace period is how long the server waits for running requests to finish before it stops. Requests still running after this period are cancelled."),
    ("Heartbeat interval", "The heartbeat interval sets how often a worker reports that it is alive. A worker that misses several heartbeats is considered dead and restarted."),
    ("Lock time limit", "The lock time limit restricts how long a transaction waits for a lock held by another transaction. When it expires the transaction is rolled back with an error."),
    ("Keep-alive time limit", "The keep-alive time limit is how long an idle HTTP connection stays open waiting for the next request from the same client."),
    ("Polling interval", "The polling interval sets how often the scheduler checks for new jobs. Short intervals react quickly but cost more work on the server."),
    ("Log retention", "Log files are kept for the configured number of days and then deleted. Increase the retention when you need older logs for audits."),
    ("Backup schedule", "Backups run every night by default. The schedule accepts a cron expression, and the number of backups to keep is a separate setting."),
    ("DNS cache time", "Resolved host names are cached for the configured number of seconds, so that the worker does not ask the DNS server for every request."),
    ("Statement time limit", "The statement time limit aborts any database query that runs longer than the given number of milliseconds. It protects the server from runaway queries."),
    ("Token lifetime", "Access tokens are valid for the configured number of minutes. After that the client must use its refresh token to get a new access token."),
    ("Batch size", "The batch size is how many records are written to the database in one transaction. Larger batches are faster but hold locks for longer."),
    ("Socket time limit", "The socket time limit restricts how long a single read or write on a network socket may block. A blocked socket beyond this time raises an error."),
    ("Startup time limit", "The startup time limit is how long the supervisor waits for a new worker to become ready. A worker that is not ready in time is killed and started again."),
    ("Maximum connections", "The maximum number of connections limits how many clients the server accepts at once. Further clients wait in the backlog until a connection is free."),
    ("Job deadline", "Each job has a deadline after which it is stopped, even if it is still making progress. The deadline is measured from the moment the job starts."),
    ("Timeouts overview", "Every network operation in the server has a timeout. The timeouts are configured in seconds in the settings file, and each one can be overridden per environment."),
    ("Limits overview", "All limits are read from the settings file when the server starts. Changing a limit requires a restart of every worker."),
]
# The one chunk that defines the identifier: a longer passage about something else that
# names it once, in generic words.
TARGET = (
    "Housekeeping",
    "The housekeeping task tidies the temporary folders once an hour. It walks every upload folder, "
    "removes files that are older than a day and deletes folders that have become empty. "
    "Thumbnails that no longer belong to any image are removed as well, and the task writes a short "
    f"summary of what it removed to the log. {IDENT} is the number of seconds the task may run. "
    "On a busy site the task can be scheduled at night instead, and it can be switched off entirely "
    "when another tool cleans the folders.",
)
FIELDS = [
    "timestamp", "level", "logger name", "process id", "thread name", "request id", "user id", "client address",
    "request path", "response status", "duration", "module", "function name", "line number", "host name",
    "environment", "release tag", "trace id", "span id", "message",
]


def long_section() -> str:
    """About 450 words in one section: the chunker cuts it into several chunks of one section."""
    paras = []
    for i, f in enumerate(FIELDS):
        paras.append(
            f"The log format option number {i + 1} adds the {f} field to every record that the "
            f"worker writes, so that operators can filter and group the records by {f} later on."
        )
    return "\n\n".join(paras)


def corpus_files() -> dict[str, str]:
    items = SECTIONS + [TARGET]
    files = {}
    for i in range(0, len(items), 3):
        group = items[i : i + 3]
        body = f"# Configuration part {i // 3 + 1}\n\n" + "\n\n".join(f"## {h}\n\n{t}\n" for h, t in group)
        files[f"config/part{i // 3 + 1:02d}.md"] = body
    files["logging/format.md"] = "# Logging\n\n## Log format\n\n" + long_section() + "\n"
    return files


@pytest.fixture(scope="module")
def cfg_engine(tmp_path_factory: pytest.TempPathFactory, encoder: OnnxMiniLM) -> Iterator[Engine]:
    root = write_corpus(tmp_path_factory.mktemp("cfg-corpus"), corpus_files())
    e = Engine(RagcoreSettings(data_dir=tmp_path_factory.mktemp("cfg-data"), collection=COLLECTION), encoder=encoder)
    e.ingest([root], COLLECTION)
    yield e
    e.close()


def search(engine: Engine, query: str, **overrides) -> RetrievalResult:
    """Chunks ranked as passages: these tests pin each mode's chunk order, so the document ranking
    (on by default; tests/test_retrieval_signals.py covers it) and the per-document evidence cap
    (tests/unit/retrieval/test_evidence_per_doc.py) are off unless a test turns them on."""
    overrides = {"doc_decay": 0.0, "named_weight": 0.0, "doc_title_weight": 0.0, "evidence_per_doc": 0, **overrides}
    return engine.retrieve(query, engine.settings.with_(**overrides))


def rank_of_target(result: RetrievalResult) -> int | None:
    for c in result.candidates:
        if IDENT in c.chunk.text:
            return c.rank
    return None


def show(result: RetrievalResult, n: int = 8) -> str:
    rows = [f"{result.retrieval_mode} for {result.query!r}:"]
    for c in result.candidates[:n]:
        rows.append(
            f"  #{c.rank:<2} d={c.dense_score:.3f}(r{c.dense_rank}) s={c.sparse_score or 0:.3f}(r{c.sparse_rank}) "
            f"f={c.fused_score or 0:.4f}(r{c.fused_rank}) kept={c.kept} {c.dropped_reason} {c.chunk.section[-1]}"
        )
    return "\n".join(rows)


# --------------------------------------------------------------------------- the corpus itself


def test_corpus_shape(cfg_engine: Engine) -> None:
    docs = dict(cfg_engine.documents(COLLECTION))
    assert len(docs) == 11
    assert docs["logging/format.md"] >= 3  # one section, several chunks: dedupe has work to do
    idx = cfg_engine.hybrid_search.index(COLLECTION)
    assert sum(IDENT in c.text for c in idx.chunks) == 1


# --------------------------------------------------------------------------- exact identifiers


def test_hybrid_finds_exact_identifier_that_dense_misses(cfg_engine: Engine) -> None:
    dense = search(cfg_engine, IDENT_QUERY, retrieval_mode="dense", top_k=3)
    sparse = search(cfg_engine, IDENT_QUERY, retrieval_mode="sparse", top_k=3)
    hybrid = search(cfg_engine, IDENT_QUERY, retrieval_mode="hybrid", top_k=3)
    for r in (dense, sparse, hybrid):
        print(show(r))
    print("target rank: dense", rank_of_target(dense), "sparse", rank_of_target(sparse), "hybrid", rank_of_target(hybrid))

    assert rank_of_target(sparse) == 1
    assert IDENT in sparse.kept[0].chunk.text
    assert any(IDENT in c.chunk.text for c in hybrid.kept), show(hybrid)
    assert len(hybrid.kept) == 3
    assert rank_of_target(dense) != 1, show(dense)
    assert IDENT not in dense.candidates[0].chunk.text


def test_identifier_query_sparse_hits_only_matching_chunks(cfg_engine: Engine) -> None:
    """Only chunks sharing a query term get a BM25 score; the identifier's chunk scores far above."""
    r = search(cfg_engine, IDENT_QUERY, retrieval_mode="sparse", top_k=50, dedupe=False)
    assert all(c.sparse_score and c.sparse_score > 0 for c in r.candidates)
    sections = {c.chunk.section[-1] for c in r.candidates}
    assert sections == {"Housekeeping", "Request timeout", "Timeouts overview"}
    assert r.candidates[0].sparse_score > 2 * r.candidates[1].sparse_score


# --------------------------------------------------------------------------- scores and ranks


def all_scored(r: RetrievalResult) -> None:
    assert r.candidates
    for c in r.candidates:
        assert c.dense_score is not None and -1.0 <= c.dense_score <= 1.0
        assert c.sparse_score is not None and c.sparse_score >= 0.0
        assert c.fused_score is not None
    assert [c.rank for c in r.candidates] == list(range(1, len(r.candidates) + 1))


def test_dense_mode_ranks_by_cosine(cfg_engine: Engine) -> None:
    r = search(cfg_engine, GENERIC_QUERY, retrieval_mode="dense", top_k=50, dedupe=False)
    assert r.rank_score_kind == "cosine"
    all_scored(r)
    cos = [c.dense_score for c in r.candidates]
    assert cos == sorted(cos, reverse=True)
    assert [c.dense_rank for c in r.candidates] == [c.rank for c in r.candidates]
    assert all(c.sparse_rank is None for c in r.candidates)
    # the cosines are the real ones: recompute from the encoder
    q = cfg_engine.encoder.encode([GENERIC_QUERY])[0]
    idx = cfg_engine.hybrid_search.index(COLLECTION)
    for c in r.candidates[:5]:
        assert c.dense_score == pytest.approx(float(idx.dense[idx.by_id[c.chunk.chunk_id]] @ q), abs=1e-5)
    for c in r.candidates:
        assert c.score_for("cosine") == c.dense_score


def test_sparse_mode_ranks_by_bm25(cfg_engine: Engine) -> None:
    r = search(cfg_engine, GENERIC_QUERY, retrieval_mode="sparse", top_k=50, dedupe=False)
    assert r.rank_score_kind == "bm25"
    all_scored(r)
    bm = [c.sparse_score for c in r.candidates]
    assert bm == sorted(bm, reverse=True)
    assert all(s > 0 for s in bm)  # the sparse branch returns only chunks that share a term
    assert sorted(c.sparse_rank for c in r.candidates) == [c.rank for c in r.candidates]
    for c in r.candidates:  # equal up to ties in the BM25 score
        at_rank = r.candidates[c.sparse_rank - 1]
        assert at_rank.sparse_score == pytest.approx(c.sparse_score, rel=1e-12)
    assert all(c.dense_rank is None for c in r.candidates)
    assert all(c.score_for("bm25") == c.sparse_score for c in r.candidates)


def test_sparse_rank_equals_rank_when_bm25_ties(cfg_engine: Engine) -> None:
    """Two chunks with the same BM25 score: the candidate's rank and its sparse rank must agree
    (one tie-break everywhere), or the table shows "#10 … BM25 rank 11"."""
    r = search(cfg_engine, GENERIC_QUERY, retrieval_mode="sparse", top_k=50, dedupe=False)
    scores = [round(c.sparse_score, 9) for c in r.candidates]
    assert len(scores) != len(set(scores)), "this query is meant to produce a BM25 tie"
    mismatched = [(c.rank, c.sparse_rank, c.sparse_score, c.chunk.locator) for c in r.candidates if c.rank != c.sparse_rank]
    assert not mismatched, mismatched


@pytest.mark.parametrize("query", [GENERIC_QUERY, IDENT_QUERY, "database transaction lock"])
def test_hybrid_rrf_is_sum_of_reciprocal_ranks(cfg_engine: Engine, query: str) -> None:
    s = cfg_engine.settings.with_(retrieval_mode="hybrid", fusion="rrf", top_k=50, dedupe=False, doc_decay=0.0, named_weight=0.0,
                                  doc_title_weight=0.0)
    r = cfg_engine.retrieve(query, s)
    assert r.rank_score_kind == "rrf"
    all_scored(r)
    k = s.rrf_k
    for c in r.candidates:
        expected = (1 / (k + c.dense_rank) if c.dense_rank else 0.0) + (1 / (k + c.sparse_rank) if c.sparse_rank else 0.0)
        assert c.fused_score == pytest.approx(expected, abs=1e-12)
        assert c.score_for("rrf") == c.fused_score
    fused = [c.fused_score for c in r.candidates]
    assert fused == sorted(fused, reverse=True)
    # the branch ranks are the branch orders
    d = sorted((c for c in r.candidates if c.dense_rank), key=lambda c: c.dense_rank)
    assert [c.dense_score for c in d] == sorted((c.dense_score for c in d), reverse=True)
    sp = sorted((c for c in r.candidates if c.sparse_rank), key=lambda c: c.sparse_rank)
    assert [c.sparse_score for c in sp] == sorted((c.sparse_score for c in sp), reverse=True)


def test_hybrid_rank_equals_fused_rank(cfg_engine: Engine) -> None:
    """The rank shown and the fused rank shown must agree, also when RRF scores tie."""
    r = search(cfg_engine, GENERIC_QUERY, retrieval_mode="hybrid", fusion="rrf", top_k=50, dedupe=False)
    ties = len(r.candidates) - len({round(c.fused_score, 12) for c in r.candidates})
    print("tied fused scores:", ties)
    assert [c.fused_rank for c in r.candidates] == [c.rank for c in r.candidates], show(r, 40)


def test_hybrid_weighted_scores(cfg_engine: Engine) -> None:
    s = cfg_engine.settings.with_(retrieval_mode="hybrid", fusion="weighted", dense_weight=0.7, top_k=50, dedupe=False,
                                  doc_decay=0.0, named_weight=0.0, doc_title_weight=0.0)
    r = cfg_engine.retrieve(GENERIC_QUERY, s)
    assert r.rank_score_kind == "weighted"
    all_scored(r)
    smax = max(c.sparse_score for c in r.candidates if c.sparse_rank)
    for c in r.candidates:
        bm = c.sparse_score if c.sparse_rank else 0.0
        cos = c.dense_score if c.dense_rank else 0.0
        assert c.fused_score == pytest.approx(0.7 * max(cos, 0.0) + 0.3 * bm / smax, abs=1e-6)
    fused = [c.fused_score for c in r.candidates]
    assert fused == sorted(fused, reverse=True)


def test_rank_score_kind() -> None:
    assert rank_score_kind("dense", "rrf") == "cosine"
    assert rank_score_kind("sparse", "weighted") == "bm25"
    assert rank_score_kind("hybrid", "rrf") == "rrf"
    assert rank_score_kind("hybrid", "weighted") == "weighted"


# --------------------------------------------------------------------------- fusion by hand


def test_fuse_weighted_by_hand() -> None:
    dense = {"a": 0.8, "b": 0.5, "c": -0.2}
    sparse = {"a": 2.0, "d": 4.0}
    got = fuse(dense, sparse, fusion="weighted", rrf_k=60, dense_weight=0.6)
    assert set(got) == {"a", "b", "c", "d"}
    assert got["a"] == pytest.approx(0.6 * 0.8 + 0.4 * 2.0 / 4.0)
    assert got["b"] == pytest.approx(0.6 * 0.5)
    assert got["c"] == pytest.approx(0.0)  # a negative cosine counts as 0
    assert got["d"] == pytest.approx(0.4 * 1.0)


def test_fuse_weighted_without_sparse_hits() -> None:
    got = fuse({"a": 0.5}, {}, fusion="weighted", rrf_k=60, dense_weight=0.25)
    assert got == {"a": pytest.approx(0.125)}


def test_fuse_rrf_by_hand() -> None:
    dense = {"a": 0.9, "b": 0.7, "c": 0.1}
    sparse = {"c": 5.0, "a": 1.0, "d": 3.0}
    got = fuse(dense, sparse, fusion="rrf", rrf_k=10, dense_weight=0.5)
    assert got["a"] == pytest.approx(1 / 11 + 1 / 13)
    assert got["b"] == pytest.approx(1 / 12)
    assert got["c"] == pytest.approx(1 / 13 + 1 / 11)
    assert got["d"] == pytest.approx(1 / 12)


def test_fuse_empty() -> None:
    assert fuse({}, {}, fusion="rrf", rrf_k=60, dense_weight=0.6) == {}
    assert fuse({}, {}, fusion="weighted", rrf_k=60, dense_weight=0.6) == {}


# --------------------------------------------------------------------------- cuts


def test_threshold_cuts_exactly_low_cosines(cfg_engine: Engine) -> None:
    base = search(cfg_engine, GENERIC_QUERY, retrieval_mode="hybrid", top_k=100, dedupe=False, threshold=-1.0)
    assert all(c.kept for c in base.candidates)
    cos = sorted(c.dense_score for c in base.candidates)
    thr = float(np.median(cos))
    r = search(cfg_engine, GENERIC_QUERY, retrieval_mode="hybrid", top_k=100, dedupe=False, threshold=thr)
    below = {c.chunk.chunk_id for c in r.candidates if c.dense_score < thr}
    assert below and len(below) < len(r.candidates)
    assert {c.chunk.chunk_id for c in r.candidates if c.dropped_reason == "threshold"} == below
    assert all(c.kept for c in r.candidates if c.chunk.chunk_id not in below)
    assert all(not c.kept for c in r.candidates if c.chunk.chunk_id in below)
    # the threshold is on cosine in every mode, never on the mode's own score
    sp = search(cfg_engine, GENERIC_QUERY, retrieval_mode="sparse", top_k=100, dedupe=False, threshold=thr)
    assert {c.chunk.chunk_id for c in sp.candidates if c.dropped_reason == "threshold"} == {
        c.chunk.chunk_id for c in sp.candidates if c.dense_score < thr
    }


def test_threshold_applies_before_top_k(cfg_engine: Engine) -> None:
    """A chunk cut by the threshold does not use up a top-K slot."""
    base = search(cfg_engine, GENERIC_QUERY, retrieval_mode="sparse", top_k=100, dedupe=False, threshold=-1.0)
    thr = sorted(c.dense_score for c in base.candidates)[len(base.candidates) // 2]
    r = Engine.recut(base, top_k=3, threshold=thr, dedupe=False)
    kept = r.kept
    assert len(kept) == 3
    above = [c for c in r.candidates if c.dense_score >= thr]
    assert [c.chunk.chunk_id for c in kept] == [c.chunk.chunk_id for c in above[:3]]


def test_top_k_keeps_exactly_k(cfg_engine: Engine) -> None:
    for k in (1, 3, 7):
        r = search(cfg_engine, GENERIC_QUERY, retrieval_mode="hybrid", top_k=k, dedupe=False, threshold=-1.0)
        assert len(r.kept) == k
        assert [c.rank for c in r.kept] == list(range(1, k + 1))
        rest = r.candidates[k:]
        assert rest and all(c.dropped_reason == "top_k" and not c.kept for c in rest)


def test_default_threshold_cuts_nothing(cfg_engine: Engine) -> None:
    """The documented default threshold (0.0) cuts nothing."""
    r = search(cfg_engine, "tungsten boiling point volcano penguin", retrieval_mode="dense", top_k=100, dedupe=False)
    assert cfg_engine.settings.threshold == 0.0
    cut = [c for c in r.candidates if c.dropped_reason == "threshold"]
    print("lowest cosine:", min(c.dense_score for c in r.candidates))
    assert not cut, [(c.dense_score, c.chunk.section) for c in cut]


def test_dedupe_keeps_one_chunk_per_section(cfg_engine: Engine) -> None:
    q = "Which fields can the log format add to every record?"
    plain = search(cfg_engine, q, retrieval_mode="hybrid", top_k=100, dedupe=False, threshold=-1.0)
    log_key = ("logging/format.md", ("Logging", "Log format"), None)
    same_section = [c for c in plain.candidates if (c.chunk.path, c.chunk.section, c.chunk.page) == log_key]
    assert len(same_section) >= 3
    r = search(cfg_engine, q, retrieval_mode="hybrid", top_k=100, dedupe=True, threshold=-1.0)
    keys = [(c.chunk.path, c.chunk.section, c.chunk.page) for c in r.kept]
    assert len(keys) == len(set(keys))
    seen: set = set()
    for c in r.candidates:
        key = (c.chunk.path, c.chunk.section, c.chunk.page)
        if key in seen:
            assert c.dropped_reason == "dedupe" and not c.kept
        else:
            assert c.kept, (c.dropped_reason, key)
            seen.add(key)
    dropped = [c for c in r.candidates if c.dropped_reason == "dedupe"]
    assert len(dropped) == len(same_section) - 1
    best = min(same_section, key=lambda c: c.rank)
    assert [c.chunk.chunk_id for c in r.kept if (c.chunk.path, c.chunk.section, c.chunk.page) == log_key] == [
        best.chunk.chunk_id
    ]


def test_dedupe_then_top_k(cfg_engine: Engine) -> None:
    q = "Which fields can the log format add to every record?"
    r = search(cfg_engine, q, retrieval_mode="hybrid", top_k=4, dedupe=True, threshold=-1.0)
    assert len(r.kept) == 4
    assert len({(c.chunk.path, c.chunk.section) for c in r.kept}) == 4
    reasons = {c.dropped_reason for c in r.candidates if not c.kept}
    assert reasons <= {"dedupe", "top_k"} and "top_k" in reasons


def test_apply_cuts_is_pure_and_ordered(cfg_engine: Engine) -> None:
    r = search(cfg_engine, GENERIC_QUERY, top_k=100, dedupe=False, threshold=-1.0)
    shuffled = list(reversed(r.candidates))
    a = apply_cuts(shuffled, top_k=2, threshold=0.2, dedupe=True)
    b = apply_cuts(r.candidates, top_k=2, threshold=0.2, dedupe=True)
    assert a == b
    assert [c.rank for c in a] == sorted(c.rank for c in a)


def test_recut_changes_cuts_without_requerying(cfg_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    first = search(cfg_engine, GENERIC_QUERY, retrieval_mode="hybrid", top_k=6, threshold=0.0, dedupe=True)

    def boom(*a, **k):
        raise AssertionError("recut must not query again")

    monkeypatch.setattr(cfg_engine.hybrid_search, "search", boom)
    monkeypatch.setattr(cfg_engine.encoder, "encode", boom)
    monkeypatch.setattr(cfg_engine.store, "load", boom)
    thr = sorted(c.dense_score for c in first.candidates)[len(first.candidates) // 3]
    again = Engine.recut(first, top_k=2, threshold=thr, dedupe=False, per_doc=0)  # as search() here
    monkeypatch.undo()

    def pool(r: RetrievalResult) -> list[tuple]:
        return [(c.chunk.chunk_id, c.dense_score, c.sparse_score, c.fused_score, c.dense_rank, c.sparse_rank,
                 c.fused_rank, c.rank) for c in r.candidates]

    assert pool(again) == pool(first)
    assert again.query == first.query and again.retrieval_mode == first.retrieval_mode and again.latency_ms == first.latency_ms
    assert len(again.kept) == 2
    assert {c.dropped_reason for c in again.candidates} >= {"threshold", "top_k"}
    # same cuts as asking again with those settings
    fresh = search(cfg_engine, GENERIC_QUERY, retrieval_mode="hybrid", top_k=2, threshold=thr, dedupe=False)
    assert [(c.chunk.chunk_id, c.kept, c.dropped_reason) for c in fresh.candidates] == [
        (c.chunk.chunk_id, c.kept, c.dropped_reason) for c in again.candidates
    ]


def test_recut_as_applies_every_cut_setting_the_answer_applies(cfg_engine: Engine) -> None:
    """The lab recuts with the user's settings: the per-document cap and the passage seats too, not
    just top-K / threshold / dedupe (it used to drop them, so the lab kept other chunks than the answer)."""
    s = cfg_engine.settings.with_(doc_decay=0.0, named_weight=0.0, doc_title_weight=0.0, top_k=3, threshold=0.0,
                                  dedupe=False, evidence_per_doc=1, evidence_seats=1)
    wide = cfg_engine.retrieve(GENERIC_QUERY, s.with_(top_k=50, evidence_per_doc=0, evidence_seats=0))
    again = Engine.recut_as(wide, s)
    fresh = cfg_engine.retrieve(GENERIC_QUERY, s)
    assert [(c.chunk.chunk_id, c.kept, c.dropped_reason) for c in again.candidates] == [
        (c.chunk.chunk_id, c.kept, c.dropped_reason) for c in fresh.candidates]
    assert "per_doc" in {c.dropped_reason for c in again.candidates}


# --------------------------------------------------------------------------- path filter


@pytest.mark.parametrize("pattern", ["config/part01.md", "config/part0*", "logging/*", "*/part1*.md"])
def test_path_filter_restricts_candidates(cfg_engine: Engine, pattern: str) -> None:
    r = search(cfg_engine, GENERIC_QUERY, retrieval_mode="hybrid", path_filter=pattern, top_k=50, dedupe=False)
    assert r.candidates
    assert all(fnmatch.fnmatch(c.chunk.path, pattern) for c in r.candidates), {c.chunk.path for c in r.candidates}
    everything = search(cfg_engine, GENERIC_QUERY, retrieval_mode="hybrid", top_k=100, dedupe=False, candidates=100)
    expected = {c.chunk.chunk_id for c in everything.candidates if fnmatch.fnmatch(c.chunk.path, pattern)}
    assert {c.chunk.chunk_id for c in r.candidates} == expected


def test_path_filter_list(cfg_engine: Engine) -> None:
    r = search(cfg_engine, GENERIC_QUERY, path_filter="config/part01.md, logging/*", top_k=50, dedupe=False)
    assert {c.chunk.path for c in r.candidates} == {"config/part01.md", "logging/format.md"}


# --------------------------------------------------------------------------- parity with Qdrant's query API


def pools(engine: Engine, query: str, settings: RagcoreSettings):
    q_dense = engine.encoder.encode([query])[0]
    qs = engine.hybrid_search.bm25.encode_query(query)
    local = local_pool(engine.hybrid_search.index(COLLECTION), q_dense, qs, settings)
    # the Qdrant-server code path, run against the embedded client (same query API)
    server = server_pool(engine.store.client, COLLECTION, q_dense, qs, settings)

    def rows(pool):
        return [(e.chunk, e.cosine, e.bm25, e.dense_rank, e.sparse_rank) for e in pool]

    return rows(local), rows(server)


@pytest.mark.parametrize("query", [IDENT_QUERY, GENERIC_QUERY, "database transaction lock", "log format record"])
def test_local_index_matches_qdrant_query_api(cfg_engine: Engine, query: str) -> None:
    s = cfg_engine.settings.with_(retrieval_mode="hybrid", candidates=10)
    local, server = pools(cfg_engine, query, s)

    def dense_order(pool):
        return [c.chunk_id for c, _, _, dr, _ in sorted((e for e in pool if e[3]), key=lambda e: e[3])]

    assert dense_order(local)[:5] == dense_order(server)[:5]
    l_cos = {c.chunk_id: d for c, d, *_ in local}
    s_cos = {c.chunk_id: d for c, d, *_ in server}
    for cid in set(l_cos) & set(s_cos):
        assert l_cos[cid] == pytest.approx(s_cos[cid], abs=1e-4)

    l_bm = {c.chunk_id: s for c, _, s, _, sr in local if sr}
    s_bm = {c.chunk_id: s for c, _, s, _, sr in server if sr}
    shared = set(l_bm) & set(s_bm)
    assert shared and len(shared) >= min(len(l_bm), len(s_bm)) - 1
    for cid in shared:
        assert l_bm[cid] == pytest.approx(s_bm[cid], abs=1e-4), (cid, l_bm[cid], s_bm[cid])
    l_sparse_order = [c.chunk_id for c, *_ , sr in sorted((e for e in local if e[4]), key=lambda e: e[4])]
    s_sparse_order = [c.chunk_id for c, *_ , sr in sorted((e for e in server if e[4]), key=lambda e: e[4])]
    assert l_sparse_order[:3] == s_sparse_order[:3]


@pytest.mark.parametrize("pattern", ["config/part0*", "logging/*"])
def test_path_filter_same_on_server_path(cfg_engine: Engine, pattern: str) -> None:
    """With a Qdrant server the same glob must select the same chunks as in embedded mode."""
    s = cfg_engine.settings.with_(retrieval_mode="hybrid", candidates=100, path_filter=pattern)
    local, server = pools(cfg_engine, GENERIC_QUERY, s)
    assert {c.chunk_id for c, *_ in local} == {c.chunk_id for c, *_ in server}, (
        sorted({c.path for c, *_ in local}), sorted({c.path for c, *_ in server})
    )
