"""Pages without a text layer (scans) read by Tesseract, offline.

The page is rendered by PDFium at 300 dpi and handed to Tesseract through ``pytesseract``;
Tesseract's words are grouped back into its lines, each with the mean confidence of its words.
Both are optional: without them a scanned page cannot be read, and :class:`OcrUnavailable`
says how to install them.
"""

from __future__ import annotations

import re
import shutil
from typing import Any

from ragcore.ingest.read.pdf_text import PageLine, clean_line

__all__ = ["INSTALL_HINT", "OcrUnavailable", "continues", "ocr_available", "ocr_page"]

DPI = 300
INSTALL_HINT = (
    "install Tesseract to read scanned pages: `apt-get install tesseract-ocr tesseract-ocr-eng` "
    "(Debian/Ubuntu; `brew install tesseract` on macOS) and `pip install pytesseract`"
)


class OcrUnavailable(Exception):
    """Tesseract or pytesseract is missing; the message says how to install them."""


def ocr_available() -> str | None:
    """None when OCR can run, else why not (with the install hint)."""
    try:
        import pytesseract  # noqa: F401  (optional dependency)
    except ImportError:
        return f"pytesseract is not installed; {INSTALL_HINT}"
    if shutil.which("tesseract") is None:
        return f"the tesseract program is not installed; {INSTALL_HINT}"
    return None


_SENTENCE_END = re.compile(r"""[.!?:]["'”’)\]]*$""")


def continues(before: str, line: str) -> bool:
    """Does ``line`` carry on the sentence ``before`` left open? Tesseract sometimes starts a new
    paragraph mid-sentence ("… was 4.2 bar," / "recorded during …"); a blank line there would cut
    the sentence in two, and neither half is quotable. A line that opens in lower case after one
    that ends without a sentence's end is the same sentence."""
    return bool(before.strip()) and not _SENTENCE_END.search(before.rstrip()) and line[:1].islower()


def ocr_page(page: Any, lang: str = "eng") -> tuple[list[PageLine], float | None]:
    """The lines Tesseract reads on a pypdfium2 page, top to bottom, and their mean word
    confidence (0..100; None when it read nothing)."""
    why = ocr_available()
    if why is not None:
        raise OcrUnavailable(why)
    import pytesseract

    image = page.render(scale=DPI / 72).to_pil()
    data = pytesseract.image_to_data(image, lang=lang, output_type=pytesseract.Output.DICT)
    groups: dict[tuple[int, int, int], list[int]] = {}
    for i, word in enumerate(data["text"]):
        if word.strip() and float(data["conf"][i]) >= 0:
            groups.setdefault((data["block_num"][i], data["par_num"][i], data["line_num"][i]), []).append(i)
    scale = 72 / DPI
    lines: list[PageLine] = []
    confs: list[float] = []
    prev_bottom, prev_par = None, None
    for key in sorted(groups, key=lambda k: min(data["top"][i] for i in groups[k])):
        idx = groups[key]
        top = min(data["top"][i] for i in idx) * scale
        bottom = max(data["top"][i] + data["height"][i] for i in idx) * scale
        text = clean_line(" ".join(data["text"][i] for i in idx))
        if prev_par is not None and key[:2] != prev_par and not continues(lines[-1].text, text):
            lines.append(PageLine("", None))  # Tesseract's paragraphs are the page's paragraphs
        lines.append(PageLine(text, top, None if prev_bottom is None else top - prev_bottom, bottom - top))
        confs.extend(float(data["conf"][i]) for i in idx)
        prev_bottom, prev_par = bottom, key[:2]
    return lines, (round(sum(confs) / len(confs), 1) if confs else None)
