"""Build the pdf-qa corpus: five PDFs from Debian documentation packages and one scan made here.

    python bench/data/pdf-qa/build.py [--out /work/data/pdf-qa/corpus]

The PDFs (2.7 MB) are not committed; ``apt-get download`` fetches the packages (about 280 MB,
texlive-publishers-doc being most of it) into a temporary folder and ``dpkg -x`` unpacks them.
Versions the questions were written against: Debian 12 (bookworm).

| file | package | kind |
|---|---|---|
| asymptote.pdf | asymptote-doc 2.85 | Texinfo manual, 196 pages, printed page labels, outline |
| pari-tutorial.pdf | pari-doc 2.15.2 | TeX tutorial (book), math |
| booktabs.pdf | texlive-latex-recommended-doc 2022 | LaTeX package manual with tables |
| apssamp.pdf | texlive-publishers-doc 2022 (revtex sample) | two-column paper (REVTeX) |
| york-thesis.pdf | texlive-publishers-doc 2022 | thesis class manual; fonts pypdf misreads |
| scan-field-notes.pdf | made here (PIL) | image-only PDF: a scan, read by OCR |
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
from pathlib import Path

PDFS = {
    "asymptote.pdf": ("asymptote-doc", "usr/share/doc/asymptote/asymptote.pdf"),
    "pari-tutorial.pdf": ("pari-doc", "usr/share/pari/doc/tutorial.pdf"),
    "booktabs.pdf": ("texlive-latex-recommended-doc", "usr/share/doc/texlive-doc/latex/booktabs/booktabs.pdf"),
    "apssamp.pdf": ("texlive-publishers-doc", "usr/share/doc/texlive-doc/latex/revtex/sample/aps/apssamp.pdf"),
    "york-thesis.pdf": ("texlive-publishers-doc", "usr/share/doc/texlive-doc/latex/york-thesis/york-thesis.pdf"),
}
SCAN_NAME = "scan-field-notes.pdf"
SCAN_TEXT = (
    "Field notes, Kettle Ridge weather station",
    "",
    "The station was serviced on 3 March by the survey team.",
    "The anemometer bearing was replaced and the rain gauge",
    "was cleaned. The lowest temperature recorded over the",
    "winter was minus 23 degrees Celsius, on 14 February.",
    "The next service visit is planned for early October.",
)


def scanned_pdf(lines: tuple[str, ...] | list[str], path: Path, dpi: int = 200) -> Path:
    """An image-only PDF: the lines drawn on a white A5-ish page, with no text layer."""
    from PIL import Image, ImageDraw, ImageFont

    width, height = int(6 * dpi), int(8 * dpi)
    img = Image.new("L", (width, height), 255)
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=int(dpi * 0.16))
    y = int(dpi * 0.6)
    for line in lines:
        draw.text((int(dpi * 0.5), y), line, fill=0, font=font)
        y += int(dpi * 0.28)
    img.save(path, "PDF", resolution=float(dpi))
    return path


def build(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    packages = sorted({pkg for pkg, _ in PDFS.values()})
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        subprocess.run(["apt-get", "download", *packages], cwd=t, check=True)
        for deb in t.glob("*.deb"):
            subprocess.run(["dpkg", "-x", str(deb), str(t / "x")], check=True)
        for name, (_, member) in PDFS.items():
            shutil.copyfile(t / "x" / member, out / name)
    scanned_pdf(SCAN_TEXT, out / SCAN_NAME)
    print(f"built {len(PDFS) + 1} PDFs in {out}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/work/data/pdf-qa/corpus"))
    build(ap.parse_args().out)
