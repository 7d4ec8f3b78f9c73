"""Selected-text mode's one rule for what counts as a selection, shared by the engine, the
CLI and the app (so they all refuse the same passages with the same words)."""

from __future__ import annotations


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
