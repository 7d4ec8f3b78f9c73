"""``RAGCORE_RERANK=llm`` keeps its listwise prompt inside ``RAGCORE_LLM_CONTEXT_WINDOW`` and, when the
candidates cannot fit, says to lower ``RAGCORE_RERANK_CANDIDATES`` (issue 43, item 7). Against the
scripted OpenAI-protocol server on 127.0.0.1 through the real generator."""

from __future__ import annotations

from typing import Iterator

import pytest

from ragcore.retrieval.rerank import RerankError, reranker_for
from ragcore.settings.config import LlmSettings, RagcoreSettings
from ragcore.synthesis.llm.generator import OpenAIGenerator
from bench.support.scripted_openai import ScriptedOpenAIServer, Text

PASSAGE = "Refunds are issued within fourteen days of purchase for unused items returned in their box. " * 10


@pytest.fixture
def server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as s:
        yield s


def _reranker(tmp_path, server, window: int):
    llm = LlmSettings(base_url=server.base_url, model="scripted", context_window=window, max_retries=0)
    s = RagcoreSettings(data_dir=tmp_path, llm=llm, rerank="llm")
    return reranker_for("llm", s, OpenAIGenerator(llm).complete)


def test_the_listwise_prompt_fits_the_context_window(tmp_path, server) -> None:
    server.script([Text("[2, 1]")])
    scores = _reranker(tmp_path, server, 2048).scores("how long do refunds take?", [PASSAGE] * 10)
    assert scores[1] > scores[0]
    prompt = "".join(m["content"] for m in server.generation_requests()[0].body["messages"])
    assert len(prompt) <= (2048 - 512) * 3  # the window less the reply's tokens, at 3 characters a token


def test_too_many_candidates_for_the_window_name_rerank_candidates(tmp_path, server) -> None:
    with pytest.raises(RerankError, match=r"RAGCORE_LLM_CONTEXT_WINDOW=2048.*lower RAGCORE_RERANK_CANDIDATES to \d+"):
        _reranker(tmp_path, server, 2048).scores("how long do refunds take?", [PASSAGE] * 30)
    assert not server.generation_requests()  # nothing sent that could not fit
