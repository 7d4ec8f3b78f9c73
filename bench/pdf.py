"""`ragcore bench pdf`: PDF text extractors compared on the same files, in the same process.

Extractors: pypdf (ragcore's reader until issue 30), PDFium (pypdfium2, raw text), pdfminer.six
(its layout analysis), pdfplumber (on pdfminer, without layout analysis) and ragcore's reader
now (PDFium plus the cleaning of ragcore/ingest/read/pdf_text.py and pdf_layout.py). Counted on
every page of every file, then summed:

- ligatures: words holding "fi", "fl" or "ff" once ligature characters are decomposed (an
  extractor that drops the ligature loses them: "specified" → "specied"), and ligature
  characters left in the text ("coeﬃcient");
- control characters (what "×", "−", "≤" become when a font's glyphs are not mapped);
- math symbols, dashes and curly quotes, identifiers with an underscore (more = kept);
- probes: phrases read off the rendered pages that cross a line end, a ligature or a column;
  an extractor that interleaves columns or margin notes, or drops a letter, misses them;
- pages/s on the same pages, in turn, in this process.

The corpus is bench/data/pdf-qa's (``python bench/data/pdf-qa/build.py`` fetches it from the
Debian packages into /work/data/pdf-qa/corpus).
"""

from __future__ import annotations

import argparse
import logging
import re
import time
import unicodedata
from pathlib import Path
from typing import Callable

from bench.common import DEFAULT_RESULTS, machine, utc_now, write

DEFAULT_CORPUS = Path("/work/data/pdf-qa/corpus")
# (file, phrase): read off the rendered page; whitespace and line-end hyphens are normalised first
PROBES = (
    ("york-thesis.pdf", "The guidelines allow for single spacing these in the submission copy"),
    ("york-thesis.pdf", "This macro specifies the title of the work for the title page."),
    ("york-thesis.pdf", "three environments are single-spaced in both draft and final."),
    ("apssamp.pdf", "The citation key may contain letters, numbers, the dash (-) character, or the period (.) character."),
    ("apssamp.pdf", "(Keep in mind that no automatic space or punctuation is applied.)"),
    ("pari-tutorial.pdf", "even though mathematically there is no difference) and matrices"),
    ("pari-tutorial.pdf", "Do you know how to prove this? (The proof is difficult.)"),
    ("asymptote.pdf", "rotates it counterclockwise by 45 degrees. The final position of a Label"),
    ("asymptote.pdf", "An explicit pen specified within the Label overrides other pen arguments."),
    ("booktabs.pdf", "Occasionally we want to put an extra space between certain rows of a table"),
)
_LIG = re.compile("[\ufb00-\ufb06]")
_LIG_WORD = re.compile(r"\w*(?:fi|fl|ff)\w*", re.I)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ufffd]")
_MATH = re.compile("[×−≤≥±∞∑∫√≠≈→←⟨⟩·∈⊂∀∃]")
_PUNCT = re.compile("[—–“”‘’]")
_UNDERSCORE = re.compile(r"[A-Za-z0-9]_[A-Za-z0-9]")


def _pypdf(path: Path, max_pages: int) -> list[str]:
    from pypdf import PdfReader

    return [(p.extract_text() or "") for p in PdfReader(path).pages[:max_pages]]


def _pdfium(path: Path, max_pages: int) -> list[str]:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(path)
    out = []
    for i in range(min(len(doc), max_pages)):
        tp = doc[i].get_textpage()
        out.append(tp.get_text_range())
    doc.close()
    return out


def _pdfminer(path: Path, max_pages: int) -> list[str]:
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextContainer

    return ["".join(el.get_text() for el in page if isinstance(el, LTTextContainer))
            for page in extract_pages(path, maxpages=max_pages)]


def _pdfplumber(path: Path, max_pages: int) -> list[str]:
    import pdfplumber

    with pdfplumber.open(path) as pdf:
        return [(p.extract_text() or "") for p in pdf.pages[:max_pages]]


def _ragcore(path: Path, max_pages: int) -> list[str]:
    from ragcore.ingest.read.pdf import extract_pdf

    lines, _ = extract_pdf(path.read_bytes())
    pages: dict[int, list[str]] = {}
    for ln in lines:
        if (ln.page or 0) <= max_pages:
            pages.setdefault(ln.page or 0, []).append(ln.text)
    return ["\n".join(v) for _, v in sorted(pages.items())]


EXTRACTORS: dict[str, Callable[[Path, int], list[str]]] = {
    "pypdf": _pypdf, "pdfium": _pdfium, "pdfminer.six": _pdfminer, "pdfplumber": _pdfplumber, "ragcore": _ragcore,
}


def normalised(text: str) -> str:
    """The text as the probes compare it: ligatures decomposed, line-end hyphens joined, spaces collapsed."""
    text = _LIG.sub(lambda m: unicodedata.normalize("NFKC", m.group()), text)
    text = re.sub(r"[\ufffe\u00ad]\s*", "", text)
    text = re.sub(r"(?<=[a-z])-\s*\n\s*(?=[a-z])", "", text)
    return " ".join(text.split())


def measure(name: str, files: list[Path], max_pages: int) -> dict:
    pages, secs, texts = 0, 0.0, {}
    for f in files:
        t0 = time.perf_counter()
        got = EXTRACTORS[name](f, max_pages)
        secs += time.perf_counter() - t0
        pages += len(got)
        texts[f.name] = "\n".join(got)
    every = "\n".join(texts.values())
    decomposed = _LIG.sub(lambda m: unicodedata.normalize("NFKC", m.group()), every)
    probes = [(f, p) for f, p in PROBES if f in texts]
    hits = sum(1 for f, p in probes if p in normalised(texts[f]))
    return {
        "pages": pages, "seconds": round(secs, 2), "pages_per_s": round(pages / secs, 1) if secs else None,
        "ligature_words": len(_LIG_WORD.findall(decomposed)), "ligature_chars": len(_LIG.findall(every)),
        "control_chars": len(_CONTROL.findall(every)), "math_symbols": len(_MATH.findall(every)),
        "dashes_quotes": len(_PUNCT.findall(every)), "underscored": len(_UNDERSCORE.findall(every)),
        "probes": f"{hits}/{len(probes)}", "probes_missed": [p for f, p in probes if p not in normalised(texts[f])],
    }


def bench_pdf(corpus: Path, max_pages: int, results: Path, names: list[str]) -> dict:
    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its "fontTools is required" warnings
    logging.getLogger("pdfminer").setLevel(logging.ERROR)
    files = sorted(p for p in corpus.glob("*.pdf") if not p.name.startswith("scan"))
    if not files:
        raise SystemExit(f"no PDFs in {corpus}: run python bench/data/pdf-qa/build.py first")
    rows = {name: measure(name, files, max_pages) for name in names}
    out = {"built_at": utc_now(), "machine": machine(), "corpus": str(corpus), "files": [f.name for f in files],
           "max_pages_per_file": max_pages, "extractors": rows}
    write(results, "pdf-extraction", out, summary(out))
    return out


def summary(out: dict) -> str:
    rows = out["extractors"]
    best_lig = max(r["ligature_words"] for r in rows.values())
    head = ("| extractor | pages/s | fi/fl/ff words (dropped vs best) | ligature chars | control chars | math symbols "
            "| dashes & quotes | a_b identifiers | probes |\n|---|---|---|---|---|---|---|---|---|")
    lines = [f"| {n} | {r['pages_per_s']} | {r['ligature_words']} ({best_lig - r['ligature_words']}) | {r['ligature_chars']} "
             f"| {r['control_chars']} | {r['math_symbols']} | {r['dashes_quotes']} | {r['underscored']} | {r['probes']} |"
             for n, r in rows.items()]
    missed = [f"- {n} missed: " + "; ".join(f"“{p}”" for p in r["probes_missed"]) for n, r in rows.items() if r["probes_missed"]]
    return "\n".join([
        f"# PDF extraction compared ({out['built_at']})", "",
        f"Files: {', '.join(out['files'])} (first {out['max_pages_per_file']} pages of each); one process, "
        f"extractors in turn. Reproduce: `ragcore bench pdf`.", "", head, *lines, "", *missed,
    ])


def add_pdf_parser(bsub: argparse._SubParsersAction) -> None:
    bp = bsub.add_parser("pdf", help="PDF text extractors compared: ligatures, math, punctuation, underscores, reading order, pages/s")
    bp.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    bp.add_argument("--max-pages", type=int, default=60, dest="max_pages", help="pages read per file")
    bp.add_argument("--extractor", action="append", dest="names", choices=list(EXTRACTORS),
                    help="repeatable; default: all")
    bp.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    bp.set_defaults(func=_cmd_pdf)


def _cmd_pdf(args: argparse.Namespace) -> int:
    out = bench_pdf(args.corpus, max(1, args.max_pages), args.results, args.names or list(EXTRACTORS))
    print(summary(out))
    return 0
