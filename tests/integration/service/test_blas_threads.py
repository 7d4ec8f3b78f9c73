"""`ragcore serve` runs BLAS single-threaded unless the user chose otherwise (why: ragcore/service/server.py,
measured in bench/results/serve.md). The variables only count if they are set before numpy loads, so
the check runs `ragcore serve` in a fresh interpreter, with uvicorn.run replaced by a recorder: the real
server is started by the other tests here, this one only needs the order of events."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ragcore.service.server import BLAS_THREAD_VARS, one_blas_thread

SCRIPT = r"""
import json, os, sys
import uvicorn
import ragcore.service.server as srv
seen = {}
original = srv.one_blas_thread
def spy(*a, **k):
    seen["numpy_loaded_before"] = "numpy" in sys.modules
    original(*a, **k)
srv.one_blas_thread = spy
def fake_run(app, **kw):
    seen["numpy_loaded_at_run"] = "numpy" in sys.modules
    seen["env"] = {v: os.environ.get(v) for v in srv.BLAS_THREAD_VARS}
uvicorn.run = fake_run
from ragcore.cli.main import main
code = main(["serve", "--port", "8799"])
print(json.dumps({"code": code, **seen}))
"""


def _run(tmp_path, **env: str) -> dict:
    full = {k: v for k, v in os.environ.items() if k not in BLAS_THREAD_VARS}
    full.update({"RAGCORE_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": os.getcwd(), **env})
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=full, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_serve_sets_one_blas_thread_before_numpy_loads(tmp_path) -> None:
    seen = _run(tmp_path)
    assert seen["code"] == 0
    assert seen["numpy_loaded_before"] is False  # else the setting would come too late to count
    assert seen["numpy_loaded_at_run"] is True  # the engine was built after it
    assert seen["env"] == {v: "1" for v in BLAS_THREAD_VARS}


def test_a_users_own_blas_setting_wins(tmp_path) -> None:
    seen = _run(tmp_path, OPENBLAS_NUM_THREADS="2")
    assert seen["env"]["OPENBLAS_NUM_THREADS"] == "2"
    assert seen["env"]["OMP_NUM_THREADS"] == "1"


def test_one_blas_thread_only_fills_what_is_unset() -> None:
    env = {"MKL_NUM_THREADS": "4"}
    one_blas_thread(env)
    assert env == {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "4"}
