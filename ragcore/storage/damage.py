"""Damage in one collection's files, told apart from a busy store and kept to that collection.

Qdrant Edge reports a truncated write-ahead log, a missing ``segment.json`` or a payload whose
bytes were flipped as a bare ``Exception`` with the engine's message and absolute paths. Here such
an error becomes :class:`CollectionDamaged`: a StoreError naming the collection, what is wrong (paths
relative to the store's folder) and the command that recovers it. A shard whose write-ahead log is
locked by another process ("WouldBlock") is not damage: :func:`is_busy` lets the caller wait.

Stored dense vectors are unit length (Qdrant normalises cosine vectors on the way in, and the
snapshot keeps them so): a row that is not finite or far from unit length is damage, found by
:func:`bad_rows`, and is never copied into a snapshot or scored (a flipped exponent bit gave
cosines of 2.3e38).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ragcore.storage.schema import StoreError

NORM_TOLERANCE = 1e-2  # |‖v‖ - 1| allowed: float32 rounding is ~1e-7; a flipped bit moves far more
UPLOAD_ROOT = "(upload)"  # ingest/run.py's root of uploaded files (storage does not import ingest)
_BUSY = ("WouldBlock", "Resource temporarily unavailable", "already accessed by another process")


class CollectionDamaged(StoreError):
    """A collection whose files in the store cannot be read; the message says how to recover it."""

    def __init__(self, name: str, reason: str, root: str | None = None) -> None:
        self.name, self.reason = name, reason
        super().__init__(f"The collection {name!r} cannot be read: its files in the store are damaged ({reason}). "
                         f"Nothing was changed. Recover it with: {rebuild_command(name, root)}")


def rebuild_command(name: str, root: str | None) -> str:
    """The command that builds ``name`` again from its source (uploads: upload them again)."""
    if root and root != UPLOAD_ROOT:
        return f"ragcore ingest {_quote(root)} --collection {name} --rebuild"
    return (f"ragcore ingest PATH --collection {name} --rebuild (PATH: the files it was built from; "
            "a collection built from uploads: delete it and upload them again)")


def _quote(path: str) -> str:
    return path if re.fullmatch(r"[\w./-]+", path) else "'" + path.replace("'", "'\\''") + "'"


def is_busy(exc: BaseException) -> bool:
    """Another process holds the shard (its write-ahead log's lock): wait, it is not damage."""
    text = str(exc)
    return any(b in text for b in _BUSY)


def reason_of(exc: BaseException, root: Path) -> str:
    """The engine's message, short and without the server's absolute paths."""
    text = str(exc).replace("Service runtime error: ", "")
    text = text.replace(str(root).rstrip("/") + "/", "").replace(str(root), ".")
    text = re.sub(r"(?<![\w.])/[^\s`'\"]+", "<path>", text)  # any other absolute path
    text = " ".join(text.split())
    return text if len(text) <= 400 else text[:399] + "…"


def damaged(name: str, exc: BaseException, root: Path, meta_root: str | None = None) -> CollectionDamaged:
    return CollectionDamaged(name, reason_of(exc, root), meta_root)


def bad_rows(mat: np.ndarray) -> np.ndarray:
    """Indexes of rows that are not finite or not unit length (all-zero rows pass: nothing to score)."""
    out = [np.zeros(0, np.int64)]
    for lo in range(0, len(mat), 65536):  # a block at a time: a mapped matrix is not read whole into memory
        block = np.asarray(mat[lo : lo + 65536], np.float64)
        with np.errstate(over="ignore", invalid="ignore"):
            norms = np.sqrt(np.einsum("ij,ij->i", block, block))
        ok = np.isfinite(norms) & ((np.abs(norms - 1.0) <= NORM_TOLERANCE) | (norms == 0.0))
        out.append(np.flatnonzero(~ok) + lo)
    return np.concatenate(out)


def vectors_reason(bad: np.ndarray, n: int) -> str:
    return f"{len(bad)} of {n} stored vectors are not finite or not unit length"
