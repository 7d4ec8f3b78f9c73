"""``RAGCORE_RERANK=onnx:<folder>``: a cross-encoder ONNX export scores (question, passage) pairs.

No cross-encoder weights are on the registries this machine reaches, so the model here is a
synthetic ONNX graph built with the ``onnx`` package (a test-only dependency): its logit is
0.1 × (the passage's real tokens, i.e. type id 1 under the attention mask) − 3. That is enough to
check what ragcore does around a real onnxruntime session: pair tokenisation with type ids,
padding, the inputs fed, the sigmoid, batching and the order that results."""

from __future__ import annotations

import math
import shutil
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
