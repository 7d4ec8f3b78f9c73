"""The ``openai_server`` fixture: a scripted OpenAI-protocol server on 127.0.0.1 per test.

The server itself lives in :mod:`bench.support.scripted_openai` so that the benchmarks can
use it too.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from bench.support.scripted_openai import *  # noqa: F401,F403  (Text, HttpError, Hang, Cut, ...)
from bench.support.scripted_openai import ScriptedOpenAIServer, unused_port  # noqa: F401


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAIServer]:
    """A started :class:`ScriptedOpenAIServer`, stopped when the test ends."""
    server = ScriptedOpenAIServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
