"""Ingest through an embeddings endpoint (the scripted protocol server on 127.0.0.1,
bench/support/scripted_embeddings.py): ``RAGCORE_EMBED_CONCURRENCY`` requests in flight while the
files are read, every vector stored with its own chunk although the answers come back out of order,
a 429 retried, the section headings embedded along the way, and a failure that loses nothing and
says what went wrong."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pytest

from ragcore.cli.main import main
from ragcore.encoders.base import EmbedError
from ragcore.storage.headings import heading_texts
from ragcore.storage.store import embed_text, point_id
from tests.conftest import write_corpus
from bench.support.scripted_embeddings import Fail, Hang, ScriptedEmbeddingServer, bag_vector

DIM = 48


def corpus(n_files: int = 6, sections: int = 4, tag: str = "") -> dict[str, str]:
    """Files of several sections, each its own chunk at chunk_size 40: many small batches."""
    files = {}
    for f in range(n_files):
        parts = [f"# Topic {f}{tag}\n"]
        for s in range(sections):
            words = " ".join(f"w{f}x{s}y{k}" for k in range(30))
            parts.append(f"## Part {f}.{s}{tag}\n\nSection {s} of file {f}{tag}: {words}.\n")
        files[f"doc{f}.md"] = "\n".join(parts)
    return files


@pytest.fixture
def server() -> Iterator[ScriptedEmbeddingServer]:
    with ScriptedEmbeddingServer(dim=DIM) as s:
        yield s


def endpoint_settings(engine, server, **kw):
    return engine.settings.with_(embed_model="openai:scripted-embed", embed_base_url=server.base_url,
                                 embed_request_size=4, embed_concurrency=4, chunk_size=40, chunk_overlap=0, **kw)


def stored_chunks(engine, name: str):
    snap = engine.store.snapshot(name)
    return list(snap.chunks), np.asarray(snap.dense)


def expected(text: str) -> np.ndarray:
    v = np.asarray(bag_vector(text, DIM), dtype=np.float32)
    return v / np.linalg.norm(v)


def record_write_order(engine) -> list[tuple[str, int]]:
    """(path, start line) of every chunk in the order it reaches the store: the real write, watched."""
    written: list[tuple[str, int]] = []
    write_chunks = engine.store.write_chunks

    def recording(collection, chunks, *args, **kw):
        written.extend((c.path, c.start_line) for c in chunks)
        return write_chunks(collection, chunks, *args, **kw)

    engine.store.write_chunks = recording
    return written


def test_requests_overlap_answers_out_of_order_land_on_their_own_chunks(tmp_path, make_engine, server) -> None:
    engine = make_engine()
    s = endpoint_settings(engine, server)
    # the first requests answer slowest first: batches finish out of order, and a 429 comes mid-stream
    server.script(Hang(0.01), Hang(0.6), Hang(0.4), Hang(0.2), Fail(429, retry_after=0.05), Hang(0.3))
    written = record_write_order(engine)
    report = engine.ingest([write_corpus(tmp_path / "c", corpus())], "ep", settings=s, calibrate=False)
    assert report.chunks_written == report.chunks_embedded >= 20 and report.count("failed") == 0
    assert server.max_in_flight >= 2  # several requests in flight (2 at the start: adaptive.py), no more than RAGCORE_EMBED_CONCURRENCY
    assert server.max_in_flight <= 4
    assert max(len(r.body["input"]) for r in server.requests) <= 4  # RAGCORE_EMBED_REQUEST_SIZE is the ceiling
    refused = server.requests[4].body["input"]  # the 429: its texts are sent again (in a request sized anew)
    assert all(sum(t in r.body["input"] for r in server.requests) == 2 for t in refused)
    chunks, dense = stored_chunks(engine, "ep")
    assert len(chunks) == report.chunks_written
    for c, v in zip(chunks, dense):  # each vector is its own chunk's (the server's bag of words of it)
        assert np.allclose(v, expected(embed_text(c)), atol=1e-5), c.chunk_id
    # the store saw the chunks in the order they were read (what makes a crash safe), each once
    assert written == sorted(written) and len(written) == len(set(written)) == len(chunks)


def test_headings_are_embedded_along_the_way_not_after_the_files(tmp_path, make_engine, server) -> None:
    engine = make_engine()
    s = endpoint_settings(engine, server)
    files = corpus(n_files=5, sections=3)
    files["long.md"] = "# Long\n\n" + "\n\n".join(" ".join(f"long{p}w{k}" for k in range(38)) + "." for p in range(40))
    engine.ingest([write_corpus(tmp_path / "c", files)], "ep", settings=s, calibrate=False)
    chunks, _ = stored_chunks(engine, "ep")
    headings = heading_texts(chunks)
    record = engine.store.read_meta("ep")["embedding"]
    from ragcore.encoders.base import ModelRecord

    stored = engine.store.headings.for_model(ModelRecord.from_meta(record)).get(sorted(headings))
    assert set(stored) == headings  # every heading the snapshot needs has its vector stored
    kinds = ["heading" if set(r.body["input"]) <= headings else "chunks" for r in server.requests
             if r.body["input"] != ["dimension probe"]]
    assert kinds.index("heading") < len(kinds) - 1 - kinds[::-1].index("chunks")  # before the long file's last batch
    n = len(server.requests)
    engine.ingest([tmp_path / "c"], "ep", settings=s, calibrate=False)  # unchanged: nothing to embed at all
    assert len(server.requests) == n


def test_a_failing_endpoint_loses_nothing_says_why_and_the_next_run_repairs(tmp_path, make_engine, server, capsys) -> None:
    engine = make_engine()
    s = endpoint_settings(engine, server)
    root = write_corpus(tmp_path / "c", corpus())
    engine.ingest([root], "ep", settings=s, calibrate=False)
    before = {c.chunk_id: c.text for c in stored_chunks(engine, "ep")[0]}
    write_corpus(root, corpus(tag=" v2"))  # every file changed
    server.script(Hang(0.05), Hang(0.05), Fail(400, body='{"error": "input too long"}'))
    with pytest.raises(EmbedError) as err:
        engine.ingest([root], "ep", settings=s, calibrate=False)
    msg = str(err.value)
    assert "HTTP 400" in msg and "input too long" in msg and "scripted-embed" in msg
    refs = engine.store.point_refs("ep")
    old_ids = {point_id(cid) for cid in before}
    versions: dict[str, dict[str, list]] = {}
    for r in refs:
        versions.setdefault(r.path, {}).setdefault(r.doc_hash, []).append(r)
    assert len(versions) == 6  # every file still has a complete version, the old or (written before the failure) the new
    assert all(any(len(v) == v[0].doc_chunks for v in by_hash.values()) for by_hash in versions.values())
    assert len(old_ids & {r.id for r in refs}) >= len(old_ids) // 2  # the failure came early: most files kept their old version
    # the CLI says the same, with the endpoint, and exits non-zero
    server.script(Fail(400, body='{"error": "input too long"}'))
    env = {"RAGCORE_DATA_DIR": str(engine.settings.data_dir), "RAGCORE_EMBED_BASE_URL": server.base_url,
           "RAGCORE_EMBED_REQUEST_SIZE": "4", "RAGCORE_CHUNK_SIZE": "40", "RAGCORE_CHUNK_OVERLAP": "0"}
    mp = pytest.MonkeyPatch()
    for k, v in env.items():
        mp.setenv(k, v)
    try:
        engine.close()  # one writer at a time: the CLI's own engine opens the store
        code = main(["ingest", str(root), "-c", "ep", "--no-calibrate"])
    finally:
        mp.undo()
    assert code != 0 and "HTTP 400" in capsys.readouterr().err
    repaired = make_engine(data_dir=engine.settings.data_dir)
    report = repaired.ingest([root], "ep", settings=endpoint_settings(repaired, server), calibrate=False)
    assert report.count("failed") == 0
    chunks, dense = stored_chunks(repaired, "ep")
    assert all(" v2" in c.text for c in chunks) and not old_ids & {point_id(c.chunk_id) for c in chunks}
    assert all(np.allclose(v, expected(embed_text(c)), atol=1e-5) for c, v in zip(chunks, dense))
