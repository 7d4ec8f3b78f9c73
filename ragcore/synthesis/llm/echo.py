"""A model that echoes ragcore's own prompt markup: small models sometimes copy an
``<evidence n="1" path=…>`` block (or a stray ``</evidence>`` tag) into their answer. The
copied text then reads as a well-supported answer (it *is* the evidence) and its markers cite
every block, so the echo is cut out before the answer is checked and the answer is marked.
"""

from __future__ import annotations

import re

# a whole block (closed, or running to the end of the text), then any stray opening/closing tag
_BLOCK = re.compile(r"<\s*evidence\b[^>]*>.*?(?:<\s*/\s*evidence\s*>|\Z)", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<\s*/?\s*evidence\b[^>]*>", re.IGNORECASE)


def strip_prompt_echo(text: str) -> tuple[str, int]:
    """``text`` without echoed evidence blocks and tags, and how many were removed."""
    text, blocks = _BLOCK.subn("", text)
    text, tags = _TAG.subn("", text)
    if blocks or tags:
        text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return text, blocks + tags
