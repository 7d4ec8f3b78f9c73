"""The CLI as a user runs it: ingest, ask (readable and --json), collections, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcore.cli.main import main
from tests.conftest import DOCS, write_corpus


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "data"
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(d))
    return d


def test_ingest_ask_collections(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = write_corpus(tmp_path / "c", {"05-scores.md": (DOCS / "05-scores-top-k-and-threshold.md").read_text(),
                                           "bad.md": b"\x00\x01binary\x00"})
    assert main(["ingest", str(corpus), "--collection", "cli", "--no-calibrate"]) == 1  # bad.md failed
    out = capsys.readouterr().out
    assert "1 added" in out and "1 failed" in out and "skipped bad.md: binary content" in out
    assert "abstain bar 0.50 — settings" in out

    assert main(["ask", "What does the threshold apply to?", "--collection", "cli"]) == 0
    out = capsys.readouterr().out
    assert "cosine similarity" in out and "Sources:" in out and "05-scores.md:" in out
    assert "answered: support 0." in out and "≥ abstain bar 0.50" in out and "; bar settings" in out

    assert main(["ask", "Who won the 1998 World Cup?", "--collection", "cli"]) == 0
    out = capsys.readouterr().out
    assert "The corpus does not contain enough evidence" in out and "status abstained" in out
    assert "guardrail: abstained: support 0." in out and "< abstain bar 0.50" in out and "closest section “" in out

    assert main(["ask", "What does the threshold apply to?", "-c", "cli", "--json", "--top-k", "2", "--mode", "dense"]) == 0
    answer = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"{c} in --json output"))
    assert answer["status"] == "ok"
    assert answer["metadata"]["config"]["top_k"] == 2 and answer["metadata"]["config"]["retrieval_mode"] == "dense"
    assert answer["metadata"]["corpus_version"] and answer["metadata"]["built_at"]
    assert sum(c["kept"] for c in answer["candidates"]) <= 2
    lines = (corpus / "05-scores.md").read_text().splitlines()
    for c in answer["citations"]:
        cited = " ".join(lines[c["start_line"] - 1 : c["end_line"]])
        assert c["path"] == "05-scores.md" and cited.strip()

    assert main(["collections"]) == 0
    out = capsys.readouterr().out
    assert "cli" in out and "abstain bar 0.50 — settings" in out
    # a re-ingest without --no-calibrate sets the bar from the corpus itself, and says so
    assert main(["ingest", str(corpus), "--collection", "cli"]) == 1  # bad.md still fails
    assert "calibrated without labels on this corpus" in capsys.readouterr().out
    assert main(["collections", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed[0]["abstain_bar"]["source"] == "auto" and 0 < listed[0]["abstain_bar"]["value"] < 1


def test_clear_errors(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ingest", str(tmp_path / "nope"), "-c", "x"]) == 2
    assert "No such file or folder" in capsys.readouterr().err
    assert main(["ask", "anything?", "-c", "missing"]) == 1
    assert "Ingest documents first" in capsys.readouterr().out
    assert main(["ask", "  ", "-c", "missing"]) == 1
    assert "empty" in capsys.readouterr().out


def test_a_closed_pipe_ends_the_command_quietly(tmp_path: Path) -> None:
    """`ragcore … | head`: when the reader has gone, the command stops with 141 (128 + SIGPIPE)
    and no "error: BrokenPipeError" on the terminal. The read end is closed before the command
    writes, so every write meets the closed pipe."""
    import os
    import subprocess
    import sys

    from tests.conftest import REPO

    p = subprocess.Popen([sys.executable, "-m", "ragcore.cli.main", "ask", "What?", "-c", "nope"], cwd=REPO,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "RAGCORE_DATA_DIR": str(tmp_path / "data")})
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=300) == 141, err[-1000:]
    assert "BrokenPipe" not in err and "Traceback" not in err, err[-1000:]
