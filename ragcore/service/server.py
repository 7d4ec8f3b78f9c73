"""`ragcore serve`: settings checked like every other command's (by the command line, which passes
them in), then uvicorn.

One worker serves the app built here; ``--workers N`` starts N uvicorn worker processes, each
building its own engine from the environment this process validated (the options are written
into it first). The access log is ragcore's own (limits.AccessLog); uvicorn's, which prints query
strings, is off.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from ragcore.settings.config import ConfigError, RagcoreSettings
from ragcore.settings.service import ServiceSettings

_LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_config() -> dict[str, Any]:
    import uvicorn.config

    cfg = {**uvicorn.config.LOGGING_CONFIG}
    cfg["formatters"] = {**cfg["formatters"], "ragcore": {"format": _LOG_FORMAT}}
    cfg["handlers"] = {**cfg["handlers"], "ragcore": {"class": "logging.StreamHandler", "formatter": "ragcore",
                                                      "stream": "ext://sys.stderr"}}
    cfg["loggers"] = {**cfg["loggers"], "ragcore.service": {"handlers": ["ragcore"], "level": "INFO", "propagate": False}}
    return cfg


# Why one BLAS thread per process: a question's dense scan is a small matrix product, and OpenBLAS's
# own threads spin while they wait for the next one. Measured with `ragcore bench serve` at 10k chunks
# on 2 cores (bench/results/serve.md): CPU per retrieval 16.4 -> 7.5 ms, 16 clients over HTTP 57.5 ->
# 84.5 requests/s and p95 605 -> 300 ms. A server gets its parallelism from concurrent questions.
BLAS_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def one_blas_thread(environ: dict[str, str] | Any = os.environ) -> None:
    """Default every BLAS library to one thread unless the user set its variable. Must run before
    numpy is imported (the libraries read these once, at load); worker processes inherit them."""
    for name in BLAS_THREAD_VARS:
        environ.setdefault(name, "1")


def serve(args: argparse.Namespace, settings: RagcoreSettings) -> int:
    """Serve ``settings`` (resolved from ``args`` and the environment by the caller) on ``args``'
    host, port and worker count."""
    one_blas_thread()
    import uvicorn

    svc = ServiceSettings.from_env(os.environ, host=args.host, port=args.port, workers=args.workers)
    problem = svc.problem()
    if problem:
        raise ConfigError(problem)
    print(f"ragcore serve on http://{svc.host}:{svc.port} (API docs at /docs) · collection {settings.collection} · "
          f"{'API keys required' if svc.api_keys else 'no API key (loopback only)'} · {svc.workers} worker(s)",
          file=sys.stderr)
    common = {"host": svc.host, "port": svc.port, "access_log": False, "log_config": log_config(),
              "timeout_graceful_shutdown": 5, "ws_max_size": svc.max_body_bytes}
    if svc.workers > 1:
        _export(args, settings)
        uvicorn.run("ragcore.service.app:app_from_env", factory=True, workers=svc.workers, **common)
        return 0
    from ragcore.engine.engine import Engine
    from ragcore.service.app import create_app

    app = create_app(Engine(settings), svc, close_engine=True)
    uvicorn.run(app, **common)
    return 0


def _export(args: argparse.Namespace, settings: RagcoreSettings) -> None:
    """What the options set, for the worker processes (they read only the environment)."""
    if getattr(args, "data_dir", None):
        os.environ["RAGCORE_DATA_DIR"] = str(settings.data_dir)
    if getattr(args, "collection", None):
        os.environ["RAGCORE_COLLECTION"] = settings.collection
    for name in ("host", "port", "workers"):
        value = getattr(args, name, None)
        if value is not None:
            os.environ[f"RAGCORE_SERVE_{name.upper()}"] = str(value)
