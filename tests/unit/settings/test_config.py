"""Settings are validated in one place: environment, code, with_/replace and secrets.toml alike."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from ragcore.settings.config import ConfigError, LlmSettings, RagcoreSettings, known_variables
from ragcore.settings.llm_config import resolve_llm_settings, resolve_llm_settings_with_sources

# --------------------------------------------------------------------------- environment


@pytest.mark.parametrize(
    ("var", "value", "expected"),
    [
        ("RAGCORE_TOP_K", "-3", "RAGCORE_TOP_K=-3 is not allowed: top_k must be an integer from 1 to 1000"),
        ("RAGCORE_TOP_K", "0", "top_k must be an integer from 1 to 1000"),
        ("RAGCORE_TOP_K", "abc", "RAGCORE_TOP_K=abc is not allowed: top_k must be an integer from 1 to 1000"),
        ("RAGCORE_TOP_K", "2.5", "RAGCORE_TOP_K=2.5 is not allowed"),
        ("RAGCORE_CANDIDATES", "0", "RAGCORE_CANDIDATES=0 is not allowed: candidates must be an integer ≥ 1"),
        ("RAGCORE_THRESHOLD", "1.5", "RAGCORE_THRESHOLD=1.5 is not allowed: threshold must be a finite number from 0 to 1, or -1"),
        ("RAGCORE_THRESHOLD", "-0.5", "RAGCORE_THRESHOLD=-0.5 is not allowed"),
        ("RAGCORE_THRESHOLD", "nan", "RAGCORE_THRESHOLD=nan is not allowed"),
        ("RAGCORE_THRESHOLD", "inf", "RAGCORE_THRESHOLD=inf is not allowed"),
        ("RAGCORE_DENSE_WEIGHT", "-inf", "RAGCORE_DENSE_WEIGHT=-inf is not allowed: dense_weight must be a finite number from 0 to 1"),
        ("RAGCORE_ABSTAIN_BAR", "1.01", "RAGCORE_ABSTAIN_BAR=1.01 is not allowed: abstain_bar must be a finite number from 0 to 1"),
        ("RAGCORE_ABSTAIN_BAR", "-1", "RAGCORE_ABSTAIN_BAR=-1 is not allowed"),
        ("RAGCORE_RRF_K", "0", "RAGCORE_RRF_K=0 is not allowed: rrf_k must be an integer ≥ 1"),
        ("RAGCORE_CHUNK_SIZE", "0", "RAGCORE_CHUNK_SIZE=0 is not allowed: chunk_size must be an integer ≥ 1"),
        ("RAGCORE_CHUNK_OVERLAP", "-1", "RAGCORE_CHUNK_OVERLAP=-1 is not allowed: chunk_overlap must be an integer ≥ 0"),
        ("RAGCORE_CHUNK_OVERLAP", "180", "RAGCORE_CHUNK_OVERLAP=180 is not allowed: chunk_overlap must be less than chunk_size (180)"),
        ("RAGCORE_DEDUPE", "ture", "RAGCORE_DEDUPE=ture is not allowed: dedupe must be true or false (also 1/0, yes/no, on/off)"),
        ("RAGCORE_CALIBRATED_BAR", "2", "RAGCORE_CALIBRATED_BAR=2 is not allowed"),
        ("RAGCORE_RETRIEVAL_MODE", "semantic", "RAGCORE_RETRIEVAL_MODE=semantic is not allowed: retrieval_mode must be 'dense', 'sparse' or 'hybrid'"),
        ("RAGCORE_FUSION", "max", "fusion must be 'rrf' or 'weighted'"),
        ("RAGCORE_QDRANT_URL", "localhost:6333", "RAGCORE_QDRANT_URL=localhost:6333 is not allowed: qdrant_url must be an http:// or https:// URL"),
        ("RAGCORE_MAX_FILE_BYTES", "0", "RAGCORE_MAX_FILE_BYTES=0 is not allowed"),
        ("RAGCORE_LLM_TEMPERATURE", "2.5", "RAGCORE_LLM_TEMPERATURE=2.5 is not allowed: temperature must be a finite number from 0 to 2"),
        ("RAGCORE_LLM_TEMPERATURE", "nan", "RAGCORE_LLM_TEMPERATURE=nan is not allowed"),
        ("RAGCORE_LLM_TIMEOUT_S", "0", "RAGCORE_LLM_TIMEOUT_S=0 is not allowed: timeout_s must be a finite number > 0"),
        ("RAGCORE_LLM_DEADLINE_S", "-5", "RAGCORE_LLM_DEADLINE_S=-5 is not allowed: deadline_s must be a finite number > 0"),
        ("RAGCORE_LLM_MAX_RETRIES", "-1", "max_retries must be an integer ≥ 0"),
        ("RAGCORE_LLM_API", "completions", "RAGCORE_LLM_API=completions is not allowed: api must be 'chat' or 'responses'"),
    ],
)
def test_bad_environment_values_name_variable_value_and_range(var: str, value: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        RagcoreSettings.from_env({var: value})
    assert expected in str(info.value)


def test_renamed_and_unknown_variables_are_errors() -> None:
    with pytest.raises(ConfigError, match="RAGCORE_MODE was renamed RAGCORE_RETRIEVAL_MODE"):
        RagcoreSettings.from_env({"RAGCORE_MODE": "semantic"})
    with pytest.raises(ConfigError, match=r"RAGCORE_TOPK is not a ragcore setting \(did you mean RAGCORE_TOP_K\?\)"):
        RagcoreSettings.from_env({"RAGCORE_TOPK": "3"})
    with pytest.raises(ConfigError, match="RAGCORE_LLM_MODLE is not a ragcore setting"):
        resolve_llm_settings(env={"RAGCORE_LLM_MODLE": "m"}, secrets_files=())
    # variables other code reads, and the settings' own, pass
    ok = {v: "" for v in known_variables()} | {"RAGCORE_DEBUG": "1", "RAGCORE_APP_WARMUP": "0", "OTHER": "x"}
    assert RagcoreSettings.from_env(ok) == RagcoreSettings.from_env({})
    assert {"RAGCORE_QDRANT_API_KEY", "RAGCORE_LLM_API_KEY", "RAGCORE_DATA_DIR", "RAGCORE_QDRANT_URL"} <= known_variables()


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        RagcoreSettings.from_env({"RAGCORE_TOP_K": "-3", "RAGCORE_DEDUPE": "ture", "RAGCORE_LLM_TEMPERATURE": "9"})
    msg = str(info.value)
    assert "RAGCORE_TOP_K=-3" in msg and "RAGCORE_DEDUPE=ture" in msg and "RAGCORE_LLM_TEMPERATURE=9" in msg


def test_good_environment_values_are_parsed() -> None:
    env = {
        "RAGCORE_TOP_K": " 12 ", "RAGCORE_THRESHOLD": "-1", "RAGCORE_DEDUPE": "Off", "RAGCORE_CALIBRATED_BAR": "yes",
        "RAGCORE_RETRIEVAL_MODE": "Dense", "RAGCORE_DATA_DIR": "~/rc", "RAGCORE_BOUNDARY_RULES": "no legal advice; be brief;",
        "RAGCORE_CHUNK_SIZE": "40", "RAGCORE_CHUNK_OVERLAP": "0",
        "RAGCORE_LLM_TEMPERATURE": "0", "RAGCORE_LLM_MODEL": "m", "OPENAI_BASE_URL": "http://127.0.0.1:8080/v1",
        "RAGCORE_PATH_FILTER": "",  # empty: not set
    }
    s = RagcoreSettings.from_env(env)
    assert (s.top_k, s.threshold, s.dedupe, s.calibrated_bar, s.retrieval_mode) == (12, -1.0, False, True, "dense")
    assert s.data_dir == Path("~/rc").expanduser() and s.boundary_rules == ("no legal advice", "be brief")
    assert (s.chunk_size, s.chunk_overlap, s.path_filter) == (40, 0, None)
    assert s.llm.temperature == 0.0 and s.llm.model == "m" and s.llm.base_url == "http://127.0.0.1:8080/v1"
    for word, value in (("1", True), ("TRUE", True), ("on", True), ("0", False), ("no", False), ("False", False)):
        assert RagcoreSettings.from_env({"RAGCORE_DEDUPE": word}).dedupe is value


def test_overrides_win_and_are_validated_too() -> None:
    s = RagcoreSettings.from_env({"RAGCORE_TOP_K": "3"}, top_k=9, llm={"model": "m"})
    assert s.top_k == 9 and s.llm.model == "m"
    with pytest.raises(ConfigError, match="top_k=0 is not allowed"):
        RagcoreSettings.from_env({}, top_k=0)
    with pytest.raises(ConfigError, match="unknown setting"):
        RagcoreSettings.from_env({}, topk=3)
    with pytest.raises(ConfigError, match="temperature=5 is not allowed"):
        RagcoreSettings.from_env({}, llm={"temperature": 5})


# --------------------------------------------------------------------------- code


@pytest.mark.parametrize(
    "kwargs",
    [
        {"top_k": 0}, {"top_k": -3}, {"top_k": True}, {"top_k": "many"}, {"top_k": 1001}, {"top_k": 1e300},
        {"candidates": 0},
        {"threshold": 2.0}, {"threshold": -0.5}, {"threshold": math.nan}, {"threshold": -math.inf},
        {"dense_weight": 1.5}, {"abstain_bar": -1.0}, {"abstain_bar": math.nan}, {"rrf_k": 0},
        {"chunk_size": 10, "chunk_overlap": 10}, {"chunk_overlap": -1}, {"dedupe": "ture"}, {"dedupe": 2},
        {"retrieval_mode": "semantic"}, {"fusion": "max"}, {"collection": ""}, {"qdrant_url": "ftp://x"},
        {"boundary_rules": ("ok", "")}, {"boundary_rules": 3}, {"data_dir": ""},
    ],
)
def test_bad_values_in_code_are_rejected(kwargs: dict) -> None:
    with pytest.raises(ConfigError) as info:
        RagcoreSettings(**kwargs)
    assert "is not allowed" in str(info.value) and next(iter(kwargs)) in str(info.value)
    with pytest.raises(ConfigError):
        RagcoreSettings().with_(**kwargs)
    with pytest.raises(ConfigError):
        dataclasses.replace(RagcoreSettings(), **kwargs)


@pytest.mark.parametrize(
    "kwargs",
    [{"temperature": 2.01}, {"temperature": -0.1}, {"temperature": math.inf}, {"timeout_s": 0}, {"deadline_s": -1.0},
     {"deadline_s": math.nan}, {"max_output_tokens": 0}, {"context_window": 0}, {"max_retries": -1}, {"api": "completions"},
     {"unsupported_policy": "ignore"}, {"base_url": "localhost:8080"}],
)
def test_bad_llm_values_in_code_are_rejected(kwargs: dict) -> None:
    with pytest.raises(ConfigError, match=f"{next(iter(kwargs))}=.* is not allowed"):
        LlmSettings(**kwargs)
    with pytest.raises(ConfigError):
        dataclasses.replace(LlmSettings(), **kwargs)


def test_good_values_in_code_are_normalised() -> None:
    s = RagcoreSettings(data_dir="/tmp/x", threshold=-1, top_k=5.0, boundary_rules=["a"], llm=LlmSettings(temperature=2, timeout_s=1))
    assert s.data_dir == Path("/tmp/x") and s.threshold == -1.0 and isinstance(s.threshold, float)
    assert s.top_k == 5 and isinstance(s.top_k, int) and s.boundary_rules == ("a",)
    assert s.llm.temperature == 2.0 and s.llm.timeout_s == 1.0
    assert RagcoreSettings(threshold=0, dense_weight=1, abstain_bar=1).abstain_bar == 1.0
    assert RagcoreSettings(chunk_size=1, chunk_overlap=0).chunk_size == 1
    assert RagcoreSettings().with_(top_k=3).top_k == 3
    # a string is read as the environment writes it (never iterated character by character)
    assert RagcoreSettings(boundary_rules="one rule; two").boundary_rules == ("one rule", "two")
    assert RagcoreSettings(top_k="7", dedupe="no").top_k == 7


def test_settings_are_frozen_and_hashable() -> None:
    a = RagcoreSettings(boundary_rules=("x",), llm=LlmSettings(model="m", api_key="k"))
    b = RagcoreSettings(boundary_rules=["x"], llm=LlmSettings(model="m", api_key="k"))
    assert a == b and hash(a) == hash(b) and hash(a.llm) == hash(b.llm)
    assert len({a.llm: 1, b.llm: 2}) == 1  # the Engine caches generators keyed by settings.llm
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.top_k = 3  # type: ignore[misc]


# --------------------------------------------------------------------------- secrets


def test_public_dict_and_repr_hide_secrets() -> None:
    s = RagcoreSettings(
        qdrant_url="https://qd-user:QDSECRET@qdrant.example:6333", qdrant_api_key="QDKEY",
        llm=LlmSettings(base_url="http://user:SECRET@host/v1", api_key="sk-APIKEY123", model="m"),
    )
    d = s.public_dict()
    text = json.dumps(d, allow_nan=False)
    for secret in ("SECRET", "QDSECRET", "QDKEY", "APIKEY123", "qd-user"):
        assert secret not in text and secret not in repr(s) and secret not in str(s)
    assert d["qdrant_api_key"] == "set" and d["llm"]["api_key"] == "set"
    assert d["llm"]["base_url"] == "http://host/v1" and d["qdrant_url"] == "https://qdrant.example:6333"
    assert "http://host/v1" in repr(s.llm)
    assert RagcoreSettings().public_dict()["llm"]["api_key"] is None
    assert json.loads(text)["data_dir"] == str(s.data_dir)


def test_errors_never_show_a_secret() -> None:
    with pytest.raises(ConfigError) as info:
        RagcoreSettings.from_env({"OPENAI_BASE_URL": "ftp://user:SECRET@host/v1"})
    assert "SECRET" not in str(info.value) and "OPENAI_BASE_URL=ftp://host/v1 is not allowed" in str(info.value)
    with pytest.raises(ConfigError) as info:
        LlmSettings(api_key=12345)  # type: ignore[arg-type]
    assert "12345" not in str(info.value) and "api_key=(hidden)" in str(info.value)


def test_secrets_toml_goes_through_the_same_rules(tmp_path: Path) -> None:
    f = tmp_path / "secrets.toml"
    f.write_text('[llm]\ntemperature = 5\n')
    with pytest.raises(ConfigError, match=rf"llm.temperature=5 in {f} is not allowed: temperature must be a finite number from 0 to 2"):
        resolve_llm_settings(env={}, secrets_files=[f])
    f.write_text('RAGCORE_LLM_TIMEOUT_S = "nan"\n[openai]\nmodel = "m"\n')
    with pytest.raises(ConfigError, match="RAGCORE_LLM_TIMEOUT_S=nan in .* timeout_s must be a finite number > 0"):
        resolve_llm_settings(env={}, secrets_files=[f])
    f.write_text('[llm]\nmax_retries = 3.0\napi = "Responses"\n')
    s, sources = resolve_llm_settings_with_sources(env={}, secrets_files=[f])
    assert s.max_retries == 3 and s.api == "responses" and sources["api"] == "secrets (llm.api)"
    with pytest.raises(ConfigError, match="deadline_s=0 is not allowed"):
        resolve_llm_settings({"deadline_s": 0}, env={}, secrets_files=())


def test_top_k_has_a_ceiling_and_a_huge_value_is_named_briefly() -> None:
    assert RagcoreSettings(top_k=1000).top_k == 1000
    with pytest.raises(ConfigError) as info:
        RagcoreSettings().with_(top_k=10**40)
    assert str(info.value) == "top_k=100000000000… (41 digits) is not allowed: top_k must be an integer from 1 to 1000"
    with pytest.raises(ConfigError, match="RAGCORE_TOP_K=1001 is not allowed: top_k must be an integer from 1 to 1000"):
        RagcoreSettings.from_env({"RAGCORE_TOP_K": "1001"})
