"""PDF to SourceLines: one SourceLine per line of each page's text, read with PDFium.

``page`` is 1-based and ``no`` counts lines within that page, so a citation reads
"p.3:12-20"; ``page_label`` is the page's printed label ("901", "iv") when the PDF has one
that differs. The text is cleaned (:mod:`.pdf_text`), running headers, footers and page
numbers are emptied and broken words made whole (:mod:`.pdf_layout`), and ``section`` comes
from the PDF's outline (bookmarks) where it has one, else from its numbered headings. A page without a text layer is read by
Tesseract (:mod:`.pdf_ocr`) and its lines carry ``ocr_confidence``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ragcore.ingest.read.pdf_layout import Bookmark, LaidPage, layout_lines, numbered_headings, sections_for
from ragcore.ingest.read.pdf_text import page_lines
from ragcore.types import SourceLine

__all__ = ["PdfError", "PdfResult", "extract_pdf", "read_pdf"]

log = logging.getLogger(__name__)
_MIN_CHARS = 3  # a page with fewer visible characters has no text layer worth the name


class PdfError(Exception):
    """A PDF gave no text; ``reason`` is short and meant for humans. The loaders turn it into
    their LoadError (this module does not import them: loaders import it, lazily)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class PdfResult:
    lines: list[SourceLine]
    title: str | None
    pages: int
    ocr_pages: int = 0  # pages read by OCR
    unread_pages: int = 0  # image-only pages left unread (no OCR here)
    ocr_missing: str | None = None  # why OCR could not run, with how to install it


def extract_pdf(data: bytes) -> tuple[list[SourceLine], str | None]:
    """The text lines of every page, and the document title from the PDF's metadata."""
    result = read_pdf(data)
    return result.lines, result.title


def read_pdf(data: bytes, *, ocr: bool = True) -> PdfResult:
    """:func:`extract_pdf` with what the reading took: pages, OCR'd pages, unread scans."""
    import pypdfium2 as pdfium  # lazy: PDFium is only needed for PDFs

    try:
        doc = pdfium.PdfDocument(data)
    except Exception as exc:  # PdfiumError for damaged files, wrong passwords, non-PDFs
        raise PdfError(_open_reason(exc)) from exc
    try:
        if len(doc) == 0:
            raise PdfError("could not read PDF: it has no pages")
        pages, ocr_pages, unread, missing = _read_pages(doc, ocr)
        lines = _source_lines(pages, _bookmarks(doc))
        title = _title(doc)
    finally:
        doc.close()
    if not any(line.text.strip() for line in lines):
        if missing:
            raise PdfError(f"PDF has no text layer (scanned?) and cannot be OCR'd: {missing}")
        if ocr_pages:
            raise PdfError(f"PDF has no extractable text (OCR found none on its {ocr_pages} scanned page(s))")
        raise PdfError("PDF has no extractable text (scanned?)")
    return PdfResult(lines, title, len(pages), ocr_pages, unread, missing)


def _read_pages(doc: Any, ocr: bool) -> tuple[list[LaidPage], int, int, str | None]:
    from ragcore.ingest.read.pdf_ocr import OcrUnavailable, ocr_page

    pages: list[LaidPage] = []
    ocr_pages = unread = 0
    missing: str | None = None
    for i in range(len(doc)):
        page = doc[i]
        try:
            lines = page_lines(page)
            label = _label(doc, i)
            conf = None
            if sum(len(ln.text.strip()) for ln in lines) < _MIN_CHARS and _has_image(page):
                if not ocr or missing:
                    unread += 1
                else:
                    try:
                        lines, conf = ocr_page(page)
                        ocr_pages += 1
                    except OcrUnavailable as exc:
                        missing, unread = str(exc), unread + 1
            pages.append(LaidPage(tuple(lines), label, conf, float(page.get_height())))
        finally:
            page.close()
    if missing:
        log.warning("%d scanned PDF page(s) not read: %s", unread, missing)
    return pages, ocr_pages, unread, missing


def _source_lines(pages: list[LaidPage], marks: list[Bookmark]) -> list[SourceLine]:
    laid = layout_lines(pages)
    sections = sections_for(laid, marks or numbered_headings(laid))
    out: list[SourceLine] = []
    for page_no, (p, lines, secs) in enumerate(zip(pages, laid, sections), 1):
        for no, (ln, sec) in enumerate(zip(lines, secs), 1):
            # an OCR'd line carries its page's mean word confidence (Tesseract's per-line figure is noisier)
            out.append(SourceLine(no=no, text=ln.text, section=sec, page=page_no, page_label=p.label,
                                  ocr_confidence=p.ocr_confidence))
    return out


def _label(doc: Any, i: int) -> str | None:
    try:
        label = doc.get_page_label(i)
    except Exception:  # a broken /PageLabels tree must not cost us the text
        return None
    return label if label and label != str(i + 1) else None


def _has_image(page: Any) -> bool:
    import pypdfium2.raw as raw

    return next(iter(page.get_objects(filter=[raw.FPDF_PAGEOBJ_IMAGE], max_depth=2)), None) is not None


def _bookmarks(doc: Any) -> list[Bookmark]:
    out: list[Bookmark] = []
    try:
        for item in doc.get_toc(max_depth=6):
            dest = item.get_dest()
            index = dest.get_index() if dest is not None else None
            title = " ".join((item.get_title() or "").split())
            if index is None or not title:
                continue
            _, view = dest.get_view()
            top = None
            if len(view) >= 2 and view[1]:
                top = float(doc.get_page_size(index)[1]) - float(view[1])
            out.append(Bookmark(item.level, title, index, top))
    except Exception:  # an outline is a nicety: a broken one leaves sections empty
        return []
    return out


def _title(doc: Any) -> str | None:
    try:
        title = doc.get_metadata_dict().get("Title")
    except Exception:  # a broken info dictionary must not cost us the text
        return None
    return " ".join(str(title).split()) or None if title else None


def _open_reason(exc: Exception) -> str:
    text = str(exc) or type(exc).__name__
    if "password" in text.lower():
        return "PDF is encrypted"
    return f"could not read PDF: {text}"
