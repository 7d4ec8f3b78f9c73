"""`ragcore serve` is registered without weighing on the other commands."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO


def test_serve_is_listed_and_ask_does_not_import_fastapi() -> None:
    code = ("import sys; from ragcore.cli.main import build_parser; p = build_parser(full=False); "
            "help = p.format_help(); p.parse_args(['ask', 'q']); "
            "print('serve' in help, any(m.split('.')[0] in ('fastapi', 'uvicorn', 'starlette') for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.stdout.split() == ["True", "False"], out.stderr
