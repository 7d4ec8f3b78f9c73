"""A model that echoes ragcore's own prompt markup: small models sometimes copy an
``<evidence n="1" path=…>`` block (or a stray ``</evidence>`` tag) into their answer. The
copied text then reads as a well-supported answer (it *is* the evidence) and its markers cite
every block, so the echo is cut out before the answer is checked and the answer is marked. When
the echo was all the model wrote, nothing is left to check: :func:`only_echo` says so, and the
engine answers with the extractive answer instead of an empty one.
"""

from __future__ import annotations

import re

# a whole block (closed, or running to the end of the text), then any stray opening/closing tag
_BLOCK = re.compile(r"<\s*evidence\b[^>]*>.*?(?:<\s*/\s*evidence\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<\s*/?\s*evidence\b[^>]*>", re.IGNORECASE)
_MARKER = re.compile(r"\[\s*\d+(?:\s*[,;-]\s*\d+)*\s*\]")
_WORD = re.compile(r"[^\W\d_]{2,}")
MIN_OWN_WORDS = 3  # fewer is a label ("Answer:") or a stray marker, not an answer


def strip_prompt_echo(text: str) -> tuple[str, int]:
    """``text`` without echoed evidence blocks and tags, and how many were removed."""
    text, blocks = _BLOCK.subn("", text)
    text, tags = _TAG.subn("", text)
    if blocks or tags:
        text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text, blocks + tags


def only_echo(left: str) -> bool:
    """True when ``left`` (a model's answer after :func:`strip_prompt_echo`) has nothing of its own:
    fewer than three words once citation markers are removed."""
    return len(_WORD.findall(_MARKER.sub(" ", left))) < MIN_OWN_WORDS
