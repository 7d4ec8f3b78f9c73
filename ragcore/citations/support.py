"""How well an answer sentence is supported by a piece of evidence.

A sentence's support by one piece of evidence is the best of that evidence's sentences'
scores, each ``0.5·lexical + 0.5·semantic`` where *lexical* is the share of the answer
sentence's content words (stemmed, stopwords removed) found in the evidence sentence and
*semantic* the cosine of their MiniLM embeddings (clipped to 0..1; omitted, and lexical alone
used, when no encoder is given). A verbatim quote scores ~1.0; a paraphrase ~0.6–0.8; a claim
the evidence does not make falls under :data:`UNSUPPORTED_BELOW`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ragcore.textutil import Span, content_terms, normalize_ws, sentence_spans
from ragcore.types import Chunk

UNSUPPORTED_BELOW = 0.5
Encoder = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class SupportMatch:
    score: float
    span: Span | None  # the evidence sentence that supports best


def _lexical(claim: set[str], evidence: set[str]) -> float:
    return len(claim & evidence) / len(claim) if claim else 0.0


class SupportScorer:
    def __init__(self, encoder: Encoder | None = None) -> None:
        self.encoder = encoder
        self._spans: dict[str, list[Span]] = {}
        self._term_cache: dict[str, set[str]] = {}

    def spans(self, chunk: Chunk) -> list[Span]:
        got = self._spans.get(chunk.chunk_id)
        if got is None:
            got = self._spans[chunk.chunk_id] = sentence_spans(chunk.text) or [Span(0, len(chunk.text), normalize_ws(chunk.text))]
        return got

    def best(
        self, sentences: Sequence[str], chunks: Sequence[Chunk], needed: Sequence[Sequence[int]] | None = None,
    ) -> list[list[SupportMatch]]:
        """For each answer sentence × each chunk: the best-supporting span and its score.

        ``needed`` (per sentence, the chunk columns it cites) limits the work to those pairs; the
        others are left at ``SupportMatch(0.0, None)``. A sentence that is, whitespace aside, one of
        a chunk's sentences scores 1.0 on it without the model: no span can score higher (both
        halves are capped at 1.0), and an extractive answer is made of such quotes, so a checked
        answer usually costs no embedding at all. A fenced code block whose body is a run of the
        chunk's lines is such a quote too: it scores 1.0 and its span covers all of those lines
        (the model would score it by its best single line).
        """
        want = [list(range(len(chunks))) if needed is None else list(dict.fromkeys(needed[i])) for i in range(len(sentences))]
        ev_spans = [self.spans(c) for c in chunks]
        quoted = {(i, j): span for i, sent in enumerate(sentences) for j in want[i]
                  if (span := _verbatim(sent, ev_spans[j])) is not None}
        todo = [(i, j) for i in range(len(sentences)) for j in want[i] if (i, j) not in quoted]
        cols = sorted({j for _, j in todo})
        sem = self._cosines(sorted({i for i, _ in todo}), sentences, [s for j in cols for s in ev_spans[j]])
        start = dict(zip(cols, np.cumsum([0, *(len(ev_spans[j]) for j in cols)])))
        out = [[SupportMatch(0.0, None) for _ in chunks] for _ in sentences]
        for (i, j), span in quoted.items():
            out[i][j] = SupportMatch(1.0, span)
        for i, j in todo:
            out[i][j] = self._best_span(i, content_terms(sentences[i]), ev_spans[j], sem, int(start[j]))
        return out

    def _cosines(self, rows: list[int], sentences: Sequence[str], spans: list[Span]) -> dict[int, np.ndarray] | None:
        """Sentence index -> cosines against ``spans`` (None without an encoder)."""
        if self.encoder is None or not rows or not spans:
            return None
        vecs = self.encoder([*(sentences[i] for i in rows), *(s.text for s in spans)])
        sims = np.clip(vecs[: len(rows)] @ vecs[len(rows) :].T, 0.0, 1.0)
        return dict(zip(rows, sims))

    def _best_span(self, i: int, terms: set[str], spans: list[Span], sem: dict[int, np.ndarray] | None, offset: int) -> SupportMatch:
        best = SupportMatch(0.0, None)
        for k, span in enumerate(spans):
            lex = _lexical(terms, self._terms(span.text))
            score = lex if sem is None else 0.5 * lex + 0.5 * float(sem[i][offset + k])
            if score > best.score:
                best = SupportMatch(score, span)
        return best

    def _terms(self, text: str) -> set[str]:
        got = self._term_cache.get(text)
        if got is None:
            if len(self._term_cache) > 100_000:  # a long-lived app: bounded, refilled as needed
                self._term_cache.clear()
            got = self._term_cache[text] = content_terms(text)
        return got


def _verbatim(sentence: str, spans: Sequence[Span]) -> Span | None:
    """The first span whose text is ``sentence`` (both whitespace-normalised); for a fenced code
    block, the run of consecutive spans (its lines) whose texts joined are the block's body."""
    key = normalize_ws(sentence)
    hit = next((s for s in spans if s.text == key), None)
    if hit is not None or not (key.startswith("```") and key.endswith("```")):
        return hit
    return _run_of(normalize_ws(key[3:-3]), spans)


def _run_of(body: str, spans: Sequence[Span]) -> Span | None:
    """The first run of consecutive spans whose texts, joined by spaces, are ``body``."""
    for i, first in enumerate(spans):
        if not body.startswith(first.text):
            continue
        joined = first.text
        for j in range(i, len(spans)):
            if j > i:
                joined = f"{joined} {spans[j].text}"
            if joined == body:
                return Span(first.start, spans[j].end, body, block="code")
            if not body.startswith(joined):
                break
    return None
