"""A sentence-transformers model exported to ONNX, run with onnxruntime + tokenizers (no torch).

``onnx:<folder>`` reads what a sentence-transformers export keeps beside ``model.onnx`` (or
``onnx/model.onnx``) and ``tokenizer.json``: ``1_Pooling/config.json`` (mean, CLS, max or last
token), ``sentence_bert_config.json`` (``max_seq_length``) and ``config_sentence_transformers.json``
(``prompts``: the query and document prefixes e5 and bge need). ``RAGCORE_EMBED_QUERY_PREFIX`` /
``RAGCORE_EMBED_DOCUMENT_PREFIX`` override the prefixes. The bundled MiniLM
(:class:`~ragcore.encoders.minilm.OnnxMiniLM`) is this encoder with its files found in packages.

Vectors are always L2-normalised: the store compares them by cosine and the in-process index by
dot product, which agree only on unit rows.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ragcore.encoders.base import CachingEncoder, EmbedError, ModelRecord, unit_rows

POOLING_MODES = ("mean", "cls", "max", "lasttoken")


@dataclass(frozen=True)
class OnnxModelConfig:
    """What an ONNX sentence encoder needs beside its weights."""

    model: Path
    tokenizer: Path
    pooling: str = "mean"
    max_tokens: int = 512
    query_prefix: str = ""
    document_prefix: str = ""
    name: str = ""


def _json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError) as exc:
        raise EmbedError(f"cannot read {path}: {exc}") from exc


def _pooling(folder: Path) -> str:
    cfg = _json(folder / "1_Pooling" / "config.json")
    for mode in ("cls_token", "max_tokens", "lasttoken", "mean_tokens"):
        if cfg.get(f"pooling_mode_{mode}"):
            return {"cls_token": "cls", "max_tokens": "max", "lasttoken": "lasttoken", "mean_tokens": "mean"}[mode]
    return "mean"  # sentence-transformers' default, and what a folder without the file most likely wants


def read_folder(folder: str | Path, query_prefix: str | None = None, document_prefix: str | None = None) -> OnnxModelConfig:
    """The configuration of a sentence-transformers ONNX export (EmbedError naming what is missing)."""
    d = Path(folder).expanduser()
    if not d.is_dir():
        raise EmbedError(f"onnx:{folder}: no such folder (it should hold model.onnx and tokenizer.json "
                         "from a sentence-transformers ONNX export)")
    model = next((p for p in (d / "model.onnx", d / "onnx" / "model.onnx") if p.is_file()), None)
    if model is None:
        raise EmbedError(f"onnx:{folder}: no model.onnx (looked in {d} and {d / 'onnx'})")
    if not (d / "tokenizer.json").is_file():
        raise EmbedError(f"onnx:{folder}: no tokenizer.json beside the model")
    prompts = _json(d / "config_sentence_transformers.json").get("prompts") or {}
    max_len = _json(d / "sentence_bert_config.json").get("max_seq_length") or 512
    return OnnxModelConfig(
        model=model, tokenizer=d / "tokenizer.json", pooling=_pooling(d), max_tokens=int(max_len),
        query_prefix=prompts.get("query", "") if query_prefix is None else query_prefix,
        document_prefix=prompts.get("document", prompts.get("passage", "")) if document_prefix is None else document_prefix,
        name=d.resolve().name,
    )


class OnnxSentenceEncoder(CachingEncoder):
    """The bare encoder: texts in, L2-normalised float32 vectors out. Loads lazily on first use."""

    source = "onnx"
    _output: str | None = None  # the model output read (None: the first)

    def __init__(self, config: OnnxModelConfig | None = None, *, threads: int | None = None, batch_size: int = 2,
                 cache_size: int = 50_000, spec: str = "") -> None:
        super().__init__(cache_size)
        self.config = config
        self.threads = threads or os.cpu_count() or 1
        self.batch_size = batch_size
        self.spec = spec
        self._session: Any = None
        self._tokenizer: Any = None
        self._lock = threading.Lock()
        self._loader: threading.Thread | None = None
        self._dim: int | None = None

    @property
    def query_prefix(self) -> str:  # type: ignore[override]
        return self._config().query_prefix

    @property
    def document_prefix(self) -> str:  # type: ignore[override]
        return self._config().document_prefix

    @property
    def max_tokens(self) -> int:
        return self._config().max_tokens

    def _config(self) -> OnnxModelConfig:
        assert self.config is not None
        return self.config

    def record(self) -> ModelRecord:
        c = self._config()
        return ModelRecord(source=self.source, name=c.name, spec=self.spec or f"onnx:{c.model.parent}",
                           dimension=self.dimension(), query_prefix=c.query_prefix,
                           document_prefix=c.document_prefix, pooling=c.pooling)

    def dimension(self) -> int:
        if self._dim is None:
            self._load()
        assert self._dim is not None
        return self._dim

    def _load(self) -> None:
        if self._session is not None:
            return
        with self._lock:
            if self._session is not None:
                return
            import onnxruntime as ort
            from tokenizers import Tokenizer

            c = self._config()
            tok = Tokenizer.from_file(str(c.tokenizer))
            tok.enable_truncation(max_length=c.max_tokens)
            tok.no_padding()  # each model batch is padded to its own longest text (_batches)
            opts = ort.SessionOptions()
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            opts.intra_op_num_threads = self.threads
            opts.inter_op_num_threads = 1
            # idle pool threads sleep instead of spinning: on a shared or busy machine, and
            # while ingest parses and writes in other threads, spinning steals their cores
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
            opts.log_severity_level = 3
            try:
                session = ort.InferenceSession(str(c.model), sess_options=opts, providers=["CPUExecutionProvider"])
            except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own types; the user needs the file named
                raise EmbedError(f"onnxruntime cannot load {c.model}: {exc}") from exc
            self._inputs = {i.name for i in session.get_inputs()}
            outs = session.get_outputs()
            pooled = [o for o in outs if o.name == "sentence_embedding"]
            self._output = (pooled or outs)[0].name
            width = (pooled or outs)[0].shape[-1]
            self._dim = int(width) if isinstance(width, int) else None
            self._tokenizer = tok
            self._session = session
        if self._dim is None:  # a symbolic width: ask the model once
            self._dim = int(self._encode(["dimension"]).shape[1])

    def in_vocabulary(self, word: str) -> bool:
        """Whether ``word`` is one whole entry of the model's vocabulary (common English words
        are; rare and technical ones split into pieces)."""
        self._load()
        return self._tokenizer.token_to_id(word.lower()) is not None

    def load_in_background(self) -> threading.Thread:  # type: ignore[override]
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

    def count_tokens(self, texts: Sequence[str]) -> list[int]:
        """Word pieces the model runs on for each text: special tokens included, truncated at
        ``max_tokens`` (what benchmarks count as work)."""
        self._load()
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts), add_special_tokens=True)]

    def _batches(self, lengths: Sequence[int]) -> list[list[int]]:
        """Indices of texts, sorted by length and cut into model batches.

        A batch is padded to its longest text, so sorting keeps padding (wasted attention
        work) small; a batch holds at most ``batch_size`` full-length texts' worth of tokens,
        so short texts (headings, questions) go many to a run instead of ``batch_size``.
        """
        budget = self.batch_size * self.max_tokens
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
        if n == 0:
            return np.zeros((0, self.dimension()), dtype=np.float32)
        encs = self._tokenizer.encode_batch(list(texts), add_special_tokens=True)
        out: np.ndarray | None = None
        for idx in self._batches([len(e.ids) for e in encs]):
            width = max(len(encs[i].ids) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros((len(idx), width), dtype=np.int64)
            for row, i in enumerate(idx):
                L = len(encs[i].ids)
                ids[row, :L] = encs[i].ids
                mask[row, :L] = 1
            vecs = self._run(ids, mask)
            if out is None:
                out = np.zeros((n, vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
        assert out is not None
        return out

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run([self._output] if self._output else None, feeds)[0]
        if hidden.ndim == 2:  # the export pools itself (a sentence_embedding output)
            return unit_rows(hidden)
        return unit_rows(pool(hidden, mask, self._config().pooling))


def pool(hidden: np.ndarray, mask: np.ndarray, mode: str) -> np.ndarray:
    """One vector per text from per-token vectors (sentence-transformers' Pooling), over real tokens."""
    w = mask[..., None].astype(np.float32)
    if mode == "cls":
        return hidden[:, 0]
    if mode == "max":
        return np.where(w > 0, hidden, -np.inf).max(axis=1)
    if mode == "lasttoken":
        last = np.clip(mask.sum(axis=1) - 1, 0, None)
        return hidden[np.arange(len(hidden)), last]
    # mean over real tokens (sentence-transformers' default)
    return (hidden * w).sum(axis=1) / np.clip(w.sum(axis=1), 1e-9, None)
