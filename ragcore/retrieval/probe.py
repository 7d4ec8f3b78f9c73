"""Which stored chunk holds a pasted passage? Exact text first, then similarity.

The "why not retrieved?" probe asks about the chunk that holds a passage the analyst pasted. A
cosine between the passage and the chunks is the wrong first test: a paragraph of config.html
pasted whole scored 0.53 against a chunk of api.html that *mentions* the same setting, above the
chunk it was copied from (a long passage and a chunk that holds it plus other entries are not
close in meaning). So:

1. **verbatim**: the passage, normalised (case, whitespace, typographic quotes and dashes, Markdown
   backticks, NFKC), is a substring of the chunk's text normalised the same way;
2. **near-verbatim**: most of the passage's word trigrams occur in the chunk (a passage copied
   across a chunk boundary, or with a word changed): at least ``NEAR_VERBATIM`` of them;
3. **similar**: otherwise the closest chunk by cosine, as before.

Candidates come from both branches with large pools: BM25 on the passage's own words ranks the
chunk holding it near the top whatever its cosine, and the dense branch adds the nearest in meaning.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Iterable, Literal, Sequence

from ragcore.types import Candidate, Chunk

NEAR_VERBATIM = 0.6  # share of the passage's word trigrams the chunk must hold
MatchKind = Literal["verbatim", "near-verbatim", "similar"]
_QUOTES = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "–": "-", "—": "-", "‐": "-", "¶": " ", "\u00a0": " "})
_MARKUP = re.compile(r"[`*]+")
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class PassageMatch:
    chunk: Chunk
    score: float  # 1.0 verbatim; the share of trigrams found (near-verbatim); the cosine (similar)
    kind: MatchKind


def normalise(text: str) -> str:
    """Text as compared: NFKC, typographic quotes and dashes plain, no Markdown emphasis or code
    ticks, lower case, whitespace runs as one space."""
    text = unicodedata.normalize("NFKC", text).translate(_QUOTES)
    return " ".join(_MARKUP.sub("", text).lower().split())


def _shingles(words: Sequence[str], n: int = 3) -> set[tuple[str, ...]]:
    if len(words) < n:
        return {tuple(words)} if words else set()
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def containment(passage: str, text: str) -> float:
    """1.0 when ``passage`` occurs verbatim in ``text`` (normalised), else the share of the
    passage's word trigrams that ``text`` holds."""
    p, t = normalise(passage), normalise(text)
    if not p:
        return 0.0
    if p in t:
        return 1.0
    ps = _shingles(_WORD.findall(p))
    return len(ps & _shingles(_WORD.findall(t))) / len(ps) if ps else 0.0


def best_match(passage: str, candidates: Iterable[Candidate]) -> PassageMatch | None:
    """The chunk holding the passage (verbatim, else near-verbatim), else the closest by cosine.

    Ties between chunks that hold as much of the passage go to the one whose text is shortest
    around it (the passage is more of it), then to the earlier one in the file."""
    pool = list({c.chunk.chunk_id: c for c in candidates}.values())
    if not pool:
        return None
    scored = [(containment(passage, c.chunk.text), c) for c in pool]
    share, best = max(scored, key=lambda sc: (sc[0], -len(sc[1].chunk.text), -sc[1].chunk.start_line))
    if share >= 1.0:
        return PassageMatch(best.chunk, 1.0, "verbatim")
    if share >= NEAR_VERBATIM:
        return PassageMatch(best.chunk, round(share, 4), "near-verbatim")
    dense = [c for c in pool if c.dense_score is not None]
    if not dense:
        return None
    near = max(dense, key=lambda c: c.dense_score or 0.0)
    return PassageMatch(near.chunk, float(near.dense_score or 0.0), "similar")
