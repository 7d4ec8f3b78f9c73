"""A question stuck in a call that cannot be cancelled does not keep `ragcore serve` alive after
it is told to stop: the service's worker threads are daemons (ragcore/service/pool.py).

The stuck call is the one stand-in here: no real part of the engine can be made to hang on
purpose, so the child process replaces ``Engine.retrieve`` with a wait that never ends (as a
model endpoint that never answers would), then runs the real `ragcore serve` command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

from bench.serve import wait_ready
from tests.conftest import REPO
from tests.support.scripted_openai import unused_port

CHILD = """
import sys, threading
from ragcore.cli.main import main
from ragcore.engine.engine import Engine

def stuck(self, *args, **kwargs):
    print("stuck", flush=True)
    threading.Event().wait()  # never set: an uncancellable wait

Engine.retrieve = stuck
sys.exit(main(["serve", "--port", sys.argv[1]]))
"""


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stuck_question_does_not_keep_the_server_alive_at_shutdown(guide_data, sig) -> None:
    port = unused_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGCORE_")}
    env.update(PYTHONPATH=str(REPO), RAGCORE_DATA_DIR=str(guide_data), RAGCORE_COLLECTION="guide",
               RAGCORE_CALIBRATED_BAR="false")
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(port)], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, proc)
        with pytest.raises(httpx.ReadTimeout):  # the question is running, and will never end by itself
            httpx.post(url + "/api/retrieve", json={"question": "How are rankings fused?"}, timeout=2)
        assert proc.stdout.readline().strip() == "stuck"
        t0 = time.monotonic()
        proc.send_signal(sig)
        # uvicorn gives open requests 5 s (timeout_graceful_shutdown), then the process must end
        code = proc.wait(timeout=30)
        assert time.monotonic() - t0 < 25
        assert code in (0, -sig), proc.stderr.read()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
