"""Selected-text mode's one rule for what counts as a selection, shared by the engine, the
CLI and the app (so they all refuse the same passages with the same words), and how a selection
is cut into evidence pieces."""

from __future__ import annotations

from ragcore.synthesis.extractive.answers import default_entries
from ragcore.textutil import sentence_spans


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


def selection_pieces(text: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the selection's evidence pieces: one sentence each (so citations
    point at exact lines), except that a definition entry from its name to its "Default: …" line is
    one piece ("MAX_CONTENT_LENGTH" / what it does / "Default: None"): cut into sentences, the
    default would lose the name it belongs to."""
    pieces = [(sp.start, sp.end) for sp in sentence_spans(text)]
    for a, b in default_entries(text):
        inside = [p for p in pieces if p[0] < b and p[1] > a]
        if inside:
            pieces = [p for p in pieces if p not in inside] + [(min(a, inside[0][0]), max(b, inside[-1][1]))]
    return sorted(pieces)
