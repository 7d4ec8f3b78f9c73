"""``RAGCORE_RERANK=onnx:<folder>``: a cross-encoder ONNX export scores (question, passage) pairs.

No cross-encoder weights are on the registries this machine reaches, so the model here is a
synthetic ONNX graph built with the ``onnx`` package (a test-only dependency): its logit is
0.1 × (the passage's real tokens, i.e. type id 1 under the attention mask) − 3. That is enough to
check what ragcore does around a real onnxruntime session: pair tokenisation with type ids,
padding, the inputs fed, the sigmoid, batching and the order that results."""

from __future__ import annotations

import math
import shutil
import time
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from ragcore.encoders.minilm import model_files  # noqa: E402
from ragcore.retrieval.rerank import OnnxCrossEncoder, RerankError, reranker_for  # noqa: E402
from ragcore.settings.config import RagcoreSettings  # noqa: E402


def cross_encoder_folder(root: Path) -> Path:
    ints = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "seq"])
            for n in ("input_ids", "attention_mask", "token_type_ids")]
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    nodes = [
        helper.make_node("Mul", ["token_type_ids", "attention_mask"], ["doc_tokens"]),
        helper.make_node("Cast", ["doc_tokens"], ["doc_f"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["doc_f", "axes"], ["count"], keepdims=1),
        helper.make_node("Mul", ["count", "scale"], ["scaled"]),
        helper.make_node("Sub", ["scaled", "shift"], ["logits"]),
    ]
    inits = [helper.make_tensor("axes", TensorProto.INT64, [1], [1]),
             helper.make_tensor("scale", TensorProto.FLOAT, [], [0.1]),
             helper.make_tensor("shift", TensorProto.FLOAT, [], [3.0])]
    model = helper.make_model(helper.make_graph(nodes, "synthetic-cross-encoder", ints, [out], inits),
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    d = root / "cross-encoder"
    d.mkdir(parents=True)
    onnx.save(model, d / "model.onnx")
    shutil.copy(model_files()[1], d / "tokenizer.json")
    return d


def test_pairs_are_scored_through_onnxruntime(tmp_path) -> None:
    enc = OnnxCrossEncoder(cross_encoder_folder(tmp_path), batch=2)
    docs = ["short", "a somewhat longer passage about refunds", "x y", "the longest passage of them all by a margin here"]
    scores = enc.scores("how are refunds issued?", docs)
    n_tokens = [len(enc._tok.encode(d).ids) - 1 for d in docs]  # the passage's word pieces and its [SEP]
    assert scores == pytest.approx([1 / (1 + math.exp(-(0.1 * n - 3))) for n in n_tokens], abs=1e-5)
    assert sorted(range(4), key=lambda i: -scores[i]) == [3, 1, 2, 0]


def test_the_setting_builds_it_and_a_bad_folder_says_what_is_missing(tmp_path) -> None:
    folder = cross_encoder_folder(tmp_path)
    assert isinstance(reranker_for(f"onnx:{folder}", RagcoreSettings(data_dir=tmp_path)), OnnxCrossEncoder)
    with pytest.raises(RerankError, match="needs model.onnx and tokenizer.json"):
        OnnxCrossEncoder(tmp_path / "nothing")


def test_a_bi_encoder_folder_is_refused_not_scored_as_noise(tmp_path) -> None:
    # the bundled MiniLM is an embedding model: it loads and runs on (question, passage) pairs, but its
    # output is one vector per token, not one score per pair
    folder = tmp_path / "minilm"
    folder.mkdir()
    for f in model_files():
        shutil.copy(f, folder / f.name)
    with pytest.raises(RerankError, match="not a cross-encoder: its output has shape"):
        OnnxCrossEncoder(folder).scores("how are refunds issued?", ["refunds take 14 days", "the sky"])


def test_the_first_question_waits_for_the_model_not_the_fused_order(tmp_path) -> None:
    from ragcore.retrieval.rerank import rerank_candidates
    from ragcore.types import Candidate, Chunk

    class SlowToLoad(OnnxCrossEncoder):  # a real session, loaded as slowly as on a busy machine
        def _load(self) -> None:
            if self._session is None:
                time.sleep(1.5)
            super()._load()

    chunks = [Chunk(chunk_id=f"c{i}", text=text, path="a.md", doc_hash="h", kind="markdown", start_line=i, end_line=i)
              for i, text in enumerate(["x", "a much longer passage about how refunds are issued"], 1)]
    pool = [Candidate(chunk=c, dense_score=None, sparse_score=None, fused_score=None, dense_rank=None, sparse_rank=None,
                      fused_rank=r, rank=r) for r, c in enumerate(chunks, 1)]
    out = rerank_candidates("how are refunds issued?", pool, SlowToLoad(cross_encoder_folder(tmp_path)), top_n=2,
                            timeout_s=1.0)  # scoring takes milliseconds; loading took 1.5 s
    assert out.note is None and [c.chunk.chunk_id for c in out.candidates] == ["c2", "c1"]
