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

from ..textutil import Span, content_terms, normalize_ws, sentence_spans
from ..types import Chunk

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

    def spans(self, chunk: Chunk) -> list[Span]:
        got = self._spans.get(chunk.chunk_id)
        if got is None:
            got = self._spans[chunk.chunk_id] = sentence_spans(chunk.text) or [Span(0, len(chunk.text), normalize_ws(chunk.text))]
        return got

    def best(self, sentences: Sequence[str], chunks: Sequence[Chunk]) -> list[list[SupportMatch]]:
        """For each answer sentence × each chunk: the best-supporting span and its score."""
        ev_spans = [self.spans(c) for c in chunks]
        flat = [s for spans in ev_spans for s in spans]
        sem = None
        if self.encoder is not None and sentences and flat:
            vecs = self.encoder([*sentences, *(s.text for s in flat)])
            sem = np.clip(vecs[: len(sentences)] @ vecs[len(sentences) :].T, 0.0, 1.0)
        flat_terms = [content_terms(s.text) for s in flat]
        out: list[list[SupportMatch]] = []
        for i, sent in enumerate(sentences):
            terms = content_terms(sent)
            row: list[SupportMatch] = []
            offset = 0
            for spans in ev_spans:
                best = SupportMatch(0.0, None)
                for j, span in enumerate(spans):
                    lex = _lexical(terms, flat_terms[offset + j])
                    score = lex if sem is None else 0.5 * lex + 0.5 * float(sem[i, offset + j])
                    if score > best.score:
                        best = SupportMatch(score, span)
                row.append(best)
                offset += len(spans)
            out.append(row)
        return out
