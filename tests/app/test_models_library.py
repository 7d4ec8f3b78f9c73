"""AppTest: the Library asks a new collection's embedding model, records it, and lists each
collection's model; a model value that cannot be used stops the ingest with its message."""

from __future__ import annotations

import uuid

import pytest

from tests.support.app_support import app_env, html_table, ok, started, wait_for_job  # noqa: F401
from tests.unit.encoders.test_onnx_folder import minilm_folder

pytestmark = pytest.mark.slow
LIB = "pages/library.py"


def test_a_new_collection_takes_the_model_chosen_and_the_table_shows_it(app_env, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "alpha.md").write_text("# Alpha\n\nThe alpha widget stores its state in a bucket.\n")
    model = minilm_folder(tmp_path / "models")
    name = f"models-{uuid.uuid4().hex[:6]}"
    at = started(LIB)
    at.text_input(key="ing_folder").set_value(str(folder)).run()
    at.text_input(key="ing_new_name").set_value(name).run()
    assert at.text_input(key="ing_embed_model").value == "minilm"
    at.text_input(key="ing_embed_model").set_value("word2vec").run()
    assert any("RAGCORE_EMBED_MODEL='word2vec' is not allowed" in e.value for e in at.error)
    assert at.button(key="ing_go_folder").disabled
    at.text_input(key="ing_embed_model").set_value(f"onnx:{model}").run()
    at.button(key="ing_go_folder").click().run()
    wait_for_job(at)
    ok(at)
    cols = html_table(at, "rc-cols")
    assert cols[cols["collection"] == name].iloc[0]["embedding model"] == f"onnx:{model} (384-d)"
    assert cols[cols["collection"] == "guide"].iloc[0]["embedding model"].startswith("minilm")
