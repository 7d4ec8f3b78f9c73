"""The cold path's import budget: what a new `ragcore ask` process and `from ragcore import Engine`
may load. A structural budget, not a stopwatch: a module that is not imported costs nothing on any
machine, loaded or quiet, and a heavy library that sneaks into the question path fails here at once.
(How long a cold question takes is `ragcore bench cold`'s job; bench/README.md has the figure.)

It also holds the extras of pyproject.toml: `pip install ragcore` has no Streamlit, Altair, pandas,
FastAPI or uvicorn, so the engine, the CLI and the Python API must never need them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, write_corpus

# the app's and the service's extras: never needed to ask a question or to use the engine from Python
EXTRAS = ("streamlit", "altair", "vl_convert", "pandas", "fastapi", "starlette", "uvicorn", "websockets", "orjson")
# heavy, and not needed to answer from a collection's query snapshot with the extractive composer:
# LlamaIndex (~2 s), Qdrant's client (~2 s) and engine, scipy (~0.3 s), the LLM and PDF stacks
QUESTION_PATH_NEVER = (*EXTRAS, "llama_index", "qdrant_client", "qdrant_edge", "scipy", "openai", "httpx", "tiktoken",
                       "pypdfium2", "pytesseract", "PIL", "bs4", "pypdf", "tqdm", "bench", "tests")

_RECORD = """
import json, sys
from ragcore.cli.main import main
code = main(sys.argv[1:])
print("MODULES" + json.dumps({"code": code, "modules": sorted({m.split('.')[0] for m in sys.modules})}))
"""


def _top_level_modules(args: list[str], env: dict[str, str]) -> tuple[int, set[str]]:
    out = subprocess.run([sys.executable, "-c", _RECORD, *args], env=env, cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    line = next((ln for ln in out.stdout.splitlines() if ln.startswith("MODULES")), None)
    assert line is not None, out.stdout[-1000:] + out.stderr[-2000:]
    got = json.loads(line.removeprefix("MODULES"))
    return got["code"], set(got["modules"])


@pytest.mark.slow
def test_a_cold_question_imports_nothing_it_does_not_use(tmp_path: Path, make_engine) -> None:
    data = tmp_path / "data"
    corpus = write_corpus(tmp_path / "c", {"garden/roses.md": "# Roses\n\nPrune roses in late winter, before new growth.\n"})
    make_engine(data_dir=data).ingest([corpus], "g", calibrate=False)
    env = {**os.environ, "RAGCORE_DATA_DIR": str(data)}
    code, modules = _top_level_modules(["ask", "When should I prune roses?", "-c", "g", "--json"], env)
    assert code == 0
    assert sorted(modules.intersection(QUESTION_PATH_NEVER)) == []


def test_the_python_api_and_the_cli_need_neither_the_app_nor_the_service() -> None:
    """`from ragcore import Engine` and the command line's parser, as `pip install ragcore` leaves them."""
    code = ("import sys; from ragcore import Engine, RagcoreSettings; from ragcore.cli.main import build_parser; "
            "build_parser(full=True); print(sorted({m.split('.')[0] for m in sys.modules}))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300, check=True)
    modules = set(eval(out.stdout.strip().splitlines()[-1]))  # noqa: S307 - our own subprocess prints a list literal
    assert sorted(modules.intersection(EXTRAS)) == []


def test_serve_without_its_extra_says_which_extra_to_install(tmp_path: Path) -> None:
    """Without FastAPI and uvicorn (hidden here as an install without the extra would lack them),
    `ragcore serve` names the extra instead of failing with an import error."""
    code = ("import importlib.util, sys; real = importlib.util.find_spec; "
            "importlib.util.find_spec = lambda n, *a: None if n in ('fastapi', 'uvicorn') else real(n, *a); "
            "from ragcore.cli.main import main; sys.exit(main(['serve']))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "RAGCORE_DATA_DIR": str(tmp_path / "data")})
    assert out.returncode == 2
    assert 'pip install "ragcore[serve]"' in out.stderr and "Traceback" not in out.stderr
