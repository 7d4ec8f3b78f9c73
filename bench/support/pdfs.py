"""A real PDF written with reportlab, one list of text lines per page: for the loaders' tests and the
hostile corpus (bench/support/hostile_corpus.py)."""

from __future__ import annotations

from pathlib import Path


def make_pdf(path: Path, pages: list[list[str]], title: str | None = None) -> bytes:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=A4)
    if title:
        c.setTitle(title)
    for lines in pages:
        for i, text in enumerate(lines):
            c.drawString(72, 800 - 18 * i, text)
        c.showPage()
    c.save()
    return path.read_bytes()
