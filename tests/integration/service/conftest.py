"""A real `ragcore serve` app on 127.0.0.1: uvicorn in a thread over an Engine whose collection
"guide" holds three pages of the bundled guide (the real ONNX model, Qdrant Edge in a temp
folder). Servers differ by their ServiceSettings (keys, limits) and by the engine's LLM (none:
extractive; or the scripted OpenAI-protocol server, whose replies a test scripts)."""

from __future__ import annotations

import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

import pytest
import uvicorn

from ragcore.engine.engine import Engine
from ragcore.service.app import create_app
from ragcore.settings.config import LlmSettings, RagcoreSettings
from ragcore.settings.service import ServiceSettings
from tests.conftest import DOCS
from bench.support.scripted_openai import ScriptedOpenAIServer

PAGES = ("04-retrieval-modes-and-fusion.md", "06-citations-and-the-answer-contract.md", "08-selected-text-mode.md")
KEY = "test-key-3f9a1c0d5e"


@dataclass
class Served:
    url: str
    engine: Engine
    settings: ServiceSettings
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def serve_in_thread(engine: Engine, settings: ServiceSettings, **app_options) -> Served:
    app = create_app(engine, settings, **app_options)
    config = uvicorn.Config(app, host="127.0.0.1", port=0, access_log=False, log_config=None, lifespan="on",
                            ws_max_size=settings.max_body_bytes)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    return Served(f"http://127.0.0.1:{port}", engine, settings, server, thread)


@pytest.fixture(scope="session")
def guide_data(tmp_path_factory: pytest.TempPathFactory, encoder) -> Path:
    """A data folder whose collection "guide" holds three pages of the bundled guide."""
    src = tmp_path_factory.mktemp("svc-corpus")
    for name in PAGES:
        shutil.copy(DOCS / name, src / name)
    data = tmp_path_factory.mktemp("svc-data")
    engine = Engine(base_settings(data), encoder=encoder)
    engine.ingest([src], "guide")
    engine.close()
    return data


def base_settings(data: Path, **changes) -> RagcoreSettings:
    # the bar of the settings, not the label-free one calibrated on three pages
    return RagcoreSettings(data_dir=data, collection="guide", calibrated_bar=False, **changes)


@pytest.fixture(scope="module")
def start_server(encoder) -> Iterator[Callable[..., Served]]:
    """``start_server(data, llm=None, **service_settings)``: a served engine, stopped at module end."""
    started: list[Served] = []

    def start(data: Path, llm: LlmSettings | None = None, **svc) -> Served:
        engine = Engine(base_settings(data, **({"llm": llm} if llm else {})), encoder=encoder)
        served = serve_in_thread(engine, ServiceSettings(**svc))
        started.append(served)
        return served

    yield start
    for s in started:
        s.stop()
        s.engine.close()


@pytest.fixture(scope="module")
def llm_server() -> Iterator[ScriptedOpenAIServer]:
    server = ScriptedOpenAIServer()
    server.start()
    yield server
    server.stop()


def scripted_llm(server: ScriptedOpenAIServer) -> LlmSettings:
    return LlmSettings(base_url=server.base_url, api_key="upstream-key", model="scripted", timeout_s=30, max_retries=0)


def auth(key: str = KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}
