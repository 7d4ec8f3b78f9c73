"""The `mcp` SDK is an extra: without it ragcore works as before (no /mcp on `ragcore serve`,
`ragcore mcp` says which extra it needs), and ragcore.agents never needs it. Run in a fresh
interpreter where importing `mcp` fails, as it does when the extra is not installed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = """
import sys
sys.modules["mcp"] = None  # `import mcp` raises ImportError, as without the extra
import ragcore.agents, ragcore.cli.main
from ragcore.cli.main import build_parser, main
build_parser()
from ragcore.service.mcp.http import mount_mcp
class App:
    class router:
        routes = []
assert mount_mcp(App, None).__name__ == "_nothing" and App.router.routes == []
print("exit", main(["mcp"]))
"""


def test_ragcore_without_the_mcp_extra() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert "exit 2" in done.stdout and "pip install 'ragcore[mcp]'" in done.stderr


def test_importing_ragcore_agents_loads_no_mcp_sdk() -> None:
    code = "import sys, ragcore.agents, ragcore.cli.main; print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert done.stdout.strip() == "[]", done.stderr[-2000:]
