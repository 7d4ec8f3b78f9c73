"""Every example of docs/18-using-the-http-api.md, run against a real server: ```python blocks with
this interpreter, ```bash blocks with bash (they use curl; skipped without it), ```javascript
blocks with Node.js (skipped when `node` is not installed). ```sh and ```text blocks are not
run (starting the server, sample output). The docs' http://127.0.0.1:8000 becomes the test
server's address; the key comes from RC_API_KEY as the docs say."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.integration.service.conftest import KEY

PAGE = REPO / "docs" / "18-using-the-http-api.md"
RUNNERS = {"python": "python", "bash": "bash", "javascript": "node"}
BLOCKS = [(lang, code) for lang, code in re.findall(r"```(\w+)\n(.*?)```", PAGE.read_text(), re.S) if lang in RUNNERS]


def test_the_page_has_examples_of_each_kind() -> None:
    kinds = [lang for lang, _ in BLOCKS]
    assert kinds.count("python") >= 5 and kinds.count("bash") >= 5 and kinds.count("javascript") >= 3


@pytest.fixture(scope="module")
def served(start_server, guide_data, tmp_path_factory):
    data = tmp_path_factory.mktemp("docs") / "data"
    shutil.copytree(guide_data, data)  # the ingest examples write into it
    return start_server(data, api_keys=(KEY,))


@pytest.mark.parametrize("lang,code", BLOCKS, ids=[f"{i}-{lang}" for i, (lang, _) in enumerate(BLOCKS)])
def test_example_runs(lang: str, code: str, served, tmp_path: Path) -> None:
    tool = {"python": sys.executable, "bash": shutil.which("curl") and shutil.which("bash"), "javascript": shutil.which("node")}[lang]
    if not tool:
        pytest.skip(f"{RUNNERS[lang]} is not installed: the {lang} example is not run")
    code = code.replace("http://127.0.0.1:8000", served.url).replace("ws://127.0.0.1:8000", served.url.replace("http", "ws"))
    script = tmp_path / {"python": "example.py", "bash": "example.sh", "javascript": "example.mjs"}[lang]
    script.write_text(code if lang != "bash" else "set -euo pipefail\n" + code)
    env = {**os.environ, "RC_API_KEY": KEY, "PYTHONPATH": str(REPO)}
    out = subprocess.run([tool, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip()
    assert '{"error":' not in out.stdout and "Traceback" not in out.stderr
