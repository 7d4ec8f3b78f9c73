"""BM25 term weights for Qdrant sparse vectors.

Documents carry the BM25 term-frequency part ``tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))``;
Qdrant's IDF modifier multiplies in the inverse document frequency at query time, so the
index never needs re-weighting when documents come and go. Queries carry weight 1 per term.

Tokenisation keeps code identifiers whole *and* split: ``AUTH_USER_MODEL`` yields
``auth_user_model``, ``auth``, ``user``, ``model``; ``django.contrib.auth`` yields the dotted
name and its parts; ``getUserName`` yields ``getusername``, ``get``, ``user``, ``name``. That is
what lets a question naming an exact identifier find the one chunk that defines it, which a
dense model (that sees word pieces) tends to miss.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable

# Identifiers: letters/digits joined by _ . or - (e.g. AUTH_USER_MODEL, django.db.models, utf-8)
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:[_.\-][A-Za-z0-9]+)*")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

STOPWORDS = frozenset(
    """a an and are as at be but by can do does for from has have how i if in into is it its
    me my no not of on or our so such that the their then there these they this to was we
    what when where which who why will with you your""".split()
)

# Bump when tokenize() or the weights change: stored sparse vectors are then recomputed on
# the next ingest (see ingest.batch_writer.index_fingerprint).
SPARSE_VERSION = "bm25-2"
K1 = 1.2
B = 0.75


def _stem(word: str) -> str:
    """A light, consistent suffix stripper: "file"/"files", "cache"/"caches"/"caching",
    "setting"/"settings", "class"/"classes" each meet.

    Plural -s (not -ss/-us/-is), then -ing/-ed, then a final -e: crude for English as a whole
    but the same for every form of a word, which is what matching needs. A full stemmer
    would buy little on technical text and would mangle identifiers; only plain lowercase
    words of four letters or more are stemmed.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suf in ("ing", "ed"):
        if word.endswith(suf) and len(word) - len(suf) >= 3:
            word = word[: -len(suf)]
            break
    if word.endswith("e") and len(word) > 3:
        word = word[:-1]
    return word


def tokenize(text: str) -> list[str]:
    out: list[str] = []
    for m in _TOKEN.finditer(text):
        out += _terms_of(m.group(0))
    return out


@lru_cache(maxsize=262_144)
def _terms_of(raw: str) -> tuple[str, ...]:
    """The terms one identifier or word yields. Cached: technical text repeats its words, and
    tokenizing is half of what writing a chunk to the store costs (its sparse vector) and part
    of every snapshot publish."""
    out: list[str] = []
    low = raw.lower()
    parts = re.split(r"[_.\-]", raw)
    if len(parts) > 1:
        out.append(low)  # the whole identifier
    for part in parts:
        subs = _CAMEL.findall(part) if not part.islower() and not part.isupper() else [part]
        if len(subs) > 1:
            out.append(part.lower())
        for sub in subs:
            sub = sub.lower()
            if sub in STOPWORDS or len(sub) < 2 and not sub.isdigit():
                continue
            out.append(_stem(sub))
    return tuple(out)


@lru_cache(maxsize=262_144)
def term_index(term: str) -> int:
    """A stable 31-bit index for a term (Qdrant sparse indices are uint32)."""
    return zlib.crc32(term.encode("utf-8")) & 0x7FFFFFFF


@dataclass(frozen=True)
class SparseVec:
    indices: tuple[int, ...]
    values: tuple[float, ...]


class Bm25Encoder:
    def __init__(self, avgdl: float = 120.0, k1: float = K1, b: float = B) -> None:
        # avgdl is a constant near the mean chunk length in tokens: keeping it fixed makes a
        # document's vector independent of the rest of the corpus, so incremental ingest
        # never has to rewrite old vectors.
        self.avgdl = avgdl
        self.k1 = k1
        self.b = b

    def encode_document(self, text: str) -> SparseVec:
        toks = tokenize(text)
        dl = len(toks)
        tf = Counter(term_index(t) for t in toks)
        norm = self.k1 * (1 - self.b + self.b * dl / self.avgdl)
        items = sorted((i, c * (self.k1 + 1) / (c + norm)) for i, c in tf.items())
        return SparseVec(tuple(i for i, _ in items), tuple(v for _, v in items))

    def encode_documents(self, texts: Iterable[str]) -> list[SparseVec]:
        return [self.encode_document(t) for t in texts]

    def encode_query(self, text: str) -> SparseVec:
        idx = sorted({term_index(t) for t in tokenize(text)})
        return SparseVec(tuple(idx), tuple(1.0 for _ in idx))
