"""The model is part of the collection: built through an OpenAI-compatible endpoint (the scripted
embeddings server on 127.0.0.1), recorded with the collection, used for every question on it
whatever RAGCORE_EMBED_MODEL says later (and the answer says so); another model is refused at
ingest with both named; `ragcore collections` names each collection's model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from ragcore.cli.main import main
from ragcore.encoders.registry import ModelMismatch
from tests.conftest import write_corpus
from bench.support.scripted_embeddings import ScriptedEmbeddingServer
from tests.unit.encoders.test_onnx_folder import minilm_folder

CORPUS = {
    "refunds.md": "# Refunds\n\nRefunds are issued within 14 days of purchase for unused items. "
                  "A refund goes back to the card that paid.\n",
    "shipping.md": "# Shipping\n\nOrders ship within two business days. Express shipping costs extra.\n",
    "warranty.md": "# Warranty\n\nEvery device has a two year warranty covering manufacturing faults.\n",
}
QUESTION = "When are refunds issued for unused items?"


@pytest.fixture
def server() -> Iterator[ScriptedEmbeddingServer]:
    with ScriptedEmbeddingServer(dim=96) as s:
        yield s


def openai_settings(engine, server, **kw):
    return engine.settings.with_(embed_model="openai:scripted-embed", embed_base_url=server.base_url,
                                 embed_api_key="sk-collection-test-key", **kw)


def test_a_collection_built_through_an_endpoint_records_its_model_and_answers(tmp_path, make_engine, server) -> None:
    engine = make_engine()
    s = openai_settings(engine, server)
    engine.ingest([write_corpus(tmp_path / "c", CORPUS)], "web", settings=s, calibrate=False)
    meta = engine.store.read_meta("web")
    assert meta["embedding"]["spec"] == "openai:scripted-embed" and meta["embedding"]["dimension"] == 96
    assert engine.store.snapshot("web").dense.shape[1] == 96
    assert "sk-collection-test-key" not in json.dumps(meta)
    n_before = len(server.requests)
    answer = engine.ask(QUESTION, collection="web", settings=s.with_(collection="web", abstain_bar=0.0))
    assert answer.status == "ok", answer.error_message
    assert answer.citations and answer.citations[0].path == "refunds.md"
    assert [r.body["input"] for r in server.requests[n_before:]][0] == [QUESTION]  # the question went to the endpoint


def test_asked_while_another_model_is_configured_it_uses_its_own_and_says_so(tmp_path, make_engine, server) -> None:
    engine = make_engine()
    engine.ingest([write_corpus(tmp_path / "c", CORPUS)], "web", settings=openai_settings(engine, server), calibrate=False)
    n_before = len(server.requests)
    s = engine.settings.with_(collection="web", embed_model="minilm", embed_base_url=server.base_url, abstain_bar=0.0)
    answer = engine.ask(QUESTION, settings=s)
    assert answer.status == "ok" and answer.citations[0].path == "refunds.md"
    assert any(r.body["input"] == [QUESTION] for r in server.requests[n_before:])
    note = next(n for n in answer.validation.notes if "own model" in n)
    assert "openai:scripted-embed" in note and "RAGCORE_EMBED_MODEL=minilm" in note
    # the default collection next to it stays MiniLM and says nothing
    engine.ingest([write_corpus(tmp_path / "d", CORPUS)], "plain", settings=s, calibrate=False)
    plain = engine.ask(QUESTION, settings=s.with_(collection="plain"))
    assert not any("own model" in n for n in plain.validation.notes)
    assert engine.store.read_meta("plain")["embedding"]["source"] == "minilm"


def test_ingesting_with_another_model_is_refused_naming_both_and_rebuild_works(tmp_path, make_engine, server) -> None:
    engine = make_engine()
    corpus = write_corpus(tmp_path / "c", CORPUS)
    engine.ingest([corpus], "web", settings=openai_settings(engine, server), calibrate=False)
    with pytest.raises(ModelMismatch) as err:
        engine.ingest([corpus], "web", settings=engine.settings.with_(embed_model="minilm"), calibrate=False)
    msg = str(err.value)
    assert "openai:scripted-embed (96-d)" in msg and "minilm" in msg and "--rebuild" in msg
    assert engine.store.read_meta("web")["embedding"]["source"] == "openai"  # nothing changed
    engine.ingest([corpus], "web", settings=engine.settings.with_(embed_model="minilm"), calibrate=False, rebuild=True)
    assert engine.store.read_meta("web")["embedding"]["dimension"] == 384
    assert engine.store.snapshot("web").dense.shape[1] == 384


def test_a_down_endpoint_at_question_time_is_a_clear_error(tmp_path, make_engine, server) -> None:
    engine = make_engine()
    s = openai_settings(engine, server, embed_timeout_s=2.0)
    engine.ingest([write_corpus(tmp_path / "c", CORPUS)], "web", settings=s, calibrate=False)
    server.stop()
    engine.encoders.for_record(engine.embedder("web").record(), s).clear_cache()
    answer = engine.ask("Something not asked before?", settings=s.with_(collection="web"))
    assert answer.status == "error" and "could not be embedded" in answer.error_message
    assert "cannot reach the embedding endpoint" in answer.error_message


def test_minilm_through_an_onnx_folder_answers_as_the_default(tmp_path, make_engine) -> None:
    engine = make_engine()
    corpus = write_corpus(tmp_path / "c", CORPUS)
    folder = minilm_folder(tmp_path / "models")
    engine.ingest([corpus], "default", calibrate=False)
    engine.ingest([corpus], "folder", settings=engine.settings.with_(embed_model=f"onnx:{folder}"), calibrate=False)
    assert np.array_equal(engine.store.snapshot("default").dense, engine.store.snapshot("folder").dense)
    s = engine.settings.with_(abstain_bar=0.0)
    a = engine.ask(QUESTION, settings=s.with_(collection="default"))
    b = engine.ask(QUESTION, settings=s.with_(collection="folder", embed_model=f"onnx:{folder}"))
    assert a.answer == b.answer and [c.chunk_id for c in a.citations] == [c.chunk_id for c in b.citations]
    assert [round(c.dense_score, 6) for c in a.candidates] == [round(c.dense_score, 6) for c in b.candidates]


def test_cli_ingest_with_embed_model_and_collections_names_it(tmp_path, server, monkeypatch, capsys) -> None:
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAGCORE_EMBED_BASE_URL", server.base_url)
    monkeypatch.setenv("RAGCORE_EMBED_API_KEY", "sk-cli-secret-123456")
    corpus = write_corpus(tmp_path / "c", CORPUS)
    assert main(["ingest", str(corpus), "-c", "web", "--embed-model", "openai:scripted-embed", "--no-calibrate"]) == 0
    out = capsys.readouterr().out
    assert "embedding model openai:scripted-embed (96-d)" in out
    assert main(["collections"]) == 0
    out = capsys.readouterr().out
    assert "embedding model openai:scripted-embed (96-d)" in out and "sk-cli-secret" not in out
    assert main(["ingest", str(corpus), "-c", "web", "--no-calibrate", "--embed-model", "minilm"]) == 2  # refused
    err = capsys.readouterr().err
    assert "built with openai:scripted-embed (96-d)" in err and "sk-cli-secret" not in err
    assert main(["ingest", str(corpus), "-c", "web", "--no-calibrate"]) == 0  # no model asked: it keeps its own
    assert "embedding model openai:scripted-embed (96-d)" in capsys.readouterr().out
    monkeypatch.setenv("RAGCORE_ABSTAIN_BAR", "0")  # not calibrated (--no-calibrate): answer what is found
    assert main(["ask", QUESTION, "-c", "web", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["citations"] and "sk-cli-secret" not in json.dumps(answer)


def test_eval_compares_two_collections_of_one_folder_question_by_question(tmp_path, server, monkeypatch, capsys) -> None:
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RAGCORE_EMBED_BASE_URL", server.base_url)
    monkeypatch.setenv("RAGCORE_EMBED_API_KEY", "sk-eval-secret-123456")
    corpus = write_corpus(tmp_path / "c", CORPUS)
    assert main(["ingest", str(corpus), "-c", "mini", "--no-calibrate"]) == 0
    assert main(["ingest", str(corpus), "-c", "web", "--embed-model", "openai:scripted-embed", "--no-calibrate"]) == 0
    qs = tmp_path / "questions.jsonl"
    qs.write_text("\n".join(json.dumps({"question": q, "relevant_docs": [doc]}) for q, doc in (
        (QUESTION, "refunds.md"), ("How fast do orders ship?", "shipping.md"),
        ("What does the warranty cover?", "warranty.md"))) + "\n")
    out = tmp_path / "eval.json"
    capsys.readouterr()
    assert main(["eval", str(qs), "-c", "mini", "--sweep", "collection=web", "--baselines", "", "--out", str(out),
                 "--no-charts", "--no-save", "-q"]) == 0
    report = json.loads(out.read_text())
    text = json.dumps(report)
    assert "collection=web" in text
    assert "sk-eval-secret" not in text and "sk-eval-secret" not in capsys.readouterr().out
    md = out.with_suffix(".md").read_text()
    assert "collection=web" in md and "question by question" in md.lower()


def test_wide_vectors_get_a_wider_projection_that_round_trips(tmp_path) -> None:
    from ragcore.storage.dense_codes import components_for, read_codes, write_codes

    assert components_for(384) == components_for(1024) == 64 and components_for(3072) == 128
    rng = np.random.default_rng(1)
    dense = rng.standard_normal((500, 1536)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    write_codes(tmp_path, dense)
    codes = read_codes(tmp_path, 500, 1536)
    assert codes.codes.shape == (500, 128) and codes.basis.shape == (128, 1536)
    best = codes.candidates(dense[7], 50)
    assert 7 in best  # a row's own vector is among its projection's best
    with pytest.raises(ValueError):
        read_codes(tmp_path, 500, 384)  # codes of another width are refused
