"""The PDF reader (ragcore/ingest/read/pdf*.py): clean text, furniture out, hyphens, labels.

PDFs are made here with reportlab (and pypdf for /PageLabels); PDFium reads them for real.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragcore.ingest.chunking import chunk_document
from ragcore.ingest.read.loaders import load_bytes
from ragcore.ingest.read.pdf import read_pdf
from ragcore.ingest.read.pdf_layout import LaidPage, drop_furniture, rejoin_hyphens
from ragcore.ingest.read.pdf_text import HYPHEN_MARK, PageLine, clean_line
from ragcore.types import format_locator

A4_HEIGHT = 842
WORDS = ("Alpha", "Beta", "Gamma", "Delta", "Epsilon", "Zeta", "Eta")


def _canvas(path: Path):
    import reportlab
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    # Vera (shipped with reportlab) has the "ﬁ"/"ﬂ" ligature glyphs and "−", "×"
    pdfmetrics.registerFont(TTFont("Vera", os.path.join(os.path.dirname(reportlab.__file__), "fonts", "Vera.ttf")))
    c = canvas.Canvas(str(path), pagesize=(595, A4_HEIGHT))
    c.setFont("Vera", 11)
    return c


def _book(path: Path, pages: int = 6) -> bytes:
    """A manual: running header with the page number on top, a footer, body lines between."""
    c = _canvas(path)
    for no in range(1, pages + 1):
        c.setFont("Vera", 11)
        c.drawString(72, A4_HEIGHT - 40, f"Chapter {1 + no // 3}: Getting started {no}" if no % 2 else f"{no} The Widget Manual")
        for i, text in enumerate([f"{WORDS[no % len(WORDS)]} says the \ufb01le is read ﬂawlessly.",
                                  "The value x \u2212 y \u00d7 z is at most 3 and GLP_MSG_ALL is kept.",
                                  "A word broken at the end of a line is nor-",
                                  "mal here and com-",
                                  f"pletely whole again {WORDS[(no + 3) % len(WORDS)]}."]):
            c.drawString(72, A4_HEIGHT - 100 - 16 * i, text)
        c.drawString(280, 40, f"Draft of 2024-01-0{1 + no % 9} \u2014 do not cite")
        c.showPage()
    c.save()
    return path.read_bytes()


def test_clean_line_ligatures_controls_and_hyphen_mark() -> None:
    assert clean_line("coe\ufb03cient of \ufb01le") == "coefficient of file"
    assert clean_line("a m \x02 n\x00 matrix\x14") == "a m  n matrix"
    assert clean_line("GLP_MSG_ALL \u2014 \u201cquoted\u201d") == "GLP_MSG_ALL \u2014 \u201cquoted\u201d"
    assert clean_line("nor\ufffe") == "nor" + HYPHEN_MARK
    assert clean_line("soft\u00adly inside") == "softly inside"
    assert clean_line("x\u00b2 \u2026") == "x\u00b2 \u2026"  # only ligatures are NFKC-normalised
    assert clean_line("debugger . . . . . . . . . . . 178") == "debugger … 178"  # an index's dot leader
    assert clean_line("6.9.3 User-defined operators. . . . . . . 54") == "6.9.3 User-defined operators … 54"
    assert clean_line("print(a...b) and 1.2.3.4") == "print(a...b) and 1.2.3.4"
    assert clean_line("precontrol . . . . . . . 33, 144") == "precontrol … 33, 144"


def test_rejoin_hyphens_keeps_line_count_and_real_hyphens() -> None:
    lines = ["this is nor-", "mal text, a comma-", "separated list, and pos" + HYPHEN_MARK, "sible.) Next"]
    out = rejoin_hyphens(lines, {"comma-separated"})
    assert out == ["this is normal", "text, a comma-separated", "list, and possible.)", "Next"]
    assert rejoin_hyphens(["a dash -", "then more"]) == ["a dash -", "then more"]  # not a broken word
    assert rejoin_hyphens(["ends with UPPER-", "Case next"]) == ["ends with UPPER-", "Case next"]


def test_furniture_found_by_position_and_page_numbers() -> None:
    def page(no: int) -> LaidPage:
        head = PageLine(f"Chapter 2: Basics {no}" if no % 2 else f"{no} Manual", 30.0)
        body = [PageLine(f"{WORDS[(no + i) % 7]} line of the body", 100.0 + 14 * i) for i in range(5)]
        return LaidPage((head, *body, PageLine(str(no), 800.0)), height=842.0)

    found = drop_furniture([page(n) for n in range(1, 8)])
    assert all(f == {0, 6} for f in found)
    # a body line that happens to end with a number is not furniture
    assert all(1 not in f for f in found)


def test_pdf_reader_end_to_end(tmp_path: Path) -> None:
    data = _book(tmp_path / "manual.pdf")
    result = read_pdf(data)
    texts = [ln.text for ln in result.lines]
    joined = "\n".join(texts)
    assert "the file is read flawlessly" in joined
    assert "x \u2212 y \u00d7 z" in joined and "GLP_MSG_ALL" in joined
    assert "line is normal\nhere and completely\nwhole again" in joined
    assert not any(ord(ch) < 32 for t in texts for ch in t)
    # headers, footers and page numbers are emptied; lines keep their numbers on the page
    for banned in ("Getting started", "The Widget Manual", "Draft of", "do not cite"):
        assert banned not in joined
    first_body = next(ln for ln in result.lines if ln.page == 2 and "says the file" in ln.text)
    assert first_body.no == 2  # line 1 is the (emptied) header
    doc = load_bytes(data, "manual.pdf")
    chunks = chunk_document(doc, chunk_size=60, chunk_overlap=10)
    assert chunks and all("Getting started" not in c.text and "Draft of" not in c.text for c in chunks)


def test_page_labels_reach_lines_chunks_and_locator(tmp_path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    _book(tmp_path / "raw.pdf", pages=3)
    writer = PdfWriter(clone_from=PdfReader(tmp_path / "raw.pdf"))
    writer.set_page_label(0, 2, style="/D", start=901)  # the article's printed pages 901-903
    with open(tmp_path / "labelled.pdf", "wb") as f:
        writer.write(f)
    doc = load_bytes((tmp_path / "labelled.pdf").read_bytes(), "labelled.pdf")
    assert {(ln.page, ln.page_label) for ln in doc.lines} == {(1, "901"), (2, "902"), (3, "903")}
    chunk = chunk_document(doc, chunk_size=200, chunk_overlap=10)[0]
    assert (chunk.page, chunk.page_label) == (1, "901")
    assert chunk.locator == f"labelled.pdf p.1 (901):{chunk.start_line}-{chunk.end_line}"
    assert format_locator("a.pdf", 1, 2, 3, None, "3") == "a.pdf p.3:1-2"  # a label equal to the number adds nothing


def test_outline_gives_sections(tmp_path: Path) -> None:
    c = _canvas(tmp_path / "outlined.pdf")
    for no, title in enumerate(["Installation", "Configuration"], 1):
        c.drawString(72, 700, f"{title} is described on this page.")
        c.bookmarkPage(f"p{no}")
        c.addOutlineEntry(title, f"p{no}", level=0)
        c.showPage()
    c.save()
    doc = load_bytes((tmp_path / "outlined.pdf").read_bytes(), "outlined.pdf")
    assert {ln.page: ln.section for ln in doc.lines if ln.text} == {1: ("Installation",), 2: ("Configuration",)}


def test_encrypted_and_broken(tmp_path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    from ragcore.ingest.read.pdf import PdfError

    _book(tmp_path / "plain.pdf", pages=1)
    writer = PdfWriter(clone_from=PdfReader(tmp_path / "plain.pdf"))
    writer.encrypt("secret")
    with open(tmp_path / "locked.pdf", "wb") as f:
        writer.write(f)
    with pytest.raises(PdfError, match="PDF is encrypted"):
        read_pdf((tmp_path / "locked.pdf").read_bytes())
    with pytest.raises(PdfError, match="could not read PDF"):
        read_pdf(b"%PDF-1.4 not really")


def test_paragraph_gaps_but_a_caption_stays_with_its_table() -> None:
    from ragcore.ingest.read.pdf_layout import layout_lines

    def line(text: str, top: float, gap: float) -> PageLine:
        return PageLine(text, top, gap, 7.0)

    body = [line(f"{w} sentence of running text here.", 100.0 + 12 * i, 5.0) for i, w in enumerate(WORDS * 2)]
    table = [line("Table 2: Prices of animals", 300.0, 20.0), line("Animal Description Price ($)", 326.0, 19.0),
             line("Gnu stuffed 92.50", 338.0, 5.0), line("After the table, a new paragraph.", 370.0, 25.0)]
    out = [ln.text for ln in layout_lines([LaidPage(tuple(body + table), height=842.0)])[0]]
    at = out.index("Table 2: Prices of animals")
    assert out[at - 1] == ""  # the gap above the caption is a paragraph break
    assert out[at + 1 : at + 3] == ["Animal Description Price ($)", "Gnu stuffed 92.50"]  # none after it
    assert out[at + 3] == ""  # the gap after the table is one
