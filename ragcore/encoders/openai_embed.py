"""``openai:<model>``: any OpenAI-compatible ``POST /embeddings`` endpoint (OpenAI, vLLM, Ollama,
llama.cpp's server, LM Studio, text-embeddings-inference …).

Texts go in requests of ``batch`` inputs, ``concurrency`` of them in flight; a 429, a 5xx, a
timeout or a dropped connection is retried with exponential backoff (a ``Retry-After`` is
honoured, capped); any other error is reported at once. Every response is checked: as many
vectors as inputs, finite numbers, one width (the first response sets it when the collection
does not know it yet). llama.cpp's server answers a GGUF that declares no pooling with one vector
per *token*; those are mean-pooled here (``pooling: "mean over tokens (client)"`` in the record).

The API key goes in the Authorization header only: it is never logged, put in a message or a
repr, and any echo of it in a server's error text is masked.
"""

from __future__ import annotations

import base64
import math
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

import numpy as np

from ragcore.encoders.base import CachingEncoder, EmbedError, ModelRecord, unit_rows
from ragcore.settings.redact import redact_url

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER_S = 30.0


class OpenAIEmbedder(CachingEncoder):
    source = "openai"

    def __init__(self, model: str, *, base_url: str | None, api_key: str | None = None, timeout_s: float = 60.0,
                 concurrency: int = 4, batch: int = 64, max_retries: int = 4, dimension: int | None = None,
                 query_prefix: str = "", document_prefix: str = "", backoff_s: float = 0.5,
                 cache_size: int = 50_000) -> None:
        super().__init__(cache_size)
        if not model:
            raise EmbedError("openai:<model> needs a model name, e.g. openai:text-embedding-3-small")
        if not base_url:
            raise EmbedError(f"openai:{model} needs an endpoint: set RAGCORE_EMBED_BASE_URL (or OPENAI_BASE_URL), "
                             "e.g. http://127.0.0.1:8080/v1 for a local server or https://api.openai.com/v1")
        self.model = model
        self.spec = f"openai:{model}"
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/embeddings"
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self.timeout_s, self.concurrency, self.batch = timeout_s, max(1, concurrency), max(1, batch)
        self.max_retries, self.backoff_s = max(0, max_retries), backoff_s
        self._key = api_key or ""
        self._dim = dimension
        self._per_token = False
        self._client: Any = None
        self._client_lock = threading.Lock()

    @property
    def ingest_batch(self) -> int:
        """Chunks an ingest embeds at a time: one request's worth (ingest/run.py)."""
        return self.batch

    @property
    def ingest_workers(self) -> int:
        """Batches an ingest has embedded at once: one per request in flight."""
        return self.concurrency

    def __repr__(self) -> str:  # never the key
        return f"OpenAIEmbedder(model={self.model!r}, base_url={redact_url(self.base_url)!r})"

    # ------------------------------------------------------------------ the record

    def dimension(self) -> int:
        """The vectors' width: known from the collection, else from one probe request."""
        if self._dim is None:
            self._encode(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def record(self) -> ModelRecord:
        dim = self.dimension()
        return ModelRecord(source="openai", name=self.model, spec=f"openai:{self.model}", dimension=dim,
                           query_prefix=self.query_prefix, document_prefix=self.document_prefix,
                           pooling="mean over tokens (client)" if self._per_token else "server",
                           base_url=redact_url(self.base_url))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    # ------------------------------------------------------------------ requests

    def _http(self) -> Any:
        with self._client_lock:
            if self._client is None:
                import httpx

                headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
                limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
                self._client = httpx.Client(headers=headers, limits=limits,
                                            timeout=httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)))
            return self._client

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        # some servers refuse an empty input; a space embeds as "nothing" just as well
        items = [t if t.strip() else " " for t in texts]
        groups = [items[i : i + self.batch] for i in range(0, len(items), self.batch)]
        if self._dim is None and len(groups) > 1:  # the first answer fixes the width the others are checked against
            first = [self._request(groups[0])]
            rest = self._map(groups[1:])
            parts = first + rest
        else:
            parts = self._map(groups)
        return np.vstack(parts).astype(np.float32, copy=False)

    def _map(self, groups: list[list[str]]) -> list[np.ndarray]:
        if len(groups) == 1 or self.concurrency == 1:
            return [self._request(g) for g in groups]
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(groups)), thread_name_prefix="embed") as pool:
            return list(pool.map(self._request, groups))

    def _request(self, inputs: list[str]) -> np.ndarray:
        import httpx

        body = {"model": self.model, "input": inputs, "encoding_format": "float"}
        for attempt in range(self.max_retries + 1):
            last = attempt == self.max_retries
            try:
                resp = self._http().post(self.url, json=body)
            except httpx.TimeoutException as exc:
                if last:
                    raise EmbedError(f"the embedding endpoint {self._where()} did not answer within "
                                     f"{self.timeout_s:g} s ({self.max_retries + 1} attempts)") from exc
                self._sleep(attempt, None)
                continue
            except httpx.TransportError as exc:
                if last:
                    raise EmbedError(f"cannot reach the embedding endpoint {self._where()}: {type(exc).__name__} "
                                     f"({self.max_retries + 1} attempts)") from exc
                self._sleep(attempt, None)
                continue
            if resp.status_code == 200:
                return self._vectors(resp, len(inputs))
            if resp.status_code in RETRY_STATUSES and not last:
                self._sleep(attempt, resp.headers.get("retry-after"))
                continue
            raise EmbedError(self._http_problem(resp.status_code, resp.text))
        raise AssertionError("unreachable")

    def _sleep(self, attempt: int, retry_after: str | None) -> None:
        wait = self.backoff_s * (2 ** attempt) * (0.5 + random.random())  # jitter: parallel requests spread out
        if retry_after:
            try:
                wait = max(wait, min(float(retry_after), MAX_RETRY_AFTER_S))
            except ValueError:
                pass
        time.sleep(wait)

    def _where(self) -> str:
        return f"{redact_url(self.url)} (model {self.model})"

    def _http_problem(self, status: int, text: str) -> str:
        detail = " ".join((text or "").split())[:300]
        if self._key:
            detail = detail.replace(self._key, "***")
        hint = {401: "the API key was refused: check RAGCORE_EMBED_API_KEY (or OPENAI_API_KEY)",
                403: "the API key may not use this model",
                404: f"no such model or path: does the server serve {self.model!r} at /embeddings?"}.get(status, "")
        tries = f" after {self.max_retries + 1} attempts" if status in RETRY_STATUSES else ""
        return f"the embedding endpoint {self._where()} answered HTTP {status}{tries}" + \
            (f": {hint}" if hint else "") + (f" ({detail})" if detail else "")

    # ------------------------------------------------------------------ responses

    def _vectors(self, resp: Any, n: int) -> np.ndarray:
        try:
            data = resp.json()["data"]
            rows = sorted(data, key=lambda d: d.get("index", 0)) if all("index" in d for d in data) else data
            raw = [r["embedding"] for r in rows]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EmbedError(f"the embedding endpoint {self._where()} sent a response that is not an embeddings "
                             f"list ({type(exc).__name__})") from exc
        if len(raw) != n:
            raise EmbedError(f"the embedding endpoint {self._where()} returned {len(raw)} vectors for {n} texts")
        vecs = [self._one(v) for v in raw]
        widths = {len(v) for v in vecs}
        if len(widths) != 1:
            raise EmbedError(f"the embedding endpoint {self._where()} returned vectors of different widths {sorted(widths)}")
        width = widths.pop()
        if self._dim is None:
            self._dim = width
        elif width != self._dim:
            raise EmbedError(f"the embedding endpoint {self._where()} returned {width}-d vectors; this model's "
                             f"vectors are {self._dim}-d (is another model served under the same name?)")
        return unit_rows(np.asarray(vecs, dtype=np.float32))

    def _one(self, v: Any) -> np.ndarray:
        if isinstance(v, str):  # base64 float32, what OpenAI sends for encoding_format="base64"
            arr = np.frombuffer(base64.b64decode(v), dtype=np.float32)
        elif v and isinstance(v[0], list):  # one vector per token: a model without pooling
            arr = np.asarray(v, dtype=np.float64)
            if arr.ndim != 2 or not len(arr):
                raise EmbedError(f"the embedding endpoint {self._where()} returned ragged per-token vectors")
            self._per_token = True
            arr = arr.mean(axis=0)
        else:
            try:
                arr = np.asarray(v, dtype=np.float64)
            except (TypeError, ValueError) as exc:
                raise EmbedError(f"the embedding endpoint {self._where()} returned a vector that is not numbers") from exc
        if arr.ndim != 1 or not len(arr):
            raise EmbedError(f"the embedding endpoint {self._where()} returned an empty or nested vector")
        if not np.all(np.isfinite(arr)):
            raise EmbedError(f"the embedding endpoint {self._where()} returned a vector with NaN or infinite values")
        if not math.isfinite(float(np.linalg.norm(arr))) or not np.any(arr):
            raise EmbedError(f"the embedding endpoint {self._where()} returned an all-zero vector")
        return arr
