"""The PDF reader's text around the prose: footnote marks, contents and index pages, and OCR'd
paragraphs that Tesseract breaks mid-sentence. PDFs are made here with reportlab; PDFium reads
them for real."""

from __future__ import annotations

import os
from pathlib import Path

from ragcore.ingest.read.pdf import read_pdf
from ragcore.ingest.read.pdf_layout import navigation_lines
from ragcore.ingest.read.pdf_ocr import continues
from ragcore.ingest.read.pdf_text import PageLine

HEIGHT = 842


def _canvas(path: Path):
    import reportlab
    from reportlab.pdfbase import pdfmetrics
    from reportlab.pdfbase.ttfonts import TTFont
    from reportlab.pdfgen import canvas

    pdfmetrics.registerFont(TTFont("Vera", os.path.join(os.path.dirname(reportlab.__file__), "fonts", "Vera.ttf")))
    return canvas.Canvas(str(path), pagesize=(595, HEIGHT))


def _with_notes(path: Path) -> bytes:
    """A page whose sentence ends on a footnote mark (set small and raised, as TeX does), the
    note at the foot opening on its mark, and digits of the text's own size that must stay."""
    c = _canvas(path)
    y = HEIGHT - 100
    c.setFont("Vera", 10)
    text = "The kern defaults to 0.5 em, but can be set by the user in the preamble."
    c.drawString(72, y, text)
    c.setFont("Vera", 7)
    c.drawString(72 + c.stringWidth(text, "Vera", 10), y + 4, "2")
    c.setFont("Vera", 10)
    c.drawString(72, y - 14, "Version 2 of the package ships with Python 3.")
    c.drawString(72, y - 28, "The footnote says why.")
    c.setFont("Vera", 6)
    c.drawString(72, 203, "2")
    c.setFont("Vera", 8)
    c.drawString(72 + c.stringWidth("2", "Vera", 6), 200, "User feedback suggested the old default was too small.")
    c.setFont("Vera", 6)
    c.drawString(72, 188, "3")  # a mark PDFium reads as a line of its own, over its note
    c.setFont("Vera", 8)
    c.drawString(72, 175, "If you declare twocolumn, the output may be goofy.")
    c.showPage()
    c.save()
    return path.read_bytes()


def test_footnote_marks_are_dropped_and_digits_of_the_text_kept(tmp_path: Path) -> None:
    lines = [ln.text for ln in read_pdf(_with_notes(tmp_path / "notes.pdf")).lines if ln.text.strip()]
    assert "The kern defaults to 0.5 em, but can be set by the user in the preamble." in lines, lines
    assert "Version 2 of the package ships with Python 3." in lines, lines
    assert "User feedback suggested the old default was too small." in lines, lines
    assert "3" not in lines and "If you declare twocolumn, the output may be goofy." in lines, lines


def _lines(*texts: str) -> list[PageLine]:
    return [PageLine(t, 100.0 + 12 * i) for i, t in enumerate(texts)]


def test_contents_and_index_entries_are_emptied_prose_pages_kept() -> None:
    index = _lines("Index", "", "A", "arrow … 14, 20", "arrowsize … 20", "B", "bool … 29, 61", "bool3 … 30",
                   "box … 12", "cubicroots … 76")
    dropped = navigation_lines(index)
    assert {index[i].text for i in dropped} == {"A", "B", "arrow … 14, 20", "arrowsize … 20", "bool … 29, 61",
                                               "bool3 … 30", "box … 12", "cubicroots … 76"}
    contents = _lines("Table of Contents", "1 Description … 1", "2 Installation … 2", "2.1 UNIX binary distributions … 2")
    assert len(navigation_lines(contents)) == 3
    # a page of prose that mentions one entry-like line keeps every line
    prose = _lines("Try typing I^I … So we have a lot of analysis at our disposal.", "The arrow is drawn … 14",
                   "This sentence is prose.", "So is this one, and the next.", "And the last one.")
    assert navigation_lines(prose) == set()


def test_ocr_lines_split_mid_sentence_stay_one_paragraph() -> None:
    assert continues("The highest pressure measured in the main was 4.2 bar,", "recorded during the night test.")
    assert not continues("The inspection found the inlet valve worn.", "a replacement was fitted.")
    assert not continues("Maintenance log, Harbour Street pump house", "The inspection on 9 June found it worn.")
    assert not continues("", "recorded during the night test.")


def test_numbered_headings_give_sections_when_there_is_no_outline() -> None:
    from ragcore.ingest.read.pdf_layout import numbered_headings

    def line(text: str, size: float = 10.0) -> PageLine:
        return PageLine(text, 100.0, None, size)

    blank = PageLine("", None)
    body = [line(f"Body text of the manual, line {i}, set in the body's size.") for i in range(8)]
    page = [line("2.4 Booleans and Macros", 12.5), blank, *body[:4], blank,
            line("3. Put the units in the column heading (not in the body of the table)."), blank, *body[4:],
            blank, line("2.4.1 Preamble Material", 12.0), blank, line("masters This boolean sets whether…"),
            line("12.5 per cent of the runs", 12.5), line("ran on."), blank, line("3 Miscellaneous Goodies", 14.0)]
    marks = numbered_headings([page])
    assert [(m.level, m.title) for m in marks] == [(1, "2.4 Booleans and Macros"), (2, "2.4.1 Preamble Material"),
                                                   (0, "3 Miscellaneous Goodies")]
    assert numbered_headings([page[:-2]]) == []  # two are too few to tell how the document sets its headings
