"""The one home of heading vectors: section headings and page titles, embedded once, shared.

A heading's vector depends only on its text and the model, so Qdrant's shared
``ragcore__topics`` collection keeps one point per text (its id a hash of the model and the text)
for every corpus, re-ingest and process. Ingest embeds the headings it has not seen (``ensure``);
a snapshot's publish copies the vectors of its collection's headings into the snapshot, so a
question reads them from there (``abstain/topics.py``, ``retrieval/docsignals.py``). A read that
meets a heading nobody stored (a collection written before titles were embedded) embeds it in
memory and does not store it: reads never write.
"""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from ragcore.encoders.minilm import DIMENSION, MODEL_NAME
from ragcore.storage.schema import TOPICS_COLLECTION, heading_id, qdrant_models

Embed = Callable[[Sequence[str]], np.ndarray]  # texts -> (n, 384) vectors, uncached (the encoder's cache is for queries)


class HeadingStore:
    """Heading text -> vector, in ``ragcore__topics``; every call inside a session of ``conn``."""

    def __init__(self, conn: Any, backend: Any, *, collection: str = TOPICS_COLLECTION, model: str = MODEL_NAME,
                 dimension: int = DIMENSION) -> None:
        self._conn = conn
        self._backend = backend
        self.collection, self.model, self.dimension = collection, model, dimension

    def for_model(self, record: Any) -> "HeadingStore":
        """The heading vectors of another embedding model (a ``ModelRecord``): its own collection
        (``ragcore__topics__<hash>``, as wide as its vectors); the bundled MiniLM's stay in ``ragcore__topics``."""
        if record is None or record.source == "minilm":
            return self
        key = hashlib.sha256(f"{record.source}|{record.name}|{record.document_prefix}".encode()).hexdigest()[:12]
        return HeadingStore(self._conn, self._backend, collection=f"{TOPICS_COLLECTION}__{key}", model=key,
                            dimension=record.dimension)

    def get(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors of these texts (texts never embedded are absent)."""
        if not texts:
            return {}
        out: dict[str, np.ndarray] = {}
        ids = {heading_id(t, self.model): t for t in texts}
        keys = list(ids)
        with self._conn.session(write=False) as client:
            if not client.collection_exists(self.collection):
                return {}
            for i in range(0, len(keys), 1000):
                for p in client.retrieve(self.collection, keys[i : i + 1000], with_vectors=True, with_payload=False):
                    out[ids[str(p.id)]] = np.asarray(p.vector, dtype=np.float32)
        return out

    def put(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        if not len(texts):
            return
        qm = qdrant_models()
        with self._conn.session() as client:
            if not client.collection_exists(self.collection):
                self._backend.create_collection(
                    client, self.collection, vectors_config=qm.VectorParams(size=self.dimension, distance=qm.Distance.COSINE))
            points = [qm.PointStruct(id=heading_id(t, self.model), vector=v.tolist(), payload={"text": t})
                      for t, v in zip(texts, vectors)]
            for i in range(0, len(points), 512):
                client.upsert(self.collection, points[i : i + 512], wait=True)

    def ensure(self, headings: Iterable[str], embed: Embed, *, save: bool = True) -> dict[str, np.ndarray]:
        """Vectors for ``headings``: stored ones are read, the rest embedded once (and, with
        ``save``, stored: a writer's step; a reader keeps them in memory)."""
        texts = sorted(set(headings))
        have = self.get(texts)
        missing = [t for t in texts if t not in have]
        if missing:
            vecs = embed(missing)
            if save:
                self.put(missing, vecs)
            have.update(zip(missing, vecs))
        return have


def heading_texts(chunks: Iterable[Any]) -> set[str]:
    """Every heading text of these chunks (section path and title) that a snapshot carries a vector for."""
    return {t.strip() for c in chunks for t in (*c.section, c.title or "") if t and t.strip()}
