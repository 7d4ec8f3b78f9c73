"""A content-hash cache of dense vectors, shared by the collections of one repository.

Two refs of a repository share most of their chunks, and a new commit changes few of them; the
model's time is what an ingest costs. Each vector is stored under sha256(model key, the text the
model embedded), so a chunk unchanged across commits or branches is embedded once, whichever
collection meets it first. SQLite (standard library) keeps it: one file per repository under the
data folder, safe for the CLI and the server writing at once, and a crash loses at most the
batch being written (the cache only ever saves work; a missing entry is embedded again).
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from pathlib import Path
from typing import Sequence

import numpy as np

CACHE_FOLDER = "vector-cache"


def cache_key(model: str, text: str) -> bytes:
    return hashlib.sha256(f"{model}\0{text}".encode("utf-8", "surrogatepass")).digest()


class VectorCache:
    """Vectors by (model, text) in ``path``; safe to call from the ingest's embedding thread."""

    def __init__(self, path: Path, model: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path, self.model = path, model
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), timeout=30.0, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS vec (key BLOB PRIMARY KEY, dim INTEGER, data BLOB) WITHOUT ROWID")
        self.hits = self.misses = 0

    @classmethod
    def for_repository(cls, data_folder: Path, repo_id: str, model: str) -> "VectorCache":
        return cls(Path(data_folder) / CACHE_FOLDER / f"{repo_id}.sqlite", model)

    def get(self, texts: Sequence[str], dim: int) -> dict[int, np.ndarray]:
        """The cached vectors of ``texts``, by position (texts never embedded are absent)."""
        keys = [cache_key(self.model, t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(keys), 500):  # SQLite's limit on parameters
                part = keys[i:i + 500]
                rows = self._db.execute(f"SELECT key, dim, data FROM vec WHERE key IN ({','.join('?' * len(part))})", part)
                found.update({k: np.frombuffer(d, dtype=np.float32) for k, n, d in rows if n == dim})
        out = {i: found[k] for i, k in enumerate(keys) if k in found}
        self.hits += len(out)
        self.misses += len(keys) - len(out)
        return out

    def put(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        rows = [(cache_key(self.model, t), int(v.shape[0]), np.asarray(v, np.float32).tobytes())
                for t, v in zip(texts, vectors)]
        with self._lock, self._db:
            self._db.executemany("INSERT OR REPLACE INTO vec (key, dim, data) VALUES (?, ?, ?)", rows)

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM vec").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            self._db.close()
