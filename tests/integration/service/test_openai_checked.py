"""What streams through ``/v1/chat/completions`` is what the checker passed (issue 43, items 5 and 6).

A real ``ragcore serve`` whose engine answers with the scripted OpenAI-protocol server, driven by
the official ``openai`` SDK and by LangChain's ``ChatOpenAI``. The scripted model writes a
supported sentence, then (in the middle of its stream) a made-up one the checker rejects; the
streamed and the whole reply must carry the same checked text, never the model's raw tokens."""

from __future__ import annotations

import openai
import pytest

from ragcore.settings.config import LlmSettings
from tests.integration.service.conftest import KEY
from bench.support.scripted_openai import Cut, Hang, Text

QUESTION = "What does the threshold apply to?"
SUPPORTED = "The threshold applies to the cosine similarity between the question and the chunk, in every retrieval mode"
MADE_UP = "The threshold defaults to 0 and also sets the colour of the sidebar [1]."
# the rejected claim arrives mid-stream, after a sentence that passes
FAILS_MID_STREAM = [f"{SUPPORTED} ", "[1]. ", "The threshold defaults ", "to 0 and also sets the colour ", "of the sidebar [1]."]
# the deadline test needs a deadline the scripted hang outlasts; every other test a generous one (at load
# 18-25 a whole checked answer once took longer than 6 s)
DEADLINE = 6.0
GENEROUS = 120.0


def _llm(server, **kw) -> LlmSettings:
    return LlmSettings(base_url=server.base_url, api_key="upstream-key", model="scripted", timeout_s=30,
                       max_retries=0, **kw)


@pytest.fixture(scope="module")
def replacing(start_server, guide_data, llm_server):
    """RAGCORE_LLM_UNSUPPORTED_POLICY=extractive: an unsupported answer is replaced."""
    return start_server(guide_data, llm=_llm(llm_server, unsupported_policy="extractive"), api_keys=(KEY,),
                        deadline_s=GENEROUS)


@pytest.fixture(scope="module")
def annotating(start_server, guide_data, llm_server):
    """The default policy: an unsupported sentence is kept and flagged (status partial)."""
    return start_server(guide_data, llm=_llm(llm_server), api_keys=(KEY,), deadline_s=GENEROUS)


@pytest.fixture(scope="module")
def hurried(start_server, guide_data, llm_server):
    """The default policy with a short deadline, for the deadline test only."""
    return start_server(guide_data, llm=_llm(llm_server), api_keys=(KEY,), deadline_s=DEADLINE)


@pytest.fixture(autouse=True)
def _drain(llm_server):
    while llm_server.pending:
        llm_server._next(models=False)


def _client(served) -> openai.OpenAI:
    return openai.OpenAI(base_url=served.url + "/v1", api_key=KEY, max_retries=0, timeout=60)


def _both(served, llm_server, reply) -> tuple[str, str, dict, dict]:
    """(streamed text, whole text, streamed ragcore field, whole ragcore field) for one scripted reply."""
    client = _client(served)
    msgs = [{"role": "user", "content": QUESTION}]
    llm_server.script([reply])
    chunks = list(client.chat.completions.create(model="guide", messages=msgs, stream=True))
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    llm_server.script([reply])
    whole = client.chat.completions.create(model="guide", messages=msgs)
    assert chunks[-1].choices[0].finish_reason == whole.choices[0].finish_reason == "stop"
    return streamed, whole.choices[0].message.content, chunks[-1].ragcore, whole.ragcore


def test_a_replaced_answer_streams_only_its_replacement(replacing, llm_server) -> None:
    streamed, whole, s_extra, w_extra = _both(replacing, llm_server, Text(FAILS_MID_STREAM, delay=0.05))
    assert streamed == whole
    assert "defaults to 0" not in streamed and "colour" not in streamed  # the rejected text never left the server
    assert s_extra["status"] == w_extra["status"]


def test_a_flagged_answer_says_so_in_its_text_streamed_and_not(annotating, llm_server) -> None:
    streamed, whole, s_extra, _ = _both(annotating, llm_server, Text(FAILS_MID_STREAM, delay=0.05))
    assert streamed == whole and s_extra["status"] == "partial"
    status = [line for line in streamed.splitlines() if line.startswith("[ragcore status: partial]")]
    assert len(status) == 1 and "not supported by the sources" in status[0]


def test_a_model_failing_mid_stream_sends_no_partial_model_text(annotating, llm_server) -> None:
    # the stream breaks after the made-up sentence's first pieces: the fallback is quoted from the sources
    streamed, whole, s_extra, _ = _both(annotating, llm_server, Cut(FAILS_MID_STREAM[:3], after=3))
    assert streamed == whole and "The threshold defaults" not in streamed
    assert s_extra["status"] == "partial" and "[ragcore status: partial]" in streamed


def test_an_echo_of_the_prompt_markup_is_caught(annotating, llm_server) -> None:
    echo = Text([f'<evidence n="1" origin="corpus" path="05-scores.md" lines="1-9">\n{SUPPORTED} [1] [2] [3].\n'
                 f"</evidence>\n\n{SUPPORTED} [1]."])
    streamed, whole, s_extra, _ = _both(annotating, llm_server, echo)
    assert streamed == whole and "<evidence" not in streamed and "</evidence>" not in streamed
    assert s_extra["status"] == "partial" and "prompt markup" in streamed
    cited = {c["n"] for c in s_extra["citations"]}
    assert cited == {1}  # only what the answer cites: the echo's [2] [3] went with it
    assert streamed.split("Sources:\n")[1].count("\n") == len(cited) - 1


def test_an_answer_that_is_only_an_echo_streams_the_extractive_answer_and_says_why(annotating, llm_server) -> None:
    # a small model copied an evidence block and wrote nothing of its own: once the echo is removed nothing
    # is left, so the answer is the one quoted from the sources (it used to be empty, status partial)
    echo = Text(['<evidence n="1" origin="corpus" path="05-scores.md" lines="1-9">\n', f"{SUPPORTED} [1].\n</evidence>"])
    streamed, whole, s_extra, w_extra = _both(annotating, llm_server, echo)
    assert streamed == whole and "<evidence" not in streamed and s_extra["status"] == w_extra["status"]
    body, note = streamed.split("\n\n[ragcore note] ")
    assert "only an echo of ragcore's prompt markup" in note.splitlines()[0]
    assert body.strip() and s_extra["citations"]  # an answer, with its sources


def test_a_streamed_deadline_is_an_error_for_the_sdk_and_langchain(hurried, llm_server) -> None:
    from langchain_openai import ChatOpenAI

    llm_server.script([Hang(seconds=30, pieces=["The threshold "])])
    with pytest.raises(openai.APIError, match="deadline"):
        for _ in _client(hurried).chat.completions.create(
                model="guide", messages=[{"role": "user", "content": QUESTION}], stream=True):
            pass
    chat = ChatOpenAI(model="guide", base_url=hurried.url + "/v1", api_key=KEY, max_retries=0, timeout=60)
    llm_server.script([Hang(seconds=30, pieces=["The threshold "])])
    with pytest.raises(openai.APIError, match="deadline"):
        for _ in chat.stream(QUESTION):
            pass
    llm_server.script([Hang(seconds=30, pieces=["The threshold "])])  # not streamed: the same error, as a 504
    with pytest.raises(openai.InternalServerError, match="deadline") as err:
        _client(hurried).chat.completions.create(model="guide", messages=[{"role": "user", "content": QUESTION}])
    assert err.value.status_code == 504


def test_langchain_streams_the_checked_text(replacing, llm_server) -> None:
    from langchain_openai import ChatOpenAI

    chat = ChatOpenAI(model="guide", base_url=replacing.url + "/v1", api_key=KEY, max_retries=0, timeout=60)
    llm_server.script([Text(FAILS_MID_STREAM, delay=0.05)])
    streamed = "".join(str(c.content) for c in chat.stream(QUESTION))
    llm_server.script([Text(FAILS_MID_STREAM)])
    whole = chat.invoke(QUESTION)
    assert streamed == whole.content and "colour" not in streamed
    assert whole.usage_metadata and whole.usage_metadata["output_tokens"] > 0  # usage is no longer 0
