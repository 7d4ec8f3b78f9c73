"""A model whose answer is only an echo of ragcore's prompt markup (issue 43): small models sometimes
copy an ``<evidence n="1" …>`` block and write nothing of their own. With the echo removed nothing is
left, and the answer used to be empty (status partial). It is now the extractive answer from the same
evidence, with a note saying the model's answer was replaced and why; streamed (the ``message`` event)
and not, the same text. The model is the scripted OpenAI-protocol server on 127.0.0.1."""

from __future__ import annotations

import pytest

from ragcore.settings.config import LlmSettings
from ragcore.synthesis.llm.echo import only_echo, strip_prompt_echo
from tests.support.openai_server import Text

CORPUS = {
    "refunds.md": "# Refunds\n\nRefunds are issued within 14 days of purchase for unused items.\n",
    "shipping.md": "# Shipping\n\nOrders ship within two business days. Express shipping costs extra.\n",
}
QUESTION = "When are refunds issued for unused items?"
ECHO = ('<evidence n="1" origin="corpus" path="refunds.md" lines="3-3">\n'
        "Refunds are issued within 14 days of purchase for unused items. [1]\n</evidence>")


@pytest.fixture(scope="module")
def engine(ingested_engine):
    return ingested_engine(CORPUS, "shop")


def _settings(engine, server, **kw):
    llm = LlmSettings(base_url=server.base_url, api_key="k", model="small", max_retries=0, **kw)
    return engine.settings.with_(collection="shop", llm=llm, abstain_bar=0.0, calibrated_bar=False)


@pytest.mark.parametrize("reply", [ECHO, f"Answer: {ECHO} [1]", f"{ECHO}\n\n[1]"])
def test_an_answer_that_is_only_an_echo_becomes_the_extractive_answer(engine, openai_server, reply) -> None:
    extractive = engine.ask(QUESTION, settings=engine.settings.with_(collection="shop", abstain_bar=0.0,
                                                                     calibrated_bar=False))
    openai_server.script([Text([reply[:40], reply[40:]])])
    events = list(engine.stream(QUESTION, settings=_settings(engine, openai_server)))
    answer = events[-1].data["answer"]
    assert answer.answer == extractive.answer and "14 days" in answer.answer  # not empty: the same evidence, quoted
    assert answer.status == extractive.status == "ok"
    assert [e.data["text"] for e in events if e.type == "message"] == [answer.answer]  # streamed = not streamed
    actions = answer.validation.guardrail_actions
    assert any(a.startswith("replaced the LLM answer with the extractive answer") and "only an echo" in a for a in actions)
    assert answer.citations and "<evidence" not in answer.answer


def test_the_same_under_the_extractive_policy_and_an_answer_of_its_own_stays(engine, openai_server) -> None:
    openai_server.script([Text([ECHO])])
    replaced = engine.ask(QUESTION, settings=_settings(engine, openai_server, unsupported_policy="extractive"))
    assert "14 days" in replaced.answer and replaced.status == "ok"
    assert sum(a.startswith("replaced the LLM answer") for a in replaced.validation.guardrail_actions) == 1
    own = "Refunds are issued within 14 days of purchase for unused items [1]."
    openai_server.script([Text([f"{ECHO}\n\n{own}"])])  # an echo and an answer of its own: the answer stays, marked
    kept = engine.ask(QUESTION, settings=_settings(engine, openai_server))
    assert kept.answer.strip() == own and kept.status == "partial"
    assert not any(a.startswith("replaced") for a in kept.validation.guardrail_actions)


@pytest.mark.parametrize("text, only", [("", True), ("[1] [2, 3]", True), ("Answer:", True), ("See [1].", True),
                                        ("Refunds take 14 days [1].", False), ("It ships in two days.", False)])
def test_only_echo_counts_the_words_left(text, only) -> None:
    left, n = strip_prompt_echo(f"{ECHO}\n{text}")
    assert n == 1 and only_echo(left) is only


def test_ragcore_ask_stream_shows_the_answer_that_replaced_the_echo(engine, openai_server, monkeypatch, capsys) -> None:
    from ragcore.cli.main import main

    monkeypatch.setenv("RAGCORE_DATA_DIR", str(engine.settings.data_dir))
    monkeypatch.setenv("RAGCORE_LLM_BASE_URL", openai_server.base_url)
    monkeypatch.setenv("RAGCORE_LLM_MODEL", "small")
    monkeypatch.setenv("RAGCORE_LLM_API_KEY", "k")
    monkeypatch.setenv("RAGCORE_ABSTAIN_BAR", "0")
    openai_server.script([Text([ECHO])])
    assert main(["ask", QUESTION, "-c", "shop", "--stream"]) == 0
    out = capsys.readouterr().out
    streamed, rest = out.split("</evidence>", 1)  # the model's tokens went out as they came
    assert "14 days" in rest.split("guardrail:")[0]  # then the answer that replaced them, before its notes
    assert "guardrail: replaced the LLM answer with the extractive answer" in rest
