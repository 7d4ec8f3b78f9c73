"""The few operations the Store needs of an engine, one module per engine.

In the style of LlamaIndex's ``vector_stores/types.py``: the facade (``store.py``) speaks to a
small protocol, and each engine implements it in a module of its own:

* ``backend_edge.py``: Qdrant Edge, Qdrant's engine run in process (the embedded default);
* ``backend_qdrant.py``: qdrant-client, in local mode (``embedded_engine="local"``) or against a
  server (``settings.qdrant_url``).

The client a backend opens speaks qdrant-client's API for collections and points (``EdgeClient``
imitates the part the Store uses), so reads and writes are one code; what differs is here: how
the client is opened and locked, how a collection's state is stamped and settled before a
snapshot is published, how new collections are created and how LlamaIndex nodes are written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Literal, Protocol, Sequence

from ragcore.settings.config import RagcoreSettings

BackendKind = Literal["edge", "local", "server"]
# (collection, points copied so far, points in the collection): edge_migrate.CopyProgress
CopyProgress = Callable[[str, int, int], None]


class StoreBackend(Protocol):
    kind: BackendKind
    path: Path  # the embedded folder (its lock and its stamps); unused on a server
    copied: tuple[str, ...]  # collections the last open copied in (a one-time migration), to publish

    def open(self, progress: CopyProgress | None = None) -> Any:
        """A client, waiting (bounded) for another process's lock on an embedded folder."""

    def migration_pending(self) -> bool:
        """Whether the next open first copies an older folder in (two file checks)."""

    def stamp_file(self, name: str) -> Path | None:
        """The file whose stat identifies the collection's state (None: nothing to stamp)."""

    def settle(self, client: Any, name: str) -> None:
        """Everything written to ``name`` in the file its stamp reads, before a snapshot is stamped."""

    def release(self, client: Any) -> None:
        """Let go of what the client maps of its files (before a publish reads every point)."""

    def names_on_disk(self) -> list[str] | None:
        """Collection names read from the folder without opening it (None: ask the client)."""

    def create_collection(self, client: Any, name: str, **config: Any) -> None: ...

    def create_chunk_collection(self, client: Any, name: str, dimension: int = 384) -> None:
        """Named vectors ``dense`` (cosine, ``dimension`` wide: the collection's model's) and ``sparse``
        (BM25, IDF modifier), plus what the engine needs."""

    def write_nodes(self, client: Any, name: str, nodes: Sequence[Any], bm25: Any) -> None:
        """Upsert LlamaIndex nodes (with embeddings) with the payload ``QdrantVectorStore`` writes."""

    def as_points(self, points: Sequence[Any]) -> Sequence[Any]:
        """Scrolled records as points this backend's ``upsert`` takes."""

    def vector_store(self, client: Any, name: str, bm25: Any) -> Any:
        """LlamaIndex's ``QdrantVectorStore`` over ``name`` (StoreError where there is none)."""


def backend_for(settings: RagcoreSettings, client: Any = None) -> StoreBackend:
    """The backend for ``settings``; a client passed in is qdrant-client's (local mode or a server)."""
    if not settings.qdrant_url and client is None and settings.embedded_engine == "edge":
        from ragcore.storage.backend_edge import EdgeBackend

        return EdgeBackend(settings)
    from ragcore.storage.backend_qdrant import QdrantBackend

    return QdrantBackend(settings)
