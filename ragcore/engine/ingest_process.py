"""A folder ingest in a child process at a lower CPU priority, its progress relayed to the caller.

Why a process: in the app's own process an ingest shares the interpreter lock and both cores with the
app's answers, and with the model's own threads; measured in a real browser, an answer on another
collection took several times its quiet time while 525 Django pages were ingested (issue 42, item 5;
``ragcore bench browser-ingest``, bench/results/browser-ingest.md). A child process has its own
interpreter, and ``os.nice`` before the model loads gives every thread of it (the model's included) the
lower priority, so the scheduler serves the app first and the ingest takes the cores the app leaves.

The app runs its folder ingests this way (ui/ingest_start.py). The child holds embedded Qdrant's folder
lock for the whole ingest (the lock is the data folder's, one ``.lock`` for every collection: Edge keeps a
shard per collection, but one client opens them all), so nothing the app reads meanwhile may need it:
questions and listings read the query snapshots, and a collection that has none yet (a new collection's
first ingest) reads as the empty collection it was before the write (``Store.first_write_elsewhere``).

The child writes into the store of record as a CLI ingest does (one writer at a time, the store's lock);
readers answer from the query snapshots meanwhile. The caller's callbacks keep their meaning:
``progress(done, total, current)`` and ``chunk_progress(written, queued)`` are called in the caller's
thread while the child waits for their answer, so when either raises :class:`Cancelled` the child stops
right there, after its last batch, and this raises Cancelled too (what was written stays, as in-process).
The steps after the chunks (section headings, calibration) send no progress for minutes on a large
corpus: ``cancel``, once set, gives the child CANCEL_GRACE_S to stop by itself, then ends it. A killed
child is a killed writer: Qdrant Edge's log keeps every batch it acknowledged, the published snapshot no
longer matches (its stamp), and ingesting the folder again completes the collection.

Messages are pickles (the child runs this very code): the request on the child's stdin, then an "ok" or
"cancel" line answering each progress message; progress, then one outcome, on a duplicate of its stdout
(its own stdout is pointed at stderr, so a library's print cannot corrupt the stream).
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import IO, Any, Callable, Sequence

from ragcore.engine.collections_admin import Cancelled
from ragcore.types import IngestReport

# Niceness added to the child: at +10 the kernel weighs it ~1/9 of a default-priority process, so the app's
# answers take the cores they need and the ingest takes the rest (it still runs at full speed when idle).
INGEST_NICE = 10
# after Cancel, the time the child has to stop at its next progress message before it is ended (SIGTERM): a
# batch of 64 chunks took up to 2 minutes at load 20 with the child at niceness +10, the steps after the chunks
# send nothing for minutes; past this, ending it (a killed writer, safe) beats a Cancel that seems ignored
CANCEL_GRACE_S = 60.0

Started = Callable[[int, int], None]  # (child pid, its niceness)


def ingest_in_process(
    engine: Any, paths: Sequence[str | Path], collection: str, *, settings: Any, rebuild: bool = False,
    progress: Callable[[int, int, str], None] | None = None, chunk_progress: Callable[[int, int], None] | None = None,
    started: Started | None = None, nice: int = INGEST_NICE, cancel: threading.Event | None = None,
) -> IngestReport:
    """``engine.ingest(paths, collection, …)`` run by a child process at ``nice``; the engine's read caches
    of ``collection`` are dropped afterwards (the child wrote it). ``cancel``: set, it stops the child
    (at its next progress message, else after CANCEL_GRACE_S) and this raises Cancelled."""
    t0 = time.perf_counter()
    request = {"engine_settings": engine.settings, "settings": settings, "paths": [str(p) for p in paths],
               "collection": collection, "rebuild": rebuild, "nice": nice}
    root = str(Path(__file__).resolve().parents[2])  # the folder that holds `ragcore`: the child runs this code
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.Popen([sys.executable, "-m", "ragcore.engine.ingest_process"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env)
    ended = threading.Event()
    if cancel is not None:
        threading.Thread(target=_end_on_cancel, args=(proc, cancel, ended), name="ragcore-ingest-stop", daemon=True).start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        pickle.dump(request, proc.stdin)
        proc.stdin.flush()
        outcome = _relay(proc.stdout, proc.stdin, progress, chunk_progress, started)
    finally:
        ended.set()
        _close(proc)
    engine.hybrid_search.invalidate(collection)
    engine.topics.invalidate(collection)
    kind = outcome[0]
    if kind == "report":  # its time is the whole call's, the child's start included: reported = wall time
        return replace(outcome[1], seconds=time.perf_counter() - t0)
    if kind == "cancelled":
        raise Cancelled()
    if kind == "error":
        raise outcome[1]
    if cancel is not None and cancel.is_set():  # ended by _end_on_cancel
        raise Cancelled()
    raise RuntimeError(f"the ingest process ended without a result (exit code {proc.returncode})")


def _relay(out: IO[bytes], to_child: IO[bytes], progress: Any, chunk_progress: Any, started: Started | None) -> tuple:
    """Call the callbacks for each message until the outcome; each message is answered "ok", or "cancel" once a
    callback raised Cancelled (the child waits for the answer: a callback that blocks holds the ingest, as in-process)."""
    while True:
        try:
            msg = pickle.load(out)
        except (EOFError, pickle.UnpicklingError):  # the child died (ended, killed, out of memory): no outcome
            return ("gone",)
        kind = msg[0]
        if kind in ("report", "cancelled", "error"):
            return msg
        answer = b"ok\n"
        try:
            if kind == "started" and started:
                started(msg[1], msg[2])
            elif kind == "progress" and progress:
                progress(*msg[1:])
            elif kind == "chunks" and chunk_progress:
                chunk_progress(*msg[1:])
        except Cancelled:
            answer = b"cancel\n"
        try:
            to_child.write(answer)
            to_child.flush()
        except OSError:  # it is ending anyway
            pass


def _end_on_cancel(proc: subprocess.Popen, cancel: threading.Event, ended: threading.Event) -> None:
    """Once ``cancel`` is set, give the child CANCEL_GRACE_S to stop at a progress message, then end it."""
    while not ended.is_set():
        if cancel.wait(0.5):
            if not ended.wait(CANCEL_GRACE_S) and proc.poll() is None:
                proc.terminate()
            return


def _close(proc: subprocess.Popen) -> None:
    for f in (proc.stdin, proc.stdout):
        try:
            if f:
                f.close()
        except OSError:
            pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:  # closing its stdin asked it to stop: it did not
        proc.kill()
        proc.wait()


# --------------------------------------------------------------------------- the child


def _child() -> int:
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # stray prints go to stderr, not into the message stream
    answers = sys.stdin.buffer
    request = pickle.load(answers)
    if hasattr(os, "nice") and request["nice"]:
        os.nice(request["nice"])  # before the model loads: its threads inherit it

    lock = threading.Lock()  # the reading thread and the writing thread both report: one exchange at a time

    def send(*msg: Any) -> None:
        pickle.dump(msg, out)
        out.flush()

    def ask(*msg: Any) -> None:
        """Send, then wait for the parent's answer: "cancel", or the parent gone (end of stdin), stops the ingest."""
        with lock:
            send(*msg)
            answer = answers.readline().strip()
        if answer != b"ok":
            raise Cancelled()

    mine = (os.getpid(), os.getpriority(os.PRIO_PROCESS, 0) if hasattr(os, "getpriority") else 0)
    try:
        ask("started", *mine)
    except Cancelled:
        send("cancelled")
        return 0
    return _run_child(request, send, lambda done, total, current: ask("progress", done, total, current),
                      lambda written, queued: ask("chunks", written, queued))


def _run_child(request: dict, send: Callable[..., None], progress: Any, chunk_progress: Any) -> int:
    from ragcore.engine.engine import Engine

    engine = None
    try:
        engine = Engine(request["engine_settings"])
        report = engine.ingest(request["paths"], request["collection"], settings=request["settings"],
                               rebuild=request["rebuild"], progress=progress, chunk_progress=chunk_progress)
        send("report", report)
    except Cancelled:
        send("cancelled")
    except Exception as exc:  # noqa: BLE001 - handed to the parent, which words it for the user
        try:
            pickle.dumps(exc)
        except Exception:  # noqa: BLE001 - an exception that cannot travel: its type and text do
            exc = RuntimeError(f"{type(exc).__name__}: {exc}")
        send("error", exc)
    finally:
        if engine is not None:
            engine.close()
    return 0


if __name__ == "__main__":
    code = _child()
    sys.stderr.flush()
    os._exit(code)  # the engine is closed and the outcome sent: nothing left for the interpreter's shutdown
