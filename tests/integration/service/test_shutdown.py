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
import threading
import time

import httpx
import pytest

from bench.serve import wait_ready
from ragcore.service.pool import DaemonPool
from tests.conftest import REPO
from bench.support.scripted_openai import unused_port

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
        code = proc.wait(timeout=120)  # ~5.5 s quiet; only a process that never ends fails
        assert code in (0, -sig), proc.stderr.read()[-2000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_pool_runs_tasks_on_at_most_its_size_of_daemon_threads_and_stops_at_shutdown() -> None:
    pool = DaemonPool(2, name="t-pool")
    release, done, seen = threading.Event(), [], set()
    lock = threading.Lock()

    def task(i: int) -> None:
        release.wait(10)
        with lock:
            done.append(i)
            seen.add(threading.current_thread())

    for i in range(6):
        pool.submit(lambda i=i: task(i))
    time.sleep(0.1)
    assert done == [] and len(pool._threads) == 2 and all(t.daemon for t in pool._threads)
    release.set()
    deadline = time.monotonic() + 10
    while len(done) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(done) == list(range(6)) and len(seen) == 2
    pool.submit(lambda: 1 / 0)  # an escaped exception is logged; the thread goes on
    pool.submit(lambda: done.append("after"))
    while "after" not in done and time.monotonic() < deadline:
        time.sleep(0.01)
    assert done[-1] == "after"
    pool.shutdown()
    for t in pool._threads:
        t.join(5)
    assert not any(t.is_alive() for t in pool._threads)
    with pytest.raises(RuntimeError, match="shutting down"):
        pool.submit(lambda: None)
