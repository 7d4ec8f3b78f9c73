"""The CLI refuses bad input with one clear line (exit 2, no traceback), and never prints raw
control characters that came from the corpus."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcore.cli.main import main
from ragcore.cli.common import attach_negative_values, dump_json, term_safe
from tests.conftest import DOCS, write_corpus


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "data"
    monkeypatch.setenv("RAGCORE_DATA_DIR", str(d))
    return d


def _fails(argv: list[str], capsys: pytest.CaptureFixture[str], *expected: str) -> str:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert "Traceback" not in err and not out
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    for text in expected:
        assert text in err, err
    return err


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--top-k", "0"], "--top-k=0 is not allowed: top_k must be an integer from 1 to 1000"),
        (["--top-k", "-1"], "--top-k=-1 is not allowed: top_k must be an integer from 1 to 1000"),
        (["--top-k", "abc"], "--top-k=abc is not allowed"),
        (["--threshold", "2"], "--threshold=2 is not allowed: threshold must be a finite number from 0 to 1, or -1"),
        (["--threshold", "nan"], "--threshold=nan is not allowed"),
        (["--threshold", "-inf"], "--threshold=-inf is not allowed"),
        (["--threshold=-inf"], "--threshold=-inf is not allowed"),
        (["--rrf-k", "0"], "--rrf-k=0 is not allowed: rrf_k must be an integer ≥ 1"),
    ],
)
def test_ask_rejects_bad_options(args: list[str], expected: str, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _fails(["ask", "What is top-K?", "-c", "x", *args], capsys, expected)


def test_bad_environment_variable(data_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGCORE_TOP_K", "abc")
    _fails(["ask", "q?", "-c", "x"], capsys, "RAGCORE_TOP_K=abc is not allowed: top_k must be an integer from 1 to 1000")
    monkeypatch.delenv("RAGCORE_TOP_K")
    monkeypatch.setenv("RAGCORE_MODE", "semantic")
    _fails(["collections"], capsys, "RAGCORE_MODE was renamed RAGCORE_RETRIEVAL_MODE")
    monkeypatch.delenv("RAGCORE_MODE")
    monkeypatch.setenv("RAGCORE_CHUNK_SIZE", "20")
    _fails(["ingest", str(data_dir), "--chunk-overlap", "25"], capsys,
           "--chunk-overlap=25 is not allowed: chunk_overlap must be less than chunk_size (RAGCORE_CHUNK_SIZE=20)")


def test_bad_selection_file(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "passage.txt"
    f.write_text("one\ntwo\nthree\nfour\n", encoding="utf-8")
    allowed = "the line range must be LINE or START-END, whole numbers from 1 to 4"
    for rng in ("abc", "9-3", "3-9", "5", "0-2", "2-"):
        _fails(["ask", "q?", "-c", "x", "--selection-file", f"{f}:{rng}"], capsys,
               f"--selection-file={f}:{rng} is not allowed: {allowed}")
    _fails(["ask", "q?", "-c", "x", "--selection-file", f"{tmp_path / 'missing.txt'}:1-2"], capsys, "no such file")
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("caf\u00e9 au lait\n".encode("latin-1"))
    _fails(["ask", "q?", "-c", "x", "--selection-file", str(latin)], capsys,
           f"--selection-file={latin}: the file is not UTF-8 text (byte 0xe9 at offset 3)")


def test_usage_errors_return_2(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask"]) == 2  # argparse's own message (missing question)
    assert "required" in capsys.readouterr().err
    assert main(["ask", "q?", "--mode", "semantic"]) == 2
    assert "invalid choice: 'semantic'" in capsys.readouterr().err


def test_negative_values_reach_validation() -> None:
    assert attach_negative_values(["ask", "q", "--threshold", "-inf", "--top-k", "-1", "-c", "x"]) == [
        "ask", "q", "--threshold=-inf", "--top-k=-1", "-c", "x"]
    assert attach_negative_values(["ask", "q", "--threshold", "--json"]) == ["ask", "q", "--threshold", "--json"]


def test_term_safe_and_dump_json() -> None:
    assert term_safe("evil\x1b[31mred\x07.md") == "evil\\x1b[31mred\\x07.md"
    assert term_safe("a\nb\tc\r") == "a\\x0ab\\x09c\\x0d"
    assert term_safe("a\nb\x9b", keep="\n") == "a\nb\\x9b"
    assert term_safe("abc\u202edef") == "abc\\u202edef"
    assert term_safe("Grüße, 東京 — ok") == "Grüße, 東京 — ok"
    text = dump_json({"path": "x\x1b\x9b\u202e.md", "s": "Grüße"})
    assert "\x1b" not in text and "\x9b" not in text and "\u202e" not in text and "Grüße" in text
    assert json.loads(text) == {"path": "x\x1b\x9b\u202e.md", "s": "Grüße"}
    with pytest.raises(ValueError):
        dump_json({"score": float("nan")})


@pytest.mark.slow  # ingests and asks through the CLI (~15 s: each command loads the model)
def test_corpus_derived_text_is_escaped(tmp_path: Path, data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """File names and text with ESC sequences cannot recolour or retitle the terminal: not in
    the ingest report, the answer, its sources list, nor in --json output."""
    doc = (DOCS / "05-scores-top-k-and-threshold.md").read_text()
    # a section heading and a sentence the answer quotes, each carrying an escape sequence
    doc = doc.replace("## What the threshold applies to", "## What the \x1b[31mthreshold applies to")
    doc = doc.replace("The threshold applies to the cosine", "The threshold applies to the \x1b]0;pwned\x07cosine")
    corpus = write_corpus(tmp_path / "c", {"05-scores.md": doc, "bad\x1b]0;pwned\x07.md": b"\x00\x01binary\x00"})
    assert main(["ingest", str(corpus), "--collection", "esc"]) == 1  # the binary file failed
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "skipped bad\\x1b]0;pwned\\x07.md: " in out

    assert main(["ask", "What does the threshold apply to?", "-c", "esc"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "What the \\x1b[31mthreshold applies to" in out  # the sources list
    assert "applies to the \\x1b]0;pwned\\x07cosine" in out  # the answer text

    assert main(["ask", "What does the threshold apply to?", "-c", "esc", "--json"]) == 0
    raw = capsys.readouterr().out
    assert "\x1b" not in raw
    answer = json.loads(raw, parse_constant=lambda c: pytest.fail(f"{c} in --json output"))
    assert any("\x1b[31m" in " ".join(c["section"]) for c in answer["citations"])

    assert main(["ingest", str(corpus), "--collection", "esc", "--json"]) == 1  # the binary file failed
    raw = capsys.readouterr().out
    assert "\x1b" not in raw and "\x07" not in raw and json.loads(raw)["collection"] == "esc"
