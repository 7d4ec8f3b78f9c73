"""``openai:<model>``: any OpenAI-compatible ``POST /embeddings`` endpoint (OpenAI, vLLM, Ollama,
llama.cpp's server, LM Studio, text-embeddings-inference …).

Requests are sized to the server (adaptive.py): they start small, grow while its latency stays
flat, and a timeout, 429 or 503 halves their size and the requests in flight before the texts are
sent again; ``batch`` (texts per request), ``concurrency`` (requests in flight) and ``timeout_s``
are ceilings. A failed request goes back to the queue (a ``Retry-After`` is honoured, capped) up
to ``max_retries`` times; a refusal such as 401 or 400 is reported at once. The openai SDK's own
retries are not used: they would send the same oversized request again, which is what failed.

Every response is checked: as many vectors as inputs, finite numbers, one width (the first
response sets it when the collection does not know it yet). llama.cpp's server answers a GGUF
that declares no pooling with one vector per *token*; those are mean-pooled here
(``pooling: "mean over tokens (client)"`` in the record).

An ingest (:meth:`OpenAIEmbedder.encode_for_ingest`) keeps every answer in the on-disk
embedding cache (cache.py) as it arrives: run again after the endpoint died or Ctrl-C, it sends
only the texts it has no vector for.

The API key goes in the Authorization header only: it is never logged, put in a message or a
repr, and any echo of it in a server's error text is masked.
"""

from __future__ import annotations

import base64
import math
import random
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ragcore.encoders.adaptive import Aimd, Sustained, tokens_of
from ragcore.encoders.base import CachingEncoder, EmbedError, ModelRecord, unit_rows
from ragcore.encoders.cache import EmbeddingCache
from ragcore.settings.redact import redact_url

RETRY_STATUSES = frozenset({408, 409, 413, 429, 500, 502, 503, 504})
# the server is saying "too much" (413: more inputs than TEI's --max-client-batch-size): shrink
OVERLOAD_STATUSES = frozenset({408, 413, 429, 503, 504})
MAX_RETRY_AFTER_S = 30.0


class _Failed(Exception):
    """One request that did not give vectors: what happened, and whether to shrink or give up."""

    def __init__(self, kind: str, *, status: int = 0, text: str = "", retry_after: str | None = None,
                 overload: bool = False, fatal: str | None = None) -> None:
        super().__init__(kind)
        self.kind, self.status, self.text, self.retry_after = kind, status, text, retry_after
        self.overload, self.fatal = overload, fatal


@dataclass
class _Work:
    """The texts of one encode call, shared by the threads sending its requests."""

    items: list[str]
    on_result: Callable[[list[int], np.ndarray], None] | None
    tokens: list[int] = field(init=False)
    out: list[Any] = field(init=False)
    pending: deque[int] = field(init=False)
    attempts: dict[int, int] = field(default_factory=dict)
    error: BaseException | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.tokens = [tokens_of(t) for t in self.items]
        self.out = [None] * len(self.items)
        self.pending = deque(range(len(self.items)))


class OpenAIEmbedder(CachingEncoder):
    source = "openai"

    def __init__(self, model: str, *, base_url: str | None, api_key: str | None = None, timeout_s: float = 60.0,
                 concurrency: int = 4, batch: int = 64, max_retries: int = 4, dimension: int | None = None,
                 query_prefix: str = "", document_prefix: str = "", backoff_s: float = 0.5,
                 cache_size: int = 50_000, cache_path: Path | None = None) -> None:
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
        self._dim_lock = threading.Lock()
        self.aimd = Aimd(max_texts=self.batch, max_in_flight=self.concurrency, timeout_s=timeout_s)
        self._disk = EmbeddingCache(cache_path) if cache_path is not None else None
        self.kept = 0  # texts whose vectors an ingest saved to the disk cache (for the error message)

    @property
    def ingest_batch(self) -> int:
        """Chunks an ingest embeds at a time: one request's worth (ingest/run.py)."""
        return self.batch

    @property
    def ingest_workers(self) -> int:
        """Batches an ingest has embedded at once: one per request in flight."""
        return self.concurrency

    def sustained(self, since: float) -> Sustained | None:
        """What the endpoint sustained for requests sent since ``since`` (``self.aimd.mark()``)."""
        return self.aimd.sustained(since)

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
        if self._disk is not None:
            self._disk.close()

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

    def encode_for_ingest(self, texts: Sequence[str]) -> np.ndarray:
        """Documents' vectors for an ingest: those the disk cache has are not sent again, and each
        answer is saved there as it arrives (an interrupted ingest continues where it stopped)."""
        p = self.document_prefix
        items = [p + t for t in texts] if p else list(texts)
        if self._disk is None or not items:
            return self._encode(items)
        disk = self._disk
        keys = [EmbeddingCache.key(self.spec, t) for t in items]
        have = {k: v for k, v in disk.get_many(keys).items() if self._dim is None or len(v) == self._dim}
        todo = [i for i, k in enumerate(keys) if k not in have]

        def keep(idx: list[int], vecs: np.ndarray) -> None:
            disk.put_many((keys[todo[j]], v) for j, v in zip(idx, vecs))
            self.kept += len(idx)

        new = self._encode([items[i] for i in todo], on_result=keep) if todo else None
        if self._dim is None:
            self._dim = len(next(iter(have.values())))
        out = np.zeros((len(items), self._dim), dtype=np.float32)
        for i, k in enumerate(keys):
            if k in have:
                out[i] = have[k]
        if new is not None:
            out[todo] = new
        return out

    def _encode(self, texts: Sequence[str], on_result: Callable[[list[int], np.ndarray], None] | None = None) -> np.ndarray:
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        # some servers refuse an empty input; a space embeds as "nothing" just as well
        work = _Work([t if t.strip() else " " for t in texts], on_result)
        if self._dim is None:  # the first answer fixes the width the others are checked against
            self._step(work)
        requests = max(math.ceil(sum(work.tokens[i] for i in work.pending) / max(1, self.aimd.size)),
                       math.ceil(len(work.pending) / self.batch))
        threads = min(self.concurrency, requests)  # the requests in flight are bounded by self.aimd.slot()
        if threads <= 1:
            self._drain(work)
        elif work.pending and work.error is None:
            with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="embed") as pool:
                for f in [pool.submit(self._drain, work) for _ in range(threads)]:
                    f.result()
        if work.error is not None:
            raise work.error
        return np.vstack(work.out).astype(np.float32, copy=False)

    def _drain(self, work: _Work) -> None:
        while self._step(work):
            pass

    def _step(self, work: _Work) -> bool:
        """Send the next request of ``work``; False when there is nothing left or it failed for good."""
        with work.lock:
            if work.error is not None or not work.pending:
                return False
            group = self.aimd.take(work.pending, lambda i: work.tokens[i])
        tokens = sum(work.tokens[i] for i in group)
        failure: _Failed | None = None
        with self.aimd.slot(tokens) as timeout:
            t0 = time.monotonic()
            try:
                vecs = self._post([work.items[i] for i in group], timeout)
            except _Failed as exc:
                failure = exc
            except EmbedError as exc:  # a response that is not vectors: no point in asking again
                with work.lock:
                    work.error = work.error or exc
                return False
            t1 = time.monotonic()
        if failure is None:
            self.aimd.succeeded(len(group), tokens, t0, t1)
            with work.lock:
                for i, v in zip(group, vecs):
                    work.out[i] = v
            if work.on_result is not None:
                work.on_result(group, vecs)
            return True
        return self._retry(work, group, tokens, timeout, failure)

    def _retry(self, work: _Work, group: list[int], tokens: int, timeout: float, failure: _Failed) -> bool:
        """Put a failed request's texts back (after a back-off), or give up with a message saying what to do."""
        if failure.overload:
            self.aimd.overloaded()
        with work.lock:
            tries = max(work.attempts.get(i, 0) for i in group) + 1
            for i in group:
                work.attempts[i] = tries
            if failure.fatal or tries > self.max_retries:
                work.error = work.error or EmbedError(self._give_up(failure, tries, len(group), tokens, timeout))
                return False
            work.pending.extendleft(reversed(group))
        self._sleep(tries - 1, failure.retry_after)
        return True

    def _post(self, inputs: list[str], timeout: float) -> np.ndarray:
        import httpx

        body = {"model": self.model, "input": inputs, "encoding_format": "float"}
        try:
            resp = self._http().post(self.url, json=body, timeout=httpx.Timeout(timeout, connect=min(10.0, timeout)))
        except httpx.TimeoutException:
            raise _Failed("timeout", overload=True) from None
        except httpx.TransportError as exc:
            raise _Failed("transport", text=type(exc).__name__) from None
        if resp.status_code == 200:
            return self._vectors(resp, len(inputs))
        status = resp.status_code
        fatal = None if status in RETRY_STATUSES else self._http_problem(status, resp.text)
        raise _Failed("status", status=status, text=resp.text, retry_after=resp.headers.get("retry-after"),
                      overload=status in OVERLOAD_STATUSES, fatal=fatal)

    def _sleep(self, attempt: int, retry_after: str | None) -> None:
        wait = self.backoff_s * (2 ** attempt) * (0.5 + random.random())  # jitter: parallel requests spread out
        if retry_after:
            try:
                wait = max(wait, min(float(retry_after), MAX_RETRY_AFTER_S))
            except ValueError:
                pass
        time.sleep(wait)

    def _give_up(self, failure: _Failed, tries: int, texts: int, tokens: int, timeout: float) -> str:
        """What failed, what the endpoint was seen doing, which setting to change and to what, and what is kept."""
        if failure.fatal:
            return failure.fatal
        latency = self.aimd.median_latency()
        seen = (f"; observed latency {latency:.1f} s per request" if latency else "; no request had succeeded") + \
            f", the last of {texts} text(s) (~{tokens:,} tokens) with {self.aimd.in_flight} in flight"
        if failure.kind == "timeout":
            head = f"the embedding endpoint {self._where()} did not answer within {timeout:g} s ({tries} attempts{seen})"
            todo = (f"Raise RAGCORE_EMBED_TIMEOUT_S to {max(2 * self.timeout_s, 4 * latency):.0f}"
                    + (" and lower RAGCORE_EMBED_CONCURRENCY to 1" if self.concurrency > 1 else "")
                    + (f" and RAGCORE_EMBED_REQUEST_SIZE to {max(1, texts // 2)}" if texts > 1 else "")
                    + "; requests already start small and shrink on timeouts")
        elif failure.kind == "transport":
            head = f"cannot reach the embedding endpoint {self._where()}: {failure.text} ({tries} attempts{seen})"
            todo = "Check that the server is running and RAGCORE_EMBED_BASE_URL points at it"
        else:
            head = self._http_problem(failure.status, failure.text) + f" ({seen.lstrip('; ')})"
            todo = (f"The server is overloaded: lower RAGCORE_EMBED_CONCURRENCY to {max(1, self.aimd.in_flight // 2)}"
                    if failure.status in OVERLOAD_STATUSES else "Check the server's log")
        kept = (f" {self.kept} chunk(s) embedded before the failure are kept: run the same ingest again to continue "
                "from there." if self._disk is not None and self.kept else "")
        return f"{head}. {todo}.{kept}"

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
        with self._dim_lock:
            if self._dim is None:
                self._dim = width
        if width != self._dim:
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
