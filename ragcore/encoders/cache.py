"""An on-disk embedding cache: vectors keyed by a hash of (model, text), kept in one SQLite file.

What an endpoint returned is put here as each response arrives, so an ingest stopped by the
endpoint dying, a timeout it gave up on or Ctrl-C, and run again, sends no text whose vector it
already has (issue 43). Any other producer of vectors (e.g. a git collection's content-hash
cache) can share it: :meth:`EmbeddingCache.key` names a vector, :meth:`get_many` and
:meth:`put_many` read and write many at once. Each ``put_many`` is one committed transaction, so
a kill loses at most the response being written. The file is bounded: past ``max_entries`` the
oldest entries go.

Only ingest writes here (a question's embeddings are never stored): reads never write.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

MAX_ENTRIES = 500_000  # ~0.8-3 GB at 384-1536 dims would be too much; the oldest go first
FILE_NAME = "embed-cache.sqlite3"


class EmbeddingCache:
    def __init__(self, path: Path, *, max_entries: int = MAX_ENTRIES) -> None:
        self.path = Path(path)
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None

    @staticmethod
    def key(model: str, text: str) -> str:
        """The name of ``text``'s vector under ``model`` (a model spec with its prefixes)."""
        return hashlib.sha256(f"{model}\0{text}".encode("utf-8", "surrogatepass")).hexdigest()

    def _conn(self) -> sqlite3.Connection:
        if self._db is None:  # opened at first use, never at import or construction
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")  # a power cut may lose the last responses, never corrupt
            db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
            self._db = db
        return self._db

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of ``keys`` (float32); missing keys are left out."""
        out: dict[str, np.ndarray] = {}
        with self._lock:
            db = self._conn()
            for i in range(0, len(keys), 500):  # SQLite's bound-parameter limit
                part = list(keys[i : i + 500])
                marks = ",".join("?" * len(part))
                for k, blob in db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", part):
                    out[k] = np.frombuffer(blob, dtype=np.float32).copy()
        return out

    def put_many(self, items: Iterable[tuple[str, np.ndarray]]) -> None:
        """Store vectors by key (one transaction; an existing key is replaced)."""
        rows = [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items]
        if not rows:
            return
        with self._lock:
            db = self._conn()
            db.execute("BEGIN")
            db.executemany("INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)", rows)
            db.execute("DELETE FROM vectors WHERE rowid <= (SELECT MAX(rowid) FROM vectors) - ?", (self.max_entries,))
            db.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn().execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None
