"""docs/17-ragcore-inside-your-llamaindex-app.md, run as written: its Python blocks execute in
order against a real embedded Qdrant, the real ONNX model and the scripted OpenAI-protocol
server on 127.0.0.1 (a real HTTP server; the only scripted part is what the "model" says)."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from tests.conftest import REPO, write_corpus
from tests.support.openai_server import Text

PAGE = REPO / "docs" / "17-ragcore-inside-your-llamaindex-app.md"
WATERING = "Water tomatoes deeply twice a week, in the morning, so the leaves dry before night."
NOTES = {
    "garden/tomatoes.md": "# Tomatoes\n\n## Watering\n\n" + WATERING + "\nMulch keeps the soil moist between waterings.\n",
    "garden/roses.md": "# Roses\n\n## Pruning\n\nPrune roses in late winter, just above an outward-facing bud.\n",
    "kitchen/bread.md": "# Bread\n\n## Proofing\n\nLet the dough rise until it has doubled, about an hour at room temperature.\n",
}


def page_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_page_has_the_four_parts() -> None:
    blocks = page_blocks()
    assert len(blocks) == 4
    assert "RetrieverQueryEngine" in blocks[1] and "VectorStoreIndex.from_vector_store" in blocks[2]
    assert "SnapshotVectorStore" in blocks[3]


@pytest.mark.slow
def test_page_code_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, openai_server) -> None:
    corpus = write_corpus(tmp_path / "notes", NOTES)
    monkeypatch.setenv("CORPUS", str(corpus))
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-docs-page-key")
    monkeypatch.setenv("RAGCORE_LLM_MODEL", "test-model")
    # the "model" quotes evidence [1], and adds a marker that points at no evidence
    openai_server.script([Text([WATERING[:30], WATERING[30:-1], " [1]. ", "Roses need nothing [7]."])])
    ns: dict = {}
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            for block in page_blocks():
                exec(compile(block, str(PAGE), "exec"), ns)
        _check_query_engine(ns, openai_server)
        _check_vector_store_index(ns)
        _check_snapshot_vector_store(ns, out.getvalue())
    finally:
        if "engine" in ns:
            ns["engine"].close()


def _check_query_engine(ns: dict, server) -> None:
    verdict = ns["checked"].metadata["citation_check"]
    assert [c["path"] for c in verdict["citations"]] == ["garden/tomatoes.md"]
    cited = verdict["citations"][0]
    assert cited["start_line"] == cited["end_line"] == 5  # narrowed to the quoted line
    assert verdict["validation"]["stripped"] == ["[7]"] and not verdict["ok"]
    assert "[7]" not in ns["checked"].response and ns["response"].response.count("[7]") == 1  # a copy
    # what the model read: numbered headers and the text, no bookkeeping keys
    prompt = "\n".join(m["content"] for m in server.generation_requests()[0].body["messages"])
    assert "[1] garden/tomatoes.md:" in prompt and WATERING in prompt, prompt
    for key in ("citation_n", "chunk_id", "doc_hash", "cosine", "dense_rank"):
        assert key not in prompt, key


def _check_vector_store_index(ns: dict) -> None:
    hits = ns["index"].as_retriever(similarity_top_k=3).retrieve("When should I water tomatoes?")
    assert hits[0].node.metadata["path"] == "garden/tomatoes.md"
    assert 0.3 < hits[0].score <= 1.0


def _check_snapshot_vector_store(ns: dict, printed: str) -> None:
    hits = ns["snap_index"].as_retriever(similarity_top_k=3, vector_store_query_mode="hybrid").retrieve(
        "When should I water tomatoes?")
    assert hits[0].node.metadata["path"] == "garden/tomatoes.md" and hits[0].node.metadata["score_kind"] == "rrf"
    assert "garden/tomatoes.md cosine" in printed  # what the page's own loop printed
