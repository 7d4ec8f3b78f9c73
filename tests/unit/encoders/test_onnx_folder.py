"""``onnx:<folder>``: a sentence-transformers ONNX export in a folder. The bundled MiniLM, copied
into a folder laid out as such an export, must give the default's vectors exactly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ragcore.encoders.base import EmbedError
from ragcore.encoders.minilm import OnnxMiniLM, model_files
from ragcore.encoders.onnx_folder import OnnxSentenceEncoder, pool, read_folder
from ragcore.encoders.registry import EncoderPool, encoder_for_spec
from ragcore.llamaindex.embedding import embedding_for
from ragcore.settings.config import RagcoreSettings

TEXTS = ["Refunds are issued within 14 days.", "x", "Django's ORM maps models to tables. " * 40]


def minilm_folder(root: Path, *, prompts: dict | None = None, pooling: str = "mean_tokens") -> Path:
    model, tokenizer = model_files()
    d = root / "all-MiniLM-L6-v2"
    (d / "onnx").mkdir(parents=True)
    (d / "1_Pooling").mkdir()
    shutil.copy(model, d / "onnx" / "model.onnx")  # where Hugging Face's ONNX exports keep it
    shutil.copy(tokenizer, d / "tokenizer.json")
    (d / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 384, f"pooling_mode_{pooling}": True}))
    (d / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 256, "do_lower_case": False}))
    if prompts is not None:
        (d / "config_sentence_transformers.json").write_text(json.dumps({"prompts": prompts}))
    return d


def test_minilm_copied_into_a_folder_gives_the_default_vectors(tmp_path, encoder: OnnxMiniLM) -> None:
    folder = minilm_folder(tmp_path)
    enc = encoder_for_spec(f"onnx:{folder}", RagcoreSettings(data_dir=tmp_path))
    assert isinstance(enc, OnnxSentenceEncoder)
    assert np.array_equal(enc.encode_uncached(TEXTS), encoder.encode_uncached(TEXTS))
    assert np.array_equal(enc.encode_queries(["a question?"]), encoder.encode_queries(["a question?"]))
    rec = enc.record()
    assert (rec.source, rec.name, rec.dimension, rec.pooling) == ("onnx", "all-MiniLM-L6-v2", 384, "mean")


def test_prefixes_come_from_the_folder_and_settings_override_them(tmp_path, encoder: OnnxMiniLM) -> None:
    folder = minilm_folder(tmp_path, prompts={"query": "query: ", "document": "passage: "})
    enc = encoder_for_spec(f"onnx:{folder}", RagcoreSettings(data_dir=tmp_path))
    assert (enc.record().query_prefix, enc.record().document_prefix) == ("query: ", "passage: ")
    assert np.array_equal(enc.encode_queries(["what"]), encoder.encode(["query: what"]))
    assert np.array_equal(enc.encode(["text"]), encoder.encode(["passage: text"]))
    s = RagcoreSettings(data_dir=tmp_path, embed_query_prefix="Represent this sentence for searching: ")
    enc2 = encoder_for_spec(f"onnx:{folder}", s)
    assert enc2.record().query_prefix == "Represent this sentence for searching: "


def test_cls_pooling_is_read_from_the_folder(tmp_path) -> None:
    folder = minilm_folder(tmp_path, pooling="cls_token")
    assert read_folder(folder).pooling == "cls"
    h = np.arange(12, dtype=np.float32).reshape(1, 3, 4)
    m = np.array([[1, 1, 0]])
    assert np.array_equal(pool(h, m, "cls"), h[:, 0])
    assert np.array_equal(pool(h, m, "max"), h[:, 1])
    assert np.array_equal(pool(h, m, "lasttoken"), h[:, 1])
    assert np.allclose(pool(h, m, "mean"), h[:, :2].mean(axis=1))


@pytest.mark.parametrize("setup, match", [
    (lambda d: None, "no such folder"),
    (lambda d: d.mkdir(), "no model.onnx"),
    (lambda d: (d.mkdir(), (d / "model.onnx").write_bytes(b"x")), "no tokenizer.json"),
])
def test_a_bad_folder_says_what_is_missing(tmp_path, setup, match) -> None:
    d = tmp_path / "model"
    setup(d)
    with pytest.raises(EmbedError, match=match):
        read_folder(d)


def test_a_file_that_is_not_a_model_is_named(tmp_path) -> None:
    d = tmp_path / "model"
    d.mkdir()
    (d / "model.onnx").write_bytes(b"not onnx")
    shutil.copy(model_files()[1], d / "tokenizer.json")
    with pytest.raises(EmbedError, match="onnxruntime cannot load"):
        OnnxSentenceEncoder(read_folder(d)).encode(["x"])


def test_pool_shares_one_encoder_per_model_and_minilm_is_the_default(tmp_path, encoder: OnnxMiniLM) -> None:
    folder = minilm_folder(tmp_path)
    s = RagcoreSettings(data_dir=tmp_path)
    pool_ = EncoderPool(encoder)
    assert pool_.for_spec("minilm", s) is encoder and pool_.for_record(None, s) is encoder
    a = pool_.for_spec(f"onnx:{folder}", s)
    assert pool_.for_record(a.record(), s) is a


def test_fastembed_offline_or_missing_fails_fast_and_clearly(tmp_path) -> None:
    enc = encoder_for_spec("fastembed:BAAI/bge-small-en-v1.5", RagcoreSettings(data_dir=tmp_path))
    with pytest.raises(EmbedError, match="onnx:<folder>"):
        enc.encode(["x"])


def test_llamaindex_embedding_uses_the_query_prefix(tmp_path, encoder: OnnxMiniLM) -> None:
    folder = minilm_folder(tmp_path, prompts={"query": "query: ", "document": ""})
    emb = embedding_for(f"onnx:{folder}", RagcoreSettings(data_dir=tmp_path))
    assert np.allclose(emb.get_query_embedding("what"), encoder.encode(["query: what"])[0], atol=1e-6)
    assert np.allclose(emb.get_text_embedding("what"), encoder.encode(["what"])[0], atol=1e-6)


def test_the_docs_recipe_for_a_minilm_folder_gives_the_default_vectors(tmp_path, encoder: OnnxMiniLM,
                                                                        monkeypatch) -> None:
    """docs/19's recipe, run as written: without its sentence_bert_config.json a long text got other vectors."""
    import re

    from tests.conftest import REPO

    page = REPO / "docs" / "19-choosing-models.md"
    block = re.search(r"```python\n(# the bundled MiniLM as an onnx:<folder> model\n.*?)```", page.read_text(), re.S)
    assert block, "docs/19 has the recipe"
    monkeypatch.chdir(tmp_path)
    exec(compile(block.group(1), "docs/19-choosing-models.md", "exec"), {})
    enc = encoder_for_spec(f"onnx:{tmp_path / 'minilm-folder'}", RagcoreSettings(data_dir=tmp_path))
    assert np.array_equal(enc.encode_uncached(TEXTS), encoder.encode_uncached(TEXTS))
