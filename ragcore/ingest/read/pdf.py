"""PDF to SourceLines with pypdf: one SourceLine per line of each page's extracted text.

``page`` is 1-based and ``no`` counts lines within that page, so a citation reads
"p.3:12-20". PDFs have no reliable heading structure, so ``section`` stays empty.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

from ragcore.types import SourceLine

if TYPE_CHECKING:
    from pypdf import PdfReader

__all__ = ["PdfError", "extract_pdf"]


class PdfError(Exception):
    """A PDF gave no text; ``reason`` is short and meant for humans. The loaders turn it into
    their LoadError (this module does not import them: loaders import it, lazily)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def extract_pdf(data: bytes) -> tuple[list[SourceLine], str | None]:
    """The text lines of every page, and the document title from the PDF's metadata."""
    from pypdf import PdfReader  # lazy: importing pypdf costs time nobody needs for text files

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise PdfError("PDF is encrypted")
        if len(reader.pages) == 0:
            raise PdfError("could not read PDF: it has no pages")
        lines: list[SourceLine] = []
        for page_no, page in enumerate(reader.pages, 1):
            page_lines = (page.extract_text() or "").split("\n")
            while page_lines and not page_lines[-1].strip():
                page_lines.pop()  # trailing blank lines carry nothing and number nothing
            for no, line in enumerate(page_lines, 1):
                lines.append(SourceLine(no=no, text=line.rstrip("\r"), page=page_no))
        title = _title(reader)
    except PdfError:
        raise
    except Exception as exc:  # pypdf raises many types (PdfReadError, ValueError, KeyError…)
        raise PdfError(f"could not read PDF: {_describe(exc)}") from exc
    if not any(line.text.strip() for line in lines):
        raise PdfError("PDF has no extractable text (scanned?)")
    return lines, title


def _title(reader: PdfReader) -> str | None:
    try:
        meta = reader.metadata
        title = meta.title if meta else None
    except Exception:  # a broken info dictionary must not cost us the text
        return None
    if not title:
        return None
    return " ".join(str(title).split()) or None


def _describe(exc: Exception) -> str:
    return str(exc) or type(exc).__name__
