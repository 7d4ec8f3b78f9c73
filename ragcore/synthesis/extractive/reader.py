"""The learned reader: which quotable unit answers the question, and how sure that is.

The composer's hand-made score (``composer.py``) ranks units by how much they look like the
question; the sentence that *answers* is often not the one that repeats the question's words
("Can I cancel a task?": the answer names ``revoke()``, a sentence about ``abort()`` repeats
"cancel"). The reader is a logistic regression over cheap features of each unit, learned from the
labelled question sets (``bench/reader_train.py``; docs/07): the composer's own score and its parts,
the unit's place in the evidence ranking and in its chunk, heading match, rare-term overlap, a
sentence BM25, the kind of unit, and the question's answer type crossed with the unit's shape.

The answer's ``confidence`` (the chance the quoted answer holds the answering sentence) is a
logistic regression over three signals (:data:`CONF_FEATURES`), calibrated leave one corpus out.
The model is a small JSON file (``ragcore/data/reader.json``) read with numpy; it says whether the
reader ranks (``rank``) and whether a low confidence makes the answer unsure (``gate``); without
it the composer keeps its hand-made score and reports no confidence.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np

from ragcore.synthesis.extractive import answers
from ragcore.synthesis.extractive.rules import intent_of, leans_back, says_what_to_do
from ragcore.synthesis.extractive.units import Unit
from ragcore.encoders.sparse import STOPWORDS, tokenize
from ragcore.textutil import content_terms
from ragcore.types import Evidence

MODEL_PATH = Path(__file__).resolve().parents[2] / "data" / "reader.json"

FEATURES = (
    "score", "score_gap", "score_rank", "cos", "cos_gap", "lex", "chunk_cos", "chunk_rank", "fused_rel",
    "bm25", "rare", "heading", "pos_chunk", "first_in_chunk", "doc_share", "doc_first", "code", "list",
    "table", "length", "ident", "pointer", "leans", "howto_do", "default_states", "what_defines",
    "yesno_polar", "error_error", "numbers",
)

_YESNO_Q = re.compile(r"^\s*(?:is|are|can|could|do|does|did|will|would|should|may|must|has|have)\b", re.I)
_ERROR_Q = re.compile(r"\b(?:error|errors|exception|fails?|failing|failed|warning|broken|crash\w*|can.?t|cannot|doesn.?t|won.?t|problem)\b", re.I)
_POLAR = re.compile(r"\b(?:yes|no|not|cannot|can't|only|never|always|must|possible|impossible|supports?|allowed)\b", re.I)
_ERRORISH = re.compile(r"\b(?:error|exception|fail\w*|warning|raise[sd]?|invalid|missing|because|cause[sd]?)\b", re.I)
_DEFINES = re.compile(r"\b(?:is|are) (?:a|an|the)\b|\bmeans?\b|\bbecause\b|\brefers? to\b|\bso that\b", re.I)
_POINTER = re.compile(r"^(?:see|refer to|read|consult)\b|\bfor (?:more|further) (?:details|information)\b", re.I)
_IDENT = re.compile(r"`[^`]+`|\b\w+_\w+\b|\b[A-Z][a-z]+[A-Z]\w*\b|\b\w+\.\w+\b|\w\(\)|--?\w[\w-]*")
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")


@dataclass(frozen=True)
class Scored:
    """What the composer already knows of one candidate unit, for the reader's features."""

    evidence: Evidence
    unit: Unit
    score: float  # the composer's hand-made score
    cos: float  # question–unit cosine
    lex: float  # share of the question's content words the unit holds
    chunk_cos: float  # question–chunk cosine
    tokens: tuple[str, ...] = ()  # the unit's BM25 tokens (the composer has them already)


# what the confidence reads: how far the best unit leads the second (hand-made score), how many
# pages the first five evidence chunks come from, and whether the question asks for a fact
# ("what/which/where/when/who …?"). Leave one corpus out these told right answers from wrong ones
# better than the reader's own probability and the cosines (bench/results/reader.md: mean ECE over
# six sets 0.15 against 0.30): the share of answers that hold the answer differs by the kind of
# question far more than by anything a unit shows
CONF_FEATURES = ("score_gap_top2", "pages_top5", "factoid_question")
_FACTOID_Q = re.compile(r"^\s*(?:what|which|where|when|who)\b", re.I)


@dataclass(frozen=True)
class ReaderModel:
    names: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    calib: tuple[float, ...]  # confidence = sigmoid(calib[:-1] · confidence_features + calib[-1])
    bar: float  # confidence at or above which an answer is called confident (status ok)
    high: float  # confidence at or above which the level is "high"
    rank: bool = True  # whether the reader's probability ranks the units; False: it only says how sure
    gate: bool = True  # whether a low confidence makes the answer unsure (partial, closest passages)
    blend: float = 0.0  # > 0: rank by the hand-made score + blend × probability instead of the probability alone

    def probs(self, x: np.ndarray) -> np.ndarray:  # noqa: D102
        z = ((x - self.mean) / self.scale) @ self.weights + self.bias
        return 1.0 / (1.0 + np.exp(-np.clip(z, -30, 30)))

    def confidence(self, signals: Sequence[float]) -> float:
        """The calibrated chance the answer holds the answer, from :data:`CONF_FEATURES`."""
        w, b = self.calib[:-1], self.calib[-1]
        z = sum(wi * xi for wi, xi in zip(w, signals)) + b
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def level(self, confidence: float) -> str:
        return "high" if confidence >= self.high else "medium" if confidence >= self.bar else "low"


def confidence_features(question: str, items: Sequence[Scored], evidence: Sequence[Evidence]) -> tuple[float, ...]:
    """One value per :data:`CONF_FEATURES` for a question's scored units and its evidence."""
    top = sorted((s.score for s in items), reverse=True)[:2]
    gap = top[0] - top[1] if len(top) == 2 else 0.0
    pages = len({e.chunk.path for e in evidence if e.n <= 5})
    return (gap, float(pages), float(bool(_FACTOID_Q.search(question)) and "?" in question))


def model_from_dict(d: dict) -> ReaderModel:
    names = tuple(d["features"])
    if names != FEATURES or tuple(d.get("confidence_features", ())) != CONF_FEATURES:
        raise ValueError("the reader model was trained on other features; retrain it (ragcore bench reader)")
    return ReaderModel(names, np.asarray(d["mean"], float), np.asarray(d["scale"], float), np.asarray(d["weights"], float),
                       float(d["bias"]), tuple(float(c) for c in d["calib"]), float(d["bar"]), float(d["high"]),
                       bool(d.get("rank", True)), bool(d.get("gate", True)), float(d.get("blend", 0.0)))


@lru_cache(maxsize=4)
def load_model(path: str | None = None) -> ReaderModel | None:
    """The shipped model (or ``path``'s), read once; None when there is none to read."""
    p = Path(path) if path else MODEL_PATH
    if not p.is_file():
        return None
    return model_from_dict(json.loads(p.read_text(encoding="utf-8")))


def features(question: str, items: Sequence[Scored]) -> np.ndarray:
    """One row of :data:`FEATURES` per candidate unit; columns are relative within the question
    where a raw value means little across corpora (score and cosine gaps to the best)."""
    if not items:
        return np.zeros((0, len(FEATURES)))
    q_terms = content_terms(question)
    ctx = _Context(question, items, q_terms)
    rows = [ctx.row(i, s) for i, s in enumerate(items)]
    return np.asarray(rows, dtype=float)


class _Context:
    """Per-question quantities every row needs: maxima, IDF over the evidence, BM25 of units."""

    def __init__(self, question: str, items: Sequence[Scored], q_terms: set[str]) -> None:
        self.q_terms = q_terms
        intent = intent_of(question)
        self.howto, self.what = intent.howto, intent.what
        self.default_q = answers.asks_default(question)
        self.yesno = bool(_YESNO_Q.search(question))
        self.error = bool(_ERROR_Q.search(question))
        self.idents = intent.identifiers
        scores = [s.score for s in items]
        self.best_score, self.best_cos = max(scores), max(s.cos for s in items)
        order = sorted(range(len(items)), key=lambda i: -scores[i])
        self.rank = {i: r for r, i in enumerate(order)}
        chunks = {s.evidence.n: s.evidence for s in items}
        self.top_fused = max((abs(e.score or 0.0) for e in chunks.values()), default=0.0) or 1.0
        docs = [e.chunk.path for e in chunks.values()]
        self.doc_share = {d: docs.count(d) / len(docs) for d in set(docs)}
        self.first_doc = chunks[min(chunks)].chunk.path
        # each unit's tokens once; a chunk's terms are its units' (tokenizing whole chunks again costs ~10 ms)
        self.tokens = [s.tokens or tuple(tokenize(s.unit.plain)) for s in items]
        self.terms = [set(t) - STOPWORDS for t in self.tokens]
        chunk_terms: dict[int, set[str]] = {}
        for s, ts in zip(items, self.terms):
            chunk_terms.setdefault(s.evidence.n, set()).update(ts & q_terms)
        self.idf = {t: math.log(1 + len(chunks) / (1 + sum(t in ts for ts in chunk_terms.values()))) for t in q_terms}
        self.first_of_chunk = {}
        for i, s in enumerate(items):
            n = s.evidence.n
            if n not in self.first_of_chunk or s.unit.start < items[self.first_of_chunk[n]].unit.start:
                self.first_of_chunk[n] = i
        self.bm25 = _bm25(q_terms, self.tokens)
        self.headings: dict[int, set[str]] = {}

    def _heading(self, e: Evidence) -> set[str]:
        if e.n not in self.headings:
            self.headings[e.n] = content_terms(" ".join([*e.chunk.section, e.chunk.path.rsplit("/", 1)[-1]]))
        return self.headings[e.n]

    def row(self, i: int, s: Scored) -> list[float]:
        u, e = s.unit, s.evidence
        plain = u.plain
        terms = self.terms[i]
        idf_all = sum(self.idf.values()) or 1.0
        head = self._heading(e)
        kind = u.block.kind if u.block else ""
        sentence = u.sentence or ""
        return [
            s.score, s.score - self.best_score, 1.0 / (1 + self.rank[i]), s.cos, s.cos - self.best_cos, s.lex,
            s.chunk_cos, 1.0 / e.n, abs(e.score or 0.0) / self.top_fused, self.bm25[i],
            sum(self.idf[t] for t in self.q_terms & terms) / idf_all,
            len(self.q_terms & head) / len(self.q_terms) if self.q_terms else 0.0,
            u.start / max(1, len(e.chunk.text)), float(self.first_of_chunk[e.n] == i),
            self.doc_share[e.chunk.path], float(e.chunk.path == self.first_doc),
            float(kind == "code"), float(u.item or kind == "list"), float(kind == "table"),
            math.log1p(len(plain.split())) / 5, float(any(x in plain.lower() for x in self.idents)),
            float(bool(_POINTER.search(sentence))), float(leans_back(u)),
            float(self.howto and says_what_to_do(u)), float(self.default_q and answers.states_default(u)),
            float(self.what and bool(_DEFINES.search(sentence))), float(self.yesno and bool(_POLAR.search(sentence))),
            float(self.error and bool(_ERRORISH.search(sentence))), float(bool(_IDENT.search(plain)) and bool(_NUMBER.search(plain))),
        ]


def _bm25(q_terms: set[str], docs: Sequence[Sequence[str]], k1: float = 1.2, b: float = 0.75) -> list[float]:
    """Each token list's BM25 for the question's terms, IDF over these lists, scaled to the best's."""
    avg = sum(map(len, docs)) / len(docs) or 1.0
    df = {t: sum(t in d for d in docs) for t in q_terms}
    out = []
    for d in docs:
        tf = {t: d.count(t) for t in q_terms}
        out.append(sum(math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5)) * tf[t] * (k1 + 1)
                       / (tf[t] + k1 * (1 - b + b * len(d) / avg)) for t in q_terms if tf[t]))
    top = max(out, default=0.0)
    return [x / top if top > 0 else 0.0 for x in out]
