"""Ingest through a real llama.cpp server on a loaded machine (issue 43, item 4): llama-cpp-python's
``llama_cpp.server`` serving ``/v1/embeddings`` for the Gemma 3 270M GGUF (tests/support/llama_server.py).

* At every setting's default, with two busy loops taking the machine's cores, an ingest of two
  pages of the guide completes (before requests were sized to the server, the defaults' 64 texts a
  request, 4 in flight, timed out), and a question on it answers while the machine is still loaded.
  Two pages (the one that answers the question and the first), not the five of the report: the old
  defaults sent both pages' chunks in one request, some 3,000 tokens (3,509 and 3,590 sent in all, headings
  included, in runs here), over the 60 s timeout at the 20-40 tokens/s measured here with the busy loops (10-14 tokens/s at
  load 15-22), so the failure the test guards against still happens with two. Five took 15.5 minutes
  alone, and 1,115 s of a full suite run's 6,687 worker-seconds at load 20.
* The server killed mid-ingest (counted by a proxy that records every text it forwards), started
  again on the same port: the ingest run again sends no text the server had already embedded.

On this shared 2-core machine the server embedded 20-40 tokens/s with the busy loops running: the
first test took 15.5 minutes with five pages.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from pathlib import Path

import pytest

from bench.endpoint import busy_loops
from ragcore.cli.main import main
from tests.conftest import DOCS
from tests.support.counting_proxy import CountingProxy
from tests.support.llama_server import require_llama, start_llama

pytestmark = [pytest.mark.real_llm, pytest.mark.slow]
MODEL = "openai:gemma-3-270m"
QUESTION = "How does hybrid mode fuse the dense and sparse rankings?"
FUSION_PAGES = ["01-getting-started.md", "04-retrieval-modes-and-fusion.md"]  # 04 answers QUESTION
FIRST_PAGES = ["01-getting-started.md", "02-ingesting-documents.md"]


def guide_pages(dest: Path, names: list[str]) -> Path:
    dest.mkdir(parents=True)
    for name in names:
        shutil.copy(DOCS / name, dest / name)
    return dest


def test_ingest_at_the_defaults_completes_on_a_loaded_machine(tmp_path, monkeypatch, capsys) -> None:
    require_llama()
    server = start_llama(tmp_path, embedding=True, n_ctx=2048)
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAGCORE_EMBED_BASE_URL", server.base)  # every RAGCORE_EMBED_* setting at its default
    try:
        with busy_loops(2):
            code = main(["ingest", str(guide_pages(tmp_path / "c", FUSION_PAGES)), "-c", "gemma", "--embed-model", MODEL,
                         "--no-calibrate", "--json"])
            out, err = capsys.readouterr()
            assert code == 0, err
            report = json.loads(out)
            assert report["chunks_written"] > 0 and report["endpoint"]["texts_per_s"] > 0
            monkeypatch.setenv("RAGCORE_ABSTAIN_BAR", "0")  # no calibration: answer what is found
            assert main(["ask", QUESTION, "-c", "gemma", "--json"]) == 0
            answer = json.loads(capsys.readouterr().out)
            assert answer["status"] in ("ok", "partial") and answer["citations"], answer.get("error_message")
    finally:
        server.stop()


def test_a_server_killed_mid_ingest_and_restarted_is_sent_no_chunk_twice(tmp_path, monkeypatch, capsys) -> None:
    require_llama()
    server = start_llama(tmp_path, embedding=True, n_ctx=2048)
    proxy = CountingProxy(server.base[: -len("/v1")]).start()
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAGCORE_EMBED_BASE_URL", proxy.base_url)
    corpus = guide_pages(tmp_path / "c", FIRST_PAGES)  # two pages: the server embeds ~20-40 tokens/s on this busy machine

    def kill_when_some_are_embedded() -> None:
        while len(proxy.answered() - {"dimension probe"}) < 3:
            time.sleep(0.05)
        server.kill()

    killer = threading.Thread(target=kill_when_some_are_embedded, daemon=True)
    killer.start()
    try:
        assert main(["ingest", str(corpus), "-c", "gemma", "--embed-model", MODEL, "--no-calibrate"]) != 0
        assert "are kept: run the same ingest again" in capsys.readouterr().err
        embedded = proxy.answered() - {"dimension probe"}
        assert len(embedded) >= 3
        server = start_llama(tmp_path, embedding=True, n_ctx=2048, port=server.port)  # back, same address
        n = len(proxy.seen)
        assert main(["ingest", str(corpus), "-c", "gemma", "--embed-model", MODEL, "--no-calibrate"]) == 0
        resent = {t for f in proxy.seen[n:] for t in f.texts} & embedded
        assert not resent, f"{len(resent)} text(s) the server had embedded were sent again"
    finally:
        killer.join(timeout=1)
        proxy.stop()
        server.stop()
