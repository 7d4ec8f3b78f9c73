"""The whole-answer deadline and stopping in time (ragcore/synthesis/llm/budget.py), against
the scripted OpenAI-protocol server on 127.0.0.1."""

from __future__ import annotations

import threading
import time

import pytest

from ragcore.settings.config import LlmSettings
from ragcore.synthesis.llm.errors import GenerationError
from ragcore.synthesis.llm.budget import Budget, Stopped, call_until
from ragcore.synthesis.llm.generator import OpenAIGenerator
from tests.support.openai_server import Hang, HttpError, ScriptedOpenAIServer, Text

MESSAGES = [{"role": "user", "content": "Where are sessions stored?"}]


def make(server: ScriptedOpenAIServer, api: str = "chat", **kw) -> OpenAIGenerator:
    kw.setdefault("timeout_s", 3.0)
    kw.setdefault("max_retries", 0)
    return OpenAIGenerator(LlmSettings(base_url=server.base_url, api_key="sk-test-key", model="test-model", api=api, **kw))


# --------------------------------------------------------------------------- the budget itself


def test_budget_reasons_and_waits() -> None:
    cancel = threading.Event()
    budget = Budget(30, cancel)
    assert budget.reason() is None
    threading.Timer(0.05, cancel.set).start()
    t0 = time.monotonic()
    assert budget.wait(threading.Event()) is False and budget.reason() == "cancelled"
    assert time.monotonic() - t0 < 10  # ~0.05 s quiet: noticed within the poll interval, not at the deadline (30 s)

    late = Budget(0.1)
    t0 = time.monotonic()
    assert late.wait(threading.Event()) is False and late.reason() == "deadline"
    assert 0.09 <= time.monotonic() - t0 < 5
    with pytest.raises(Stopped):
        late.check()


def test_call_until_returns_a_result_or_abandons_the_call() -> None:
    assert call_until(lambda: 42, Budget(1.0)) == 42
    with pytest.raises(KeyError):
        call_until(lambda: {}["x"], Budget(1.0))
    release = threading.Event()
    t0 = time.monotonic()
    with pytest.raises(Stopped):
        call_until(lambda: release.wait(60), Budget(0.2))
    assert time.monotonic() - t0 < 10  # 0.2 s quiet, the call 60 s
    release.set()


# --------------------------------------------------------------------------- against the server


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_a_trickling_server_is_cut_at_the_deadline(openai_server: ScriptedOpenAIServer, api: str) -> None:
    # one token every 0.4 s, far under timeout_s: only the deadline can end this answer
    openai_server.script([Text("warm"), Text([f"t{i} " for i in range(150)], delay=0.4)])  # 60 s to the end
    # the SDK imports its types on first use (seconds on a busy machine): not what is timed here
    assert "".join(make(openai_server, api).stream(MESSAGES)) == "warm"
    gen = make(openai_server, api, deadline_s=1.0)

    got: list[str] = []
    t0 = time.monotonic()
    with pytest.raises(GenerationError) as info:
        for piece in gen.stream(MESSAGES):
            got.append(piece)
    elapsed = time.monotonic() - t0

    err = info.value
    assert err.kind == "deadline" and err.partial == "".join(got)
    assert "1 s deadline" in err.message and "RAGCORE_LLM_DEADLINE_S" in err.message
    # Tokens leave the server at +0, +0.4, +0.8, +1.2 s (plus the request's latency, which a
    # loaded machine stretches). The watchdog ends the blocked read at the deadline: "t3 "
    # never arrives (checking the clock only between tokens would have yielded it first).
    assert len(got) <= 3 and got == [f"t{i} " for i in range(len(got))]
    assert 0.95 <= elapsed < 15  # 1 s quiet, far from the answer's 60 s
    req = openai_server.generation_requests()[-1]
    assert req.disconnected.wait(10), "the HTTP response was not closed"


def test_complete_is_bounded_by_the_deadline(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([Hang(60.0)])
    gen = make(openai_server, deadline_s=0.6)

    t0 = time.monotonic()
    with pytest.raises(GenerationError) as info:
        gen.complete(MESSAGES)

    assert info.value.kind == "deadline" and info.value.partial == ""
    assert "before any text" in info.value.message
    assert time.monotonic() - t0 < 10  # 0.6 s quiet, the hang 60 s


def test_the_deadline_covers_the_sdks_retries_and_stops_them(openai_server: ScriptedOpenAIServer) -> None:
    # the SDK would sleep out Retry-After: 1.2 and ask again; the deadline ends the answer first
    openai_server.script([HttpError(503, message="overloaded", retry_after=4), Text("late")])
    gen = make(openai_server, deadline_s=0.3, max_retries=2)

    t0 = time.monotonic()
    with pytest.raises(GenerationError) as info:
        list(gen.stream(MESSAGES))
    assert info.value.kind == "deadline" and time.monotonic() - t0 < 3  # 0.3 s quiet, the SDK's wait 4 s

    time.sleep(4)  # past the SDK's wait: the abandoned call must not have asked again
    assert len(openai_server.generation_requests()) == 1 and openai_server.pending == 1


def test_an_answer_within_the_deadline_is_untouched(openai_server: ScriptedOpenAIServer) -> None:
    openai_server.script([Text(["Sessions", " live in", " the database [1]."], delay=0.05)])
    gen = make(openai_server, deadline_s=2.0)
    assert "".join(gen.stream(MESSAGES)) == "Sessions live in the database [1]."


def test_cancel_ends_a_read_blocked_on_a_silent_server(openai_server: ScriptedOpenAIServer) -> None:
    # the server sends two pieces, then nothing: the cancel must not wait for timeout_s
    openai_server.script([Hang(60.0, pieces=["Sessions", " are"])])
    gen = make(openai_server, timeout_s=60.0)
    cancel = threading.Event()

    it = gen.stream(MESSAGES, cancel=cancel)
    assert next(it) == "Sessions" and next(it) == " are"
    threading.Timer(0.2, cancel.set).start()
    t0 = time.monotonic()
    with pytest.raises(GenerationError) as info:
        next(it)

    assert info.value.kind == "cancelled" and info.value.partial == "Sessions are"
    assert time.monotonic() - t0 < 10  # 0.2 s quiet, timeout_s 60 s
    assert openai_server.generation_requests()[0].disconnected.wait(10)
