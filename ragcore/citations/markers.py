"""Citation markers: ``[1]``, ``[1, 3]``, ``[2-4]`` — parsing, cleaning, counting.

Code is never touched: markers inside inline code or fenced blocks are not citations
(``offsets[12]`` stays as written), and neither is a bracket glued to an identifier
(``buf[3]`` is a subscript, not citation 3). Everything else that looks like a marker is
either valid or stripped and recorded (``[-1]``, ``[0]``, ``[3-1]``, ``[9]`` with 5 sources).
"""

from __future__ import annotations

import re
from typing import Callable, Iterator

MAX_RANGE = 20  # "[1-1000]" is not a citation; ranges wider than this are malformed
# a well-formed marker; group 1 is the body parse_marker() reads
MARKER_RE = re.compile(r"(?<!\w)\[(\s*\d+(?:\s*[-–]\s*\d+)?(?:\s*,\s*\d+(?:\s*[-–]\s*\d+)?)*\s*)\]")
# anything an author or a model meant as a marker, well-formed or not: [-1], [1-], [1,,2]
_ATTEMPT = re.compile(r"(?<!\w)\[(\s*[-–]?\s*\d[\d\s,\-–]*)\]")
_CODE = re.compile(r"```.*?(?:```|\Z)|~~~.*?(?:~~~|\Z)|`[^`\n]+`", re.S)


def prose_segments(text: str) -> Iterator[tuple[str, bool]]:
    """``text`` as (segment, is_code) pieces, in order; joined they give ``text`` back."""
    pos = 0
    for m in _CODE.finditer(text):
        if m.start() > pos:
            yield text[pos : m.start()], False
        yield m.group(0), True
        pos = m.end()
    if pos < len(text):
        yield text[pos:], False


def map_prose(text: str, fn: Callable[[str], str]) -> str:
    """Apply ``fn`` to the prose of ``text``, leaving code spans and blocks byte for byte."""
    return "".join(seg if code else fn(seg) for seg, code in prose_segments(text))


def parse_marker(body: str) -> list[int] | None:
    """``"1, 3-4"`` → [1, 3, 4]; None if malformed (empty part, negative, reversed or too wide range)."""
    out: list[int] = []
    for part in body.split(","):
        part = part.strip()
        if re.fullmatch(r"\d+", part):
            out.append(int(part))
            continue
        m = re.fullmatch(r"(\d+)\s*[-–]\s*(\d+)", part)
        if not m:
            return None
        a, b = int(m.group(1)), int(m.group(2))
        if b < a or b - a > MAX_RANGE:
            return None
        out.extend(range(a, b + 1))
    return out


def clean_markers(text: str, valid: set[int]) -> tuple[str, tuple[str, ...]]:
    """Rewrite markers to their valid numbers; drop markers with none. Returns (text, stripped)."""
    stripped: list[str] = []

    def repl(m: re.Match[str]) -> str:
        nums = parse_marker(m.group(1))
        if nums is None:
            stripped.append(m.group(0))
            return ""
        good = [n for n in dict.fromkeys(nums) if n in valid]
        bad = [n for n in nums if n not in valid]
        if bad:
            stripped.append(m.group(0) if not good else "[" + ", ".join(map(str, bad)) + "]")
        return "[" + ", ".join(map(str, good)) + "]" if good else ""

    def clean(seg: str) -> str:
        out = _ATTEMPT.sub(repl, seg)
        out = re.sub(r"[ \t]+([.,;:!?])(?=\s|$)", r"\1", out)  # "claim [9]." → "claim ." → "claim."
        return re.sub(r"(?<=\S)[ \t]{2,}(?=\S)", " ", out)

    return map_prose(text, clean), tuple(stripped)


def markers_in(text: str) -> list[int]:
    """Cited numbers in order of first appearance (prose only)."""
    nums: list[int] = []
    for seg, code in prose_segments(text):
        if not code:
            for m in MARKER_RE.finditer(seg):
                nums.extend(parse_marker(m.group(1)) or [])
    return list(dict.fromkeys(nums))


def strip_markers(text: str) -> str:
    """``text`` without its markers (prose only), for scoring what a sentence says."""
    return map_prose(text, lambda seg: re.sub(r"\s+([.,;:!?])", r"\1", MARKER_RE.sub("", seg)))
