"""Selected-text mode's one rule for what counts as a selection, shared by the engine, the
CLI and the app (so they all refuse the same passages with the same words), and how a selection
is cut into evidence pieces."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from ragcore.ingest.read.loaders import kind_for
from ragcore.synthesis.extractive.answers import default_entries
from ragcore.synthesis.extractive.units import _INTRO, _blocks, fold
from ragcore.textutil import Span, line_of_offset, sentence_spans


def selection_problem(text: str | None, min_chars: int) -> str | None:
    """Why ``text`` cannot be asked about, or None when it can."""
    got = len((text or "").strip())
    if got >= min_chars:
        return None
    if got == 0:
        return (f"No passage is selected (selected-text mode needs at least {min_chars} characters). "
                "Select a passage first, or ask in full-corpus mode.")
    return (
        f"The selected passage is too short ({got} characters; at least {min_chars} are needed). "
        "Select a longer passage, or ask in full-corpus mode."
    )


def selection_kind(source: str | None) -> str:
    """How a selection's text is read: as its file's kind, and a pasted passage (no file) as the
    text a browser shows, like an HTML page's (commands and code as runs of code-like lines)."""
    kind = kind_for(source) if source else None
    return kind if kind in ("markdown", "rst", "text", "code", "pdf", "html") else "html"


def selection_pieces(text: str, kind: str = "text") -> list[tuple[int, int]]:
    """(start, end) offsets of the selection's evidence pieces: one sentence each (so citations
    point at exact lines), except that a code block is one piece (its lines are not sentences:
    "$ flask --app hello --debug run" and the output lines after it), and so is a definition
    entry from its name to its "Default: …" line ("MAX_CONTENT_LENGTH" / what it does / "Default:
    None"): cut into sentences, the default would lose the name it belongs to."""
    spans = sentence_spans(text)
    pieces = [(sp.start, sp.end) for sp in spans]
    code = [(b.start, b.end) for b in _blocks(text, spans, kind == "html", ()) if b.kind == "code"]
    # a sentence that introduces the block ("To change it, set the variable before you ingest:") goes with it
    code = [(_intro_start(text, spans, a), b) for a, b in code]
    for a, b in [*code, *default_entries(text)]:
        inside = [p for p in pieces if p[0] < b and p[1] > a]
        if inside:
            pieces = [p for p in pieces if p not in inside] + [(min(a, inside[0][0]), max(b, inside[-1][1]))]
    return sorted(pieces)


def _intro_start(text: str, spans: list[Span], block_start: int) -> int:
    """Where the sentence that introduces the block at ``block_start`` starts (the block's own
    start when the prose right before it does not introduce it)."""
    before = [sp for sp in spans if sp.end <= block_start and not sp.block and not text[sp.end : block_start].strip()]
    return before[-1].start if before and _INTRO.search(fold(text[before[-1].start : before[-1].end])) else block_start


def selection_lines(lines: Iterable[tuple[int, str]], start: int, end: int) -> tuple[str, tuple[int, ...]]:
    """The text of source lines ``start``..``end`` as a selection, and the source line number of
    each of its text lines (``SelectionInput.line_numbers``).

    Every text line in the range is kept, blank ones too: the HTML reader ends a paragraph with a
    blank line numbered like the paragraph's last line ("read for security." and "" are both line
    326 of Flask's config.html). Text built one line per number (the viewer's ``text_between``)
    let the blank replace the text, which dropped the last line of every paragraph and "Default:
    None" from a selection; keeping the text but not the blank ran paragraphs together."""
    text: list[str] = []
    numbers: list[int] = []
    for no, line in lines:
        if start <= no <= end:
            text.append(line.replace("\n", " "))
            numbers.append(no)
    return "\n".join(text), tuple(numbers)


def selection_meta(source: str | None, start_line: int, end_line: int, quoted: Iterable[tuple[int, int]],
                   fit: Mapping[str, Any] | None) -> dict[str, Any]:
    """What an answer records of the selection it used: where it is, the line ranges the answer
    quotes (the viewer highlights them), and the verdict on whether the question is about it."""
    return {"source": source, "start_line": start_line, "end_line": end_line,
            "quoted": [list(r) for r in sorted(set(quoted))], "fit": dict(fit) if fit else None}


def source_line(sel: Any, offset: int) -> int:
    """The source line of character ``offset`` of a selection (a ``SelectionInput``): from its
    ``line_numbers`` when given, else counted from its ``start_line``."""
    i = line_of_offset(sel.text, offset)
    numbers = getattr(sel, "line_numbers", ())
    return numbers[min(i, len(numbers) - 1)] if numbers else sel.start_line + i



def document_selection(lines: Iterable[tuple[int, int | None, str]], start: int, end: int,
                       page: int | None = None) -> tuple[str, tuple[int, ...]]:
    """Source lines ``start``..``end`` (of ``page`` for a PDF) of a document read by the ingest's own
    loader — (line number, page, text) of each ``LoadedDocument.lines`` — as a selection's text and
    ``line_numbers``.

    Every entry point maps a file's lines this one way: the app's viewer, ``ragcore ask
    --selection-file`` and the Python API (``SelectionInput``). ``--selection-file page.html:420-426``
    used to hand the engine the HTML source of those lines, tags and all, and so abstained where the
    viewer, which showed the same lines as text, answered."""
    return selection_lines(((no, text) for no, pg, text in lines if pg == page), start, end)
