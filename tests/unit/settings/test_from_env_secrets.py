"""``RagcoreSettings.from_env()`` (README's Python example) reads the endpoint from .streamlit/secrets.toml
as the CLI and the service do: an ``[openai]`` table gave them an LLM but not from_env (issue 44)."""

from __future__ import annotations

import pytest

from ragcore.settings.config import RagcoreSettings

SECRETS = '[openai]\napi_key = "sk-test-123456"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "tiny"\n'


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text(SECRETS)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # no user-level secrets.toml
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "RAGCORE_LLM_MODEL", "RAGCORE_LLM_API_KEY", "RAGCORE_LLM_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def test_from_env_reads_the_openai_table_of_secrets_toml(project):
    s = RagcoreSettings.from_env()
    assert s.llm.configured and s.llm.model == "tiny"
    assert s.llm.api_key == "sk-test-123456" and s.llm.base_url == "http://127.0.0.1:9/v1"


def test_the_environment_wins_over_secrets_toml(project, monkeypatch):
    monkeypatch.setenv("RAGCORE_LLM_MODEL", "from-env")
    assert RagcoreSettings.from_env().llm.model == "from-env"


def test_a_mapping_passed_in_is_read_alone_unless_asked(project):
    assert not RagcoreSettings.from_env({}).llm.configured
    assert RagcoreSettings.from_env({}, secrets=True).llm.model == "tiny"


def test_the_cli_and_from_env_agree(project):
    import argparse
    import os

    from ragcore.cli.common import settings_from_args

    assert settings_from_args(argparse.Namespace(), dict(os.environ)).llm == RagcoreSettings.from_env().llm


def test_the_app_reads_the_table_too(project):
    from ragcore.settings.app_file import load_app_settings, save_app_settings

    save_app_settings(project / "data", {"llm.model": "saved-in-the-app"})
    loaded = load_app_settings(project / "data", env={}, secrets_toml=True)
    assert loaded.settings.llm.model == "tiny"  # secrets.toml wins over the app's file, as its top-level entries do
    assert loaded.source("llm.model") == "secrets (openai.model)"
    assert loaded.settings.llm == RagcoreSettings.from_env().llm
