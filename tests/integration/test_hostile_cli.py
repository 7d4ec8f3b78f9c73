"""Hostile command-line input (issue 26, cases 4 and 6): what --selection-file may read, what
a collection may be called, and settings errors reported all at once. Through the CLI's own
entry point (``ragcore.cli.main.main``), in this process."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from ragcore.cli.common import UsageError
from ragcore.cli.main import main

KEY_LINE = "OPENAI_API_KEY=sk-proj-Zq81LmN0pQ7rStUvWx42yZaB"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# --------------------------------------------------------------------------- --selection-file


@pytest.mark.parametrize("path", ["/dev/zero", "/dev/urandom", "/proc/self/environ", "/proc/self/status"])
def test_devices_and_proc_are_refused(capsys, path: str) -> None:
    if not os.path.exists(path):
        pytest.skip(f"{path} does not exist here")
    code, out, err = run(capsys, "ask", "What is set?", "--selection-file", path, "--json")
    assert code == 2 and "system file" in err and out == ""
    assert "OPENAI" not in err and "PATH=" not in err


def test_a_fifo_is_refused_without_hanging(capsys, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result: list[tuple[int, str, str]] = []
    t = threading.Thread(target=lambda: result.append(run(capsys, "ask", "q?", "--selection-file", str(fifo))), daemon=True)
    t.start()
    t.join(20)
    if t.is_alive():  # unblock the reader so the test process can end, then fail
        with open(fifo, "w"):
            pass
        pytest.fail("--selection-file on a FIFO hung")
    code, _, err = result[0]
    assert code == 2 and "not a regular file" in err


def test_a_symlink_into_proc_is_refused(capsys, tmp_path: Path) -> None:
    link = tmp_path / "innocent.txt"
    link.symlink_to("/proc/self/environ")
    code, _, err = run(capsys, "ask", "q?", "--selection-file", str(link))
    assert code == 2 and "system file" in err


def test_a_file_over_the_limit_is_refused(capsys, tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    big.write_text(("A sentence about sessions and cookies. " * 30 + "\n") * 1000)  # ~1.2 MB
    code, _, err = run(capsys, "ask", "q?", "--selection-file", f"{big}:1-2")
    assert code == 2 and "larger than 1024 KB" in err


def test_a_folder_is_refused(capsys, tmp_path: Path) -> None:
    code, _, err = run(capsys, "ask", "q?", "--selection-file", str(tmp_path))
    assert code == 2 and "is a folder" in err


def test_secret_lines_never_reach_the_output(capsys, tmp_path: Path) -> None:
    sel = tmp_path / "notes.txt"
    sel.write_text(
        "Sessions are stored in the database by default and expire after two weeks.\n"
        f"{KEY_LINE}\n"
        "root:$6$saltsalt$8Jp0t1hLzW0pKf3YxQn2d1:19000:0:99999:7:::\n"
        "Sessions are signed with the project's secret key, so users cannot forge them.\n"
    )
    code, out, err = run(capsys, "ask", "Where are sessions stored?", "--selection-file", str(sel),
                         "--context", "selection", "--json")
    assert code == 0, err
    answer = json.loads(out)
    assert "sk-proj" not in out and "Zq81" not in out and "$6$" not in out and "saltsalt" not in out
    assert "lines 2, 3 looked like a secret" in err and "sk-proj" not in err
    assert "database" in answer["answer"]  # the ordinary lines are still answered from


# --------------------------------------------------------------------------- collection names


@pytest.mark.parametrize("command", [["ingest", "."], ["ask", "q?"], ["collections"]])
def test_a_very_long_collection_name_is_a_usage_error(capsys, command: list[str], monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    name = "a" * 300
    argv = [command[0], "-c", name, *command[1:]] if command[0] != "collections" else ["collections"]
    if command[0] == "collections":
        monkeypatch.setenv("RAGCORE_COLLECTION", name)
    code, _, err = run(capsys, *argv)
    assert code == 2 and "300 characters" in err and "is not allowed" in err and "Errno" not in err


@pytest.mark.parametrize("name", ["../evil", "a/b", "..", "ragcore__meta"])
def test_a_path_as_a_collection_name_exits_2(capsys, name: str, tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\nText.\n")
    code, _, err = run(capsys, "ingest", str(tmp_path), "-c", name)
    assert code == 2 and "is not allowed" in err and "letters, digits, - and _" in err


# --------------------------------------------------------------------------- settings errors


def test_settings_errors_of_every_group_come_in_one_message(capsys, monkeypatch) -> None:
    monkeypatch.setenv("RAGCORE_TOP_K", "0")
    monkeypatch.setenv("RAGCORE_LLM_TEMPERATURE", "5")
    monkeypatch.setenv("RAGCORE_LLM_MAX_OUTPUT_TOKENS", "0")
    code, _, err = run(capsys, "ask", "q?", "--threshold", "7")
    assert code == 2 and err.count("\n") == 1
    for part in ("--threshold=7", "RAGCORE_TOP_K=0", "RAGCORE_LLM_TEMPERATURE=5", "RAGCORE_LLM_MAX_OUTPUT_TOKENS=0"):
        assert part in err, err


def test_unknown_names_and_bad_values_together(capsys, monkeypatch) -> None:
    monkeypatch.setenv("RAGCORE_TOPK", "3")
    monkeypatch.setenv("RAGCORE_LLM_TEMPERATURE", "5")
    code, _, err = run(capsys, "ask", "q?")
    assert code == 2 and "RAGCORE_TOPK is not a ragcore setting" in err and "RAGCORE_LLM_TEMPERATURE=5" in err
    assert err.count("RAGCORE_TOPK") == 1


def test_the_python_api_refuses_a_long_name_with_a_message(make_engine, tmp_path: Path) -> None:
    from ragcore.storage.schema import StoreError

    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.md").write_text("# A\n\nText about sessions.\n")
    engine = make_engine()
    with pytest.raises(StoreError, match=r"\(300 characters\) is not allowed"):
        engine.ingest([tmp_path / "c"], "a" * 300, calibrate=False)
    assert engine.collections() == []


# --------------------------------------------------------------------------- --selection-file of a page (issue 42, item 3)

PAGE = """<!DOCTYPE html>
<html><head><title>Config</title><style>p { color: red }</style></head>
<body>
<nav><a href="/">Home</a></nav>
<h1>Configuration</h1>
<p>The <code>MAX_CONTENT_LENGTH</code> setting limits the request body.
If not set, the body is read in full.</p>
<p>Default: <b>None</b></p>
</body></html>
"""


def test_a_selection_of_html_lines_is_the_text_the_viewer_shows(tmp_path: Path) -> None:
    """``page.html:6-8`` is handed to the engine as the page's text with the source line numbers, not as
    markup: the same mapping as the app's viewer (ragcore.engine.selection.document_selection)."""
    from ragcore.cli.selection_file import read_selection_file
    from ragcore.ingest.read.loaders import load_bytes
    from ragcore.engine.selection import document_selection

    page = tmp_path / "config.html"
    page.write_text(PAGE, encoding="utf-8")
    passage = read_selection_file(f"{page}:6-8")
    assert "<" not in passage.text and "MAX_CONTENT_LENGTH setting limits the request body" in passage.text
    assert "Default: None" in passage.text
    assert set(passage.line_numbers) <= {6, 7, 8} and passage.start_line == 6
    doc = load_bytes(PAGE.encode(), "config.html")  # what the viewer's rows are made of
    assert (passage.text, passage.line_numbers) == document_selection(
        [(ln.no, ln.page, ln.text) for ln in doc.lines], 6, 8)


def test_markup_only_lines_are_refused_with_a_reason(tmp_path: Path) -> None:
    from ragcore.cli.selection_file import read_selection_file

    page = tmp_path / "config.html"
    page.write_text(PAGE, encoding="utf-8")
    with pytest.raises(UsageError, match="hold no text"):
        read_selection_file(f"{page}:2-2")


def test_a_pdf_selection_names_its_page(tmp_path: Path) -> None:
    from reportlab.pdfgen import canvas

    from ragcore.cli.selection_file import read_selection_file

    pdf = tmp_path / "a.pdf"
    c = canvas.Canvas(str(pdf))
    for page_text in ("The first page says hello.", "The second page sets the timeout to 30 seconds."):
        c.drawString(72, 720, page_text)
        c.showPage()
    c.save()
    with pytest.raises(UsageError, match="--selection-page"):
        read_selection_file(f"{pdf}:1-1")
    passage = read_selection_file(f"{pdf}:1-1", page=2)
    assert "timeout to 30 seconds" in passage.text and passage.page == 2
