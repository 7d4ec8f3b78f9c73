"""What every part of the store agrees on: the collection schema's names, point ids, the records
the store hands out, and the one error type with a message that says what to do.

A point's id is the UUID form of its chunk id (a hash of path + span + text), so writing the
same chunk twice is idempotent: that is what makes an interrupted ingest safe to re-run.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

import numpy as np

from ragcore.encoders.minilm import MODEL_NAME
from ragcore.storage.names import RESERVED_PREFIX, collection_name_problem  # noqa: F401  (RESERVED_PREFIX re-exported)
from ragcore.types import Chunk

DENSE = "dense"
SPARSE = "sparse"
META_COLLECTION = "ragcore__meta"
# Embedded section headings, shared by every collection: a heading's vector depends only on
# its text and the model, so one entry serves every corpus, re-ingest and process.
TOPICS_COLLECTION = "ragcore__topics"


class StoreError(RuntimeError):
    """A storage problem with a message that says what to do."""


def is_incomplete(meta: Mapping[str, Any]) -> bool:
    """A cancelled (or killed) ingest that no completed ingest followed: its metadata records when it
    was cut short, and no ``built_at`` after that."""
    cancelled = meta.get("cancelled_at")
    return bool(cancelled) and (not meta.get("built_at") or str(meta["built_at"]) < str(cancelled))


def point_id(chunk_id: str) -> str:
    return str(uuid.UUID(hex=chunk_id[:32]))


def embed_text(chunk: Chunk) -> str:
    """What the encoders see: the chunk's title and section path, then its text.

    The heading path names the subject that the chunk's sentences often leave implicit
    ("It is set in settings.py"); the stored chunk text stays exactly the source text.
    """
    context = chunk_context(chunk)
    return f"{context}\n{chunk.text}" if context else chunk.text


def chunk_context(chunk: Chunk) -> str:
    """The document title and section path, as the encoders see them before the text."""
    return " › ".join(x for x in (chunk.title, *chunk.section) if x)


@dataclass(frozen=True)
class PointRef:
    """What incremental ingest needs to know about a stored point, without its vectors."""

    id: str
    path: str
    doc_hash: str
    doc_chunks: int
    fp: str = ""  # index fingerprint the point was written with (see ingest.run)


@dataclass(frozen=True)
class CollectionData:
    """Everything the in-process search index needs, loaded in one scroll."""

    chunks: Sequence[Chunk]  # a tuple, or PackedChunks when loaded from the store
    dense: np.ndarray  # (n, 384) float32, L2-normalised
    sparse: Sequence[tuple[np.ndarray, np.ndarray]]  # per chunk: term ids (int64), BM25 weights (float32)


def qdrant_models() -> Any:
    """qdrant-client's models, imported when first needed (~1 s: only writes and fallback reads)."""
    from qdrant_client import models

    return models


def heading_id(text: str, model: str = MODEL_NAME) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ragcore-heading:{model}:{text}"))


def meta_id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ragcore:{name}"))


def utc_now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()


def check_collection_name(name: str) -> None:
    problem = collection_name_problem(name)  # (storage/names.py: the rule the CLI checks too)
    if problem:
        raise StoreError(f"Invalid collection name: {problem}")
