"""The sentence splitter's structural breaks (textutil.sentence_spans)."""

from __future__ import annotations

from ragcore.textutil import LINE_BREAK, sentence_spans


def texts(text: str) -> list[str]:
    return [sp.text for sp in sentence_spans(text)]


def test_a_hard_line_break_ends_a_sentence() -> None:
    """Markdown's hard line break (two spaces at a line's end), which the HTML loader writes after a
    list item's title or a definition's term, ends the sentence; the break's spaces are not quoted."""
    text = f"- Maximum length of a string{LINE_BREAK}\n  The maximum is one billion bytes.\n"
    assert texts(text) == ["Maximum length of a string", "The maximum is one billion bytes."]
    span = sentence_spans(text)[0]
    assert text[span.start : span.end] == "- Maximum length of a string"


def test_wrapped_prose_is_one_sentence() -> None:
    """A line break without the two spaces is wrapped prose; one trailing space or two spaces inside
    a line change nothing."""
    assert texts("The maximum number of bytes\nis one billion.") == ["The maximum number of bytes is one billion."]
    assert texts("The maximum number of bytes \nis one  billion.") == ["The maximum number of bytes is one billion."]
    assert texts(f"  indented{LINE_BREAK}") == ["indented"]  # at the very end: nothing follows it
