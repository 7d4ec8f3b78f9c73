"""Work on a stream of items in a few threads, handing the results on in the order the items came.

Ingest's embedding stage uses it (run.py): an embeddings endpoint answers several requests at
once, but the store must see the batches in order (a file's old points are deleted only after the
batch that holds its last new chunk, which is what makes a crash safe). ``Executor.map`` would
submit the whole stream up front; this keeps at most ``window`` items taken and ``workers`` of them
being worked on, and while the oldest is slow (a 429 retried with backoff) the others keep going.
"""

from __future__ import annotations

import collections
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Callable, Deque, Iterable, Iterator, Tuple, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def ordered_map(fn: Callable[[T], R], items: Iterable[T], *, workers: int, window: int,
                check: Callable[[], None], name: str = "ragcore-inorder") -> Iterator[Tuple[T, R]]:
    """``(item, fn(item))`` in the order of ``items``, ``fn`` running in up to ``workers`` threads.

    ``window`` (≥ ``workers``) bounds the items taken but not yet handed on (memory); ``check`` is
    called while waiting and may raise to give up (the caller's abort). An exception of ``fn`` is
    raised here when its item's turn comes; items not started by then are cancelled, and the ones
    being worked on are waited for (nothing runs on after the call has returned or raised)."""
    workers = max(1, workers)
    window = max(workers, window)
    pending: Deque[Tuple[T, Future]] = collections.deque()
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
    try:
        for item in items:
            pending.append((item, pool.submit(fn, item)))
            yield from _ready(pending, workers, window, check)
        yield from _ready(pending, 0, 0, check)  # the end of the stream: wait for all
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _ready(pending: Deque[Tuple[T, Future]], workers: int, window: int,
           check: Callable[[], None]) -> Iterator[Tuple[T, R]]:
    """Hand on finished items from the front; return as soon as there is room for another item."""
    while pending:
        item, fut = pending[0]
        if fut.done():
            pending.popleft()
            yield item, fut.result()
            continue
        running = [f for _, f in pending if not f.done()]
        if len(running) < workers and len(pending) < window:
            return
        wait(running, timeout=0.2, return_when=FIRST_COMPLETED)
        check()
