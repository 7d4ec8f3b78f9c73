"""A model that trickles tokens cannot hold an answer open: the whole-answer deadline ends it
with the text so far and status "partial" (real scripted OpenAI-protocol server on 127.0.0.1)."""

from __future__ import annotations

from ragcore.settings.config import LlmSettings
from tests.conftest import write_corpus
from tests.support.openai_server import Text


def test_deadline_ends_a_trickling_answer(tmp_path, make_engine, openai_server) -> None:
    engine = make_engine()
    engine.ingest([write_corpus(tmp_path / "c", {"a.md": "# Backups\n\nThe backup runs every night at two o'clock.\n"})], "t")
    pieces = ["The backup ", "runs every ", "night at ", "two o'clock ", "[1]."]
    openai_server.script([Text(pieces, delay=0.6)])
    llm = LlmSettings(base_url=openai_server.base_url, api_key="sk-x", model="m", timeout_s=5.0, deadline_s=1.0)
    s = engine.settings.with_(collection="t", llm=llm, abstain_bar=0.0, calibrated_bar=False)
    events = list(engine.stream("When does the backup run?", settings=s))
    answer = events[-1].data["answer"]
    assert answer.status == "partial" and "RAGCORE_LLM_DEADLINE_S" in (answer.error_message or "")
    assert answer.answer.startswith("The backup") and "two o'clock" not in answer.answer  # the text so far, not more
    assert any(e.type == "error" and e.data.get("kind") == "deadline" for e in events)
