"""``ragcore ask --selection-file FILE[:START-END]``: a passage of a file, read the way the app's viewer
shows it.

A document ragcore can ingest is read by the ingest's own loader, so the selected lines are its text (an
HTML page's visible text, a PDF page's extracted text with ``--selection-page``) with each text line's
source line number, the mapping ``ragcore.engine.selection.document_selection`` gives every entry point.
Any other text file (Markdown, reST, code, plain text) is taken line for line, as its loader does. Checked before anything heavy loads, so a bad file or range
fails at once.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from ragcore.cli.common import UsageError, read_regular_file, term_safe
from ragcore.engine.selection import document_selection
from ragcore.ingest.read.loaders import LoadError, kind_for, load_bytes
from ragcore.settings.redact import looks_like_secret

# the kinds whose text is not their source lines; any other file's lines are its text, as ingested
MAPPED_KINDS = ("html", "pdf")
SECRET_LINE_NOTE = "(a line that looked like a secret was left out here)"


@dataclass(frozen=True)
class Passage:
    """A selection read from a file: ``SelectionInput``'s fields."""

    text: str
    source: str
    start_line: int
    page: int | None = None
    line_numbers: tuple[int, ...] = field(default=())


def read_selection_file(spec: str, page: int | None = None) -> Passage:
    """``FILE[:START-END]`` → the passage; UsageError naming the option and the value for a missing,
    non-regular, oversized, unreadable or non-UTF-8 file or a bad range. A line that looks like a
    secret (an API key, a password) is replaced by a note, so it reaches neither the answer nor the
    evidence."""
    path, rng = spec, ""
    if not Path(spec).is_file() and ":" in spec:  # a file name may itself contain ":"
        path, _, rng = spec.rpartition(":")
    shown = f"--selection-file={term_safe(spec)}"
    data = read_regular_file(path, shown)
    if kind_for(path) in MAPPED_KINDS:
        lines = _document_lines(data, path, shown, page)
    else:
        lines = [(i, None, t) for i, t in enumerate(_utf8(data, shown).splitlines(), start=1)]
    last = max((no for no, _, _ in lines), default=1)
    start, end = _line_range(shown, rng, last)
    lines = _hide_secrets(shown, [(no, pg, t) for no, pg, t in lines if start <= no <= end])
    text, numbers = document_selection(lines, start, end, page)
    if not text.strip():
        raise UsageError(f"{shown}: lines {start}-{end} hold no text once read (markup only); choose other lines")
    return Passage(text, path, start, page, numbers)


def _document_lines(data: bytes, path: str, shown: str, page: int | None) -> list[tuple[int, int | None, str]]:
    try:
        doc = load_bytes(data, Path(path).name)
    except LoadError as exc:
        raise UsageError(f"{shown}: cannot read it as {kind_for(path)} ({exc.reason})") from None
    pages = sorted({ln.page for ln in doc.lines if ln.page is not None})
    if pages and page not in pages:
        raise UsageError(f"{shown}: a PDF's lines are numbered within a page: give --selection-page "
                         f"(pages {pages[0]}-{pages[-1]})")
    if not pages and page is not None:
        raise UsageError(f"{shown}: --selection-page is for PDF files")
    return [(ln.no, ln.page, ln.text) for ln in doc.lines]


def _utf8(data: bytes, shown: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{shown}: the file is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                         f"{exc.start}); save it as UTF-8") from None


def _hide_secrets(shown: str, lines: list[tuple[int, int | None, str]]) -> list[tuple[int, int | None, str]]:
    hidden = sorted({no for no, _, t in lines if looks_like_secret(t)})
    if hidden:
        print(f"note: {shown}: line{'s' if len(hidden) > 1 else ''} {', '.join(map(str, hidden))} "
              "looked like a secret (a key, token or password) and "
              f"{'were' if len(hidden) > 1 else 'was'} left out of the selection", file=sys.stderr)
    return [(no, pg, SECRET_LINE_NOTE if looks_like_secret(t) else t) for no, pg, t in lines]


def _whole(text: str) -> bool:
    return text.isascii() and text.isdigit()


def _line_range(shown: str, rng: str, n: int) -> tuple[int, int]:
    if not rng.strip():
        return 1, max(n, 1)
    a, dash, b = (part.strip() for part in rng.partition("-"))
    allowed = (f"the line range must be LINE or START-END, whole numbers from 1 to {n} (the file's last line) "
               f"with START ≤ END")
    if not _whole(a) or (dash and not _whole(b)):
        raise UsageError(f"{shown} is not allowed: {allowed}")
    start, end = int(a), int(b) if dash else int(a)
    if not 1 <= start <= end <= n:
        raise UsageError(f"{shown} is not allowed: {allowed}")
    return start, end
