"""The offline default generator: an answer made only of evidence sentences, verbatim.

For every sentence of the evidence it computes

    score = 0.5·cos(question, sentence) + 0.25·lexical + 0.25·cos(question, chunk)

where *lexical* is the share of the question's content words the sentence contains and the
last term is the chunk's own retrieval cosine; pointer sentences ("See X for more details.")
keep 85% of their score (a sentence inherits some of its passage's
relevance: "Set it in settings.py" answers nothing alone but does inside the right section).
It keeps the best sentence and those close to it (≥ 80% of its score), skipping near
duplicates, up to ``max_sentences``, and puts ``[n]`` after each. Whether to answer at all is
the engine's call (``answerability.py``); the composer abstains only when the evidence has no
sentence it can quote. Deterministic: same evidence, same answer.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Generator, Sequence


from ..embeddings import OnnxMiniLM
from ..injection import looks_like_instruction
from .base import Synthesis, SynthesisJob, word_pieces
from ..store import embed_text
from ..textutil import Span, content_terms, sentence_spans
from ..types import Evidence

ABSTAIN_TEXT = "The corpus does not contain enough evidence to answer this."
# what an abstention says, by where the answer was to come from
ABSTAIN_TEXTS = {
    "corpus": ABSTAIN_TEXT,
    "selection": "The selection does not contain enough evidence to answer this.",
    "both": "Neither the selection nor the corpus contains enough evidence to answer this.",
}
_RELATIVE_KEEP = 0.8
# "See the documentation on X for more details." repeats the question's words without
# answering it: such pointer sentences keep only part of their score.
_POINTER = re.compile(r"^(?:see|refer to|read|consult)\b|\bfor (?:more|further) (?:details|information)\b|\bsee (?:the )?\S+ (?:documentation|docs|section)\b", re.I)
_POINTER_FACTOR = 0.85
_DUPLICATE_COS = 0.9


@dataclass(frozen=True)
class Picked:
    n: int
    span: Span
    score: float


@dataclass(frozen=True)
class ExtractiveResult:
    text: str
    status: str  # "ok" | "abstained"
    best_score: float
    picked: tuple[Picked, ...]
    best_selection: float | None = None  # best score among sentences of the selection, if any


def _usable(span: Span, section: tuple[str, ...]) -> bool:
    if span.heading or span.text.rstrip(".:") in section or looks_like_instruction(span.text):
        return False  # headings are not answers; instruction-like text is never quoted as one
    words = span.text.split()
    if not 4 <= len(words) <= 90:
        return False
    letters = sum(ch.isalpha() for ch in span.text)
    return letters >= 0.55 * len(span.text.replace(" ", ""))  # mostly prose, not code or tables


class ExtractiveComposer:
    name = "extractive"

    def __init__(self, encoder: OnnxMiniLM, *, max_sentences: int = 4) -> None:
        self.encoder = encoder
        self.max_sentences = max_sentences

    def score_sentences(self, question: str, evidence: Sequence[Evidence]) -> list[Picked]:
        items: list[tuple[Evidence, Span]] = [
            (e, s) for e in evidence for s in sentence_spans(e.chunk.text) if _usable(s, e.chunk.section)
        ]
        if not items:
            return []
        # a corpus chunk's cosine is already known from retrieval; only selection pieces need one
        unscored = [e for e in evidence if e.dense_score is None]
        vecs = self.encoder.encode([question, *(s.text for _, s in items), *(embed_text(e.chunk) for e in unscored)])
        q = vecs[0]
        sent_cos = vecs[1 : 1 + len(items)] @ q
        chunk_cos = {e.n: float(e.dense_score) for e in evidence if e.dense_score is not None}
        chunk_cos.update({e.n: float(v @ q) for e, v in zip(unscored, vecs[1 + len(items) :])})
        q_terms = content_terms(question)
        out = []
        for (e, span), cos in zip(items, sent_cos):
            lex = len(q_terms & content_terms(span.text)) / len(q_terms) if q_terms else 0.0
            score = 0.5 * float(cos) + 0.25 * lex + 0.25 * chunk_cos[e.n]
            if _POINTER.search(span.text):
                score *= _POINTER_FACTOR
            if e.origin == "selection":
                score += 0.05  # in "both" mode the selection is the primary source
            out.append(Picked(e.n, span, score))
        self._vecs = {id(p): v for p, v in zip(out, vecs[1 : 1 + len(items)])}
        return out

    def compose(self, question: str, evidence: Sequence[Evidence]) -> ExtractiveResult:
        scored = self.score_sentences(question, evidence)
        if not scored:
            return ExtractiveResult(ABSTAIN_TEXT, "abstained", 0.0, ())
        ranked = sorted(scored, key=lambda p: (-p.score, p.n, p.span.start))
        best = ranked[0]
        selected = {e.n for e in evidence if e.origin == "selection"}
        best_selection = max((p.score for p in scored if p.n in selected), default=None)
        chosen: list[Picked] = [best]
        for p in ranked[1:]:
            if len(chosen) >= self.max_sentences or p.score < _RELATIVE_KEEP * best.score:
                break
            v = self._vecs[id(p)]
            if any(float(v @ self._vecs[id(c)]) > _DUPLICATE_COS for c in chosen):
                continue
            chosen.append(p)
        # best sentence first, the rest in reading order (evidence number, then position)
        rest = sorted(chosen[1:], key=lambda p: (p.n, p.span.start))
        ordered = [chosen[0], *rest]
        text = " ".join(_with_marker(p) for p in ordered)
        return ExtractiveResult(text, "ok", best.score, tuple(ordered), best_selection)


def _with_marker(p: Picked) -> str:
    t = p.span.text.rstrip()
    if t and t[-1] in ".!?:;":
        return f"{t[:-1]} [{p.n}]{t[-1]}" if t[-1] != ":" else f"{t[:-1]} [{p.n}]."
    return f"{t} [{p.n}]."


class ExtractiveSynthesizer:
    """The composer behind the synthesizer interface (``composed``: an answer already composed
    for this evidence, e.g. when the selection had to be scored before deciding to answer)."""

    name = "extractive"

    def __init__(self, composer: ExtractiveComposer, composed: ExtractiveResult | None = None) -> None:
        self.composer = composer
        self.composed = composed

    def stream(self, job: SynthesisJob, cancel: threading.Event | None = None) -> Generator[str, None, Synthesis]:
        result = self.composed or self.composer.compose(job.question, job.evidence)
        yield from word_pieces(result.text)
        return Synthesis(result.text, self.name)
