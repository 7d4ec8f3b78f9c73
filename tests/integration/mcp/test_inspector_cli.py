"""The MCP Inspector's command-line mode (``npx @modelcontextprotocol/inspector --cli``, from npm)
against ``ragcore mcp`` over stdio: another implementation of the protocol's client than the Python
SDK's. Skipped where node's npx is not installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp")
pytestmark = [pytest.mark.slow, pytest.mark.skipif(shutil.which("npx") is None, reason="needs node's npx")]

REPO = Path(__file__).resolve().parents[3]


def _inspector(data: Path, *method: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGCORE_")}
    env.update(PYTHONPATH=str(REPO), RAGCORE_CALIBRATED_BAR="false")
    cmd = ["npx", "-y", "@modelcontextprotocol/inspector", "--cli", sys.executable, "-m", "ragcore.cli.main",
           "--data-dir", str(data), "mcp", *method]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_inspector_lists_and_calls_the_tools(guide_data: Path) -> None:
    listed = _inspector(guide_data, "--method", "tools/list")
    tools = {t["name"]: t for t in listed["tools"]}
    assert set(tools) == {"list_collections", "search", "ask", "read"}
    assert all(t["annotations"]["readOnlyHint"] for t in tools.values())
    assert tools["read"]["inputSchema"]["required"] == ["collection", "path", "start", "end"]
    found = _inspector(guide_data, "--method", "tools/call", "--tool-name", "search", "--tool-arg", "collection=guide",
                       "--tool-arg", "question=What is reciprocal rank fusion?")
    out = json.loads(found["content"][0]["text"])
    assert out["evidence"][0]["id"].startswith("ev-") and not found.get("isError")
    refused = _inspector(guide_data, "--method", "tools/call", "--tool-name", "read", "--tool-arg", "collection=guide",
                         "--tool-arg", "path=../../etc/passwd", "--tool-arg", "start=1", "--tool-arg", "end=2")
    assert refused["isError"] and "outside the collection" in refused["content"][0]["text"]
