"""`ragcore serve`'s settings cases of issue 39 (item 8), named clearly: a data folder that is a
file and a CORS origin that is not an origin stop `serve` before it starts (exit 2, one line naming
the variable or option, no traceback); the host-name setting is checked the same way."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragcore.settings.config import ConfigError
from ragcore.settings.service import ServiceSettings
from tests.conftest import REPO


def _serve(tmp_path: Path, *options: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``ragcore [options] serve --port 1`` (the options are the global ones, such as --data-dir)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("RAGCORE_")}
    base.setdefault("RAGCORE_DATA_DIR", str(tmp_path / "data"))
    return subprocess.run([sys.executable, "-m", "ragcore.cli.main", *options, "serve", "--port", "1"], cwd=REPO,
                          env={**base, **env, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=120)


def test_a_data_folder_that_is_a_file_stops_serve_by_name(tmp_path: Path) -> None:
    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    out = _serve(tmp_path, RAGCORE_DATA_DIR=str(a_file))
    assert out.returncode == 2 and "RAGCORE_DATA_DIR=" in out.stderr and "is not a folder" in out.stderr
    assert "Traceback" not in out.stderr and "NotADirectoryError" not in out.stderr
    out = _serve(tmp_path, "--data-dir", str(a_file))
    assert out.returncode == 2 and "--data-dir=" in out.stderr and "Traceback" not in out.stderr


def test_a_cors_origin_that_is_not_an_origin_stops_serve(tmp_path: Path) -> None:
    out = _serve(tmp_path, RAGCORE_SERVE_CORS_ORIGINS="not an origin")
    assert out.returncode == 2 and "RAGCORE_SERVE_CORS_ORIGINS='not an origin' is not an origin" in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize("origin", ["not an origin", "https://a.example/path", "a.example", "ftp://a.example",
                                    "https://user@a.example", "https://a.example:99999", "https://"])
def test_cors_origins_are_origins(origin: str) -> None:
    with pytest.raises(ConfigError, match="RAGCORE_SERVE_CORS_ORIGINS"):
        ServiceSettings.from_env({"RAGCORE_SERVE_CORS_ORIGINS": origin})


def test_good_origins_and_host_names_pass() -> None:
    s = ServiceSettings.from_env({"RAGCORE_SERVE_CORS_ORIGINS": "https://notebook.example; http://127.0.0.1:8501",
                                  "RAGCORE_SERVE_ALLOWED_HOSTS": "rag.example.org; 10.0.0.5; [::1]"})
    assert s.cors_origins == ("https://notebook.example", "http://127.0.0.1:8501")
    assert s.allowed_hosts == ("rag.example.org", "10.0.0.5", "[::1]")
    with pytest.raises(ConfigError, match="RAGCORE_SERVE_ALLOWED_HOSTS"):
        ServiceSettings.from_env({"RAGCORE_SERVE_ALLOWED_HOSTS": "http://rag.example.org/"})
