"""The app's streaming plumbing (ui.streaming.Pump + ui.notebook.RunRecorder) against the real
Engine and a real OpenAI-protocol server: Stop cancels, the HTTP stream is closed, the partial
text is kept with outcome "cancelled"."""

from __future__ import annotations

import threading
import time

import pytest

from ragcore.settings.config import LlmSettings
from ui.notebook import RunRecorder
from tests.support.app_support import QUESTION, app_env, shared_runtime  # noqa: F401
from tests.support.openai_server import Text
from ui.streaming import _END, Pump

pytestmark = pytest.mark.slow


def _drain(pump: Pump, recorder: RunRecorder, *, stop_after_tokens: int | None = None, cancel=None, timeout=20.0):
    deadline = time.monotonic() + timeout
    tokens = 0
    while time.monotonic() < deadline:
        item = pump.get(timeout=0.1)
        if item is None:
            continue
        if item is _END:
            return True
        recorder.feed(item)
        if item.type == "token":
            tokens += 1
            if stop_after_tokens is not None and tokens >= stop_after_tokens and cancel is not None:
                cancel.set()
    return False


def test_stop_cancels_the_llm_stream_and_keeps_the_partial_text(app_env, openai_server):
    rt = shared_runtime()
    pieces = [f"word{i} " for i in range(400)]  # 60 s to the end: a stop that waited for it is seen whatever the load
    openai_server.script([Text(pieces, delay=0.15)])
    s = rt.settings.with_(llm=LlmSettings(base_url=openai_server.base_url, model="test-model", api_key="k", max_retries=0))
    recorder = RunRecorder(QUESTION, context_mode="corpus", collection="guide", config=s.public_dict())
    cancel = threading.Event()
    t0 = time.monotonic()
    pump = Pump(rt.engine.stream(QUESTION, settings=s, collection="guide", cancel=cancel), cancel)
    assert _drain(pump, recorder, stop_after_tokens=3, cancel=cancel)
    took = time.monotonic() - t0
    assert took < 30, "stopped long before the model finished"  # ~1-2 s quiet
    req = openai_server.generation_requests()[-1]
    assert req.disconnected.wait(5), "the HTTP stream to the model was closed"
    run = recorder.finish(cancelled=True)
    assert run.outcome == "cancelled"
    assert run.text.startswith("word0 word1 word2") and "word399" not in run.text
    assert run.answer["status"] == "partial" and "Stopped" in run.answer["error_message"]
    assert run.evidence, "the evidence that arrived before the first token is kept"


def test_a_finished_stream_records_the_answer(app_env):
    rt = shared_runtime()
    s = rt.settings
    recorder = RunRecorder(QUESTION, context_mode="corpus", collection="guide", config=s.public_dict())
    cancel = threading.Event()
    pump = Pump(rt.engine.stream(QUESTION, settings=s, collection="guide", cancel=cancel), cancel)
    assert _drain(pump, recorder)
    run = recorder.finish(cancelled=False)
    assert run.outcome == "ok" and run.citations and run.answer["metadata"]["latency_ms"]["total"] > 0
