"""One resolver (ragcore/settings/resolve.py): the CLI, the app, ``ragcore serve`` (its workers too) and
``RagcoreSettings.from_env()`` get the same settings from the same files, variables and options, in the
one order docs/13 lists (issue 44: the three old paths gave different results)."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

from ragcore.cli.common import settings_from_args
from ragcore.cli.main import build_parser
from ragcore.settings.app_file import load_app_settings, save_app_settings
from ragcore.settings.config import ConfigError, RagcoreSettings
from ragcore.settings.resolve import ORDER, resolve, settings_path

SECRETS = ('RAGCORE_RRF_K = 30\n'
           'RAGCORE_TOP_K = 7\n'
           '[openai]\napi_key = "sk-test-123456"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "from-secrets"\n')


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project folder with a secrets.toml, a data folder whose settings file the app saved, and one
    variable in the environment."""
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text(SECRETS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no user-level secrets.toml
    for var in [k for k in os.environ if k.startswith(("RAGCORE_", "OPENAI_"))]:
        monkeypatch.delenv(var)
    data = tmp_path / "data"
    save_app_settings(data, {"top_k": 9, "fusion": "weighted", "llm.model": "saved-in-the-app",
                             "llm.temperature": 0.5, "chunk_size": 200})
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(data))
    monkeypatch.setenv("RAGCORE_THRESHOLD", "0.2")
    monkeypatch.setenv("RAGCORE_FUSION", "rrf")
    return tmp_path


def _expected(s: RagcoreSettings) -> None:
    assert s.chunk_size == 200 and s.llm.temperature == 0.5  # the file (nothing above sets them)
    assert s.llm.model == "from-secrets" and s.llm.api_key == "sk-test-123456"  # secrets.toml over the file
    assert s.top_k == 7 and s.rrf_k == 30  # secrets.toml's top-level entries over the file
    assert s.threshold == 0.2 and s.fusion == "rrf"  # the environment over the file
    assert s.embed_api_key == "sk-test-123456" or s.embed_api_key is None


def test_every_entry_point_gets_the_same_settings(project, monkeypatch):
    from ragcore.service.app import worker_settings
    from ragcore.service.server import _export

    python = RagcoreSettings.from_env()
    cli = settings_from_args(build_parser().parse_args(["ask", "a question"]))
    app = load_app_settings(os.environ["RAGCORE_DATA_DIR"], secrets_toml=True).settings
    serve_args = build_parser().parse_args(["serve"])
    served = settings_from_args(serve_args)
    for s in (python, cli, app, served):
        _expected(s)
    assert python == cli == app == served
    # a flag: the CLI's option, the service's option (handed to its workers), and a value given in code
    flagged = settings_from_args(build_parser().parse_args(["ask", "q", "--top-k", "4", "--collection", "notes"]))
    serve_args = build_parser().parse_args(["--data-dir", os.environ["RAGCORE_DATA_DIR"], "serve", "--collection", "notes"])
    for var in ("RAGCORE_COLLECTION", "RAGCORE_SERVE_HOST", "RAGCORE_SERVE_PORT", "RAGCORE_SERVE_WORKERS"):
        monkeypatch.setenv(var, "")  # _export writes into os.environ: monkeypatch puts it back afterwards
    _export(serve_args, settings_from_args(serve_args))
    worker = worker_settings()
    assert flagged.top_k == 4 and flagged == RagcoreSettings.from_env(top_k=4, collection="notes")
    assert worker.collection == "notes" and worker == python.with_(collection="notes")


def test_the_app_is_told_where_each_value_comes_from(project):
    loaded = load_app_settings(os.environ["RAGCORE_DATA_DIR"], secrets_toml=True)
    assert loaded.source("chunk_size") == "file"
    assert loaded.source("llm.model") == "secrets (openai.model)"
    assert loaded.source("top_k") == "secrets (RAGCORE_TOP_K)"
    assert loaded.source("threshold") == "environment (RAGCORE_THRESHOLD)"
    assert loaded.source("dedupe") == "default"
    assert loaded.path == settings_path(os.environ["RAGCORE_DATA_DIR"])


def test_the_layers_win_in_the_documented_order(tmp_path):
    """One setting given by every layer: each layer, removed from the top, hands it to the one below,
    in resolve.ORDER (which docs/13 prints)."""
    data = tmp_path / "data"
    save_app_settings(data, {"top_k": 2})
    secrets = tmp_path / "secrets.toml"
    secrets.write_text("RAGCORE_TOP_K = 3\n")
    env = {"RAGCORE_DATA_DIR": str(data), "RAGCORE_TOP_K": "4"}
    layers = {"file": 2, "secrets": 3, "environment": 4, "option": 5, "explicit": 6}

    def top_k(upto: str) -> int:
        names = [name for name, _ in ORDER]
        keep = set(names[: names.index(upto) + 1])
        r = resolve(RagcoreSettings, env if "environment" in keep else {"RAGCORE_DATA_DIR": str(data)},
                    flags={"top_k": "5"} if "option" in keep else None, flag_labels={"top_k": "--top-k"},
                    overrides={"top_k": 6} if "explicit" in keep else None,
                    secrets_files=[secrets] if "secrets" in keep else [],
                    read_files="file" in keep)
        return r.settings.top_k

    assert [name for name, _ in ORDER] == ["default", "file", "secrets", "environment", "option", "explicit"]
    assert top_k("default") == RagcoreSettings.__dataclass_fields__["top_k"].default
    for name, value in layers.items():
        assert top_k(name) == value, name


def test_a_bad_file_entry_is_skipped_with_a_reason_and_a_bad_option_stops(project, capsys, monkeypatch):
    path = settings_path(os.environ["RAGCORE_DATA_DIR"])
    raw = json.loads(path.read_text())
    raw["settings"]["top_k"] = 0
    raw["settings"]["max_answer_sentences"] = "many"
    path.write_text(json.dumps(raw))
    s = settings_from_args(argparse.Namespace())
    assert s.top_k == 7 and s.max_answer_sentences == RagcoreSettings().max_answer_sentences
    assert "max_answer_sentences" in capsys.readouterr().err
    monkeypatch.setenv("RAGCORE_THRESHOLD", "2")
    with pytest.raises(ConfigError) as err:  # every bad value of the process's own inputs, in one message
        settings_from_args(argparse.Namespace(top_k="0"))
    assert "--top-k=0 is not allowed" in str(err.value) and "RAGCORE_THRESHOLD=2 is not allowed" in str(err.value)


def test_a_settings_file_that_is_not_json_does_not_stop_a_command(project, capsys):
    settings_path(os.environ["RAGCORE_DATA_DIR"]).write_text("{not json")
    s = settings_from_args(argparse.Namespace())
    assert s.chunk_size == RagcoreSettings().chunk_size and "cannot be read" in capsys.readouterr().err


def test_a_mapping_passed_to_from_env_is_read_alone(project):
    alone = RagcoreSettings.from_env({"RAGCORE_TOP_K": "3"})
    assert alone.top_k == 3 and alone.chunk_size == 180 and not alone.llm.configured
    assert RagcoreSettings.from_env({"RAGCORE_DATA_DIR": os.environ["RAGCORE_DATA_DIR"]}, secrets=True).chunk_size == 200


def test_settings_files_data_folder_comes_from_above_it(tmp_path):
    """The file cannot move the data folder: it is found through the layers above it."""
    data = tmp_path / "data"
    settings_path(data).parent.mkdir(parents=True)
    settings_path(data).write_text(json.dumps({"format": 1, "settings": {"data_dir": "/elsewhere", "top_k": 8}}))
    r = resolve(RagcoreSettings, {"RAGCORE_DATA_DIR": str(data)}, secrets_files=[])
    assert r.settings.data_dir == Path(data) and r.settings.top_k == 8
