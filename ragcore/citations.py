"""Numbered evidence and the citation checker.

* :class:`EvidenceNumberer` is a LlamaIndex ``BaseNodePostprocessor``: it turns the kept
  nodes into the evidence set [1..n], numbered by rank, so any LlamaIndex query engine can
  use ragcore's numbering.
* :func:`check_answer` takes an answer text and the evidence it was written from, parses
  ``[n]``, ``[n, m]`` and ``[n-m]`` markers, strips the ones that point at no evidence (and
  records them), maps each citation to path + lines + section + page, scores how well each
  sentence is supported by what it cites, and flags uncited, unsupported and hedged
  sentences.

How support is scored: a sentence's support by one piece of evidence is the best of its
sentences' scores, each ``0.5·lexical + 0.5·semantic`` where *lexical* is the share of the
answer sentence's content words (stemmed, stopwords removed) found in the evidence sentence
and *semantic* the cosine of their MiniLM embeddings (clipped to 0..1; omitted, and lexical
alone used, when no encoder is given). A sentence's support is the best over the evidence it
cites. A verbatim quote scores ~1.0; a paraphrase of the evidence ~0.6–0.8; a claim the
evidence does not make falls under :data:`UNSUPPORTED_BELOW`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence
from urllib.parse import urlencode

import numpy as np
from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from .textutil import Span, content_terms, line_of_offset, normalize_ws, sentence_spans
from .types import Candidate, Chunk, Citation, Evidence, Origin, ScoreKind, SentenceCheck, Validation

UNSUPPORTED_BELOW = 0.5
MAX_RANGE = 20  # "[1-1000]" is not a citation; ranges wider than this are treated as invalid

_LEADING_MARKERS = re.compile(r"^(?:\s*\[\s*\d[\d\s,\-–]*\])+")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|#{1,6})\s+")
# a citation marker: [1], [1, 3], [2-4]; group 1 is the body parse_marker() reads
MARKER_RE = re.compile(r"\[(\s*\d+(?:\s*[-–]\s*\d+)?(?:\s*,\s*\d+(?:\s*[-–]\s*\d+)?)*\s*)\]")
_MARKER = MARKER_RE
Encoder = Callable[[Sequence[str]], np.ndarray]


# --------------------------------------------------------------------------- numbering


def evidence_from_candidates(
    candidates: Sequence[Candidate], score_kind: ScoreKind, *, origin: Origin = "corpus", start: int = 1
) -> tuple[Evidence, ...]:
    """Kept candidates → Evidence [start..], numbered by rank (through the postprocessor)."""
    kept = [c for c in candidates if c.kept]
    nodes = [NodeWithScore(node=_node(c.chunk), score=c.score_for(score_kind)) for c in kept]
    numbered = EvidenceNumberer(start=start).postprocess_nodes(nodes)
    by_id = {c.chunk.chunk_id: c for c in kept}
    out = []
    for nws in numbered:
        c = by_id[nws.node.metadata["chunk_id"]]
        out.append(
            Evidence(
                n=nws.node.metadata["citation_n"], chunk=c.chunk, origin=origin, score=c.score_for(score_kind),
                score_kind=score_kind, dense_score=c.dense_score, sparse_score=c.sparse_score, fused_score=c.fused_score,
            )
        )
    return tuple(out)


def _node(chunk: Chunk) -> TextNode:
    return TextNode(id_=chunk.chunk_id, text=chunk.text, metadata={"chunk_id": chunk.chunk_id, "path": chunk.path})


class EvidenceNumberer(BaseNodePostprocessor):
    """Numbers nodes [start..] in the order given (the retriever's rank order)."""

    start: int = 1

    @classmethod
    def class_name(cls) -> str:
        return "EvidenceNumberer"

    def _postprocess_nodes(
        self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None
    ) -> list[NodeWithScore]:
        for i, nws in enumerate(nodes):
            nws.node.metadata["citation_n"] = self.start + i
        return nodes


# --------------------------------------------------------------------------- markers


def parse_marker(body: str) -> list[int] | None:
    """``"1, 3-4"`` → [1, 3, 4]; None if a range is reversed or too wide."""
    out: list[int] = []
    for part in body.split(","):
        part = part.strip()
        if re.fullmatch(r"\d+", part):
            out.append(int(part))
            continue
        a, b = (int(x) for x in re.split(r"\s*[-–]\s*", part))
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

    out = _MARKER.sub(repl, text)
    out = re.sub(r"[ \t]+([.,;:!?])", r"\1", out)  # "claim [9]." → "claim ."-> "claim."
    out = re.sub(r"[ \t]{2,}", " ", out)
    return out, tuple(stripped)


def markers_in(text: str) -> list[int]:
    nums: list[int] = []
    for m in _MARKER.finditer(text):
        nums.extend(parse_marker(m.group(1)) or [])
    return list(dict.fromkeys(nums))


# --------------------------------------------------------------------------- support


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


# --------------------------------------------------------------------------- checking


@dataclass(frozen=True)
class CheckedAnswer:
    text: str
    citations: tuple[Citation, ...]
    validation: Validation


def check_answer(
    text: str,
    evidence: Sequence[Evidence],
    *,
    scorer: SupportScorer | None = None,
    is_hedged: Callable[[str], bool] | None = None,
    exempt: Callable[[str], bool] | None = None,
) -> CheckedAnswer:
    """Validate an answer against its evidence (see the module docstring for the scoring).

    ``exempt`` marks sentences that need no citation (e.g. "The evidence does not say.").
    """
    scorer = scorer or SupportScorer()
    by_n = {e.n: e for e in evidence}
    clean, stripped = clean_markers(text, set(by_n))
    # Attribute markers to sentences. "Claim [1]." and "Claim. [1]" both cite [1] for that
    # claim: a marker that opens a span (or is all the span has) belongs to the sentence before.
    sent_texts: list[str] = []
    cited: list[list[int]] = []
    for span in sentence_spans(clean):
        raw = clean[span.start : span.end]
        lead = _LEADING_MARKERS.match(raw)
        if lead and cited:
            cited[-1] = list(dict.fromkeys([*cited[-1], *markers_in(lead.group(0))]))
            raw = raw[lead.end() :]
        body = re.sub(r"\s+([.,;:!?])", r"\1", _MARKER.sub("", raw)).strip()
        if not re.search(r"[A-Za-z0-9]", body):
            continue
        sent_texts.append(" ".join(_BULLET.sub("", body).split()))
        cited.append(markers_in(raw))
    needed = sorted({n for ns in cited for n in ns})
    matrix = scorer.best(sent_texts, [by_n[n].chunk for n in needed]) if needed else [[] for _ in sent_texts]
    col = {n: j for j, n in enumerate(needed)}

    checks: list[SentenceCheck] = []
    matches_for_n: dict[int, list[SupportMatch]] = {}
    for i, (sent, ns) in enumerate(zip(sent_texts, cited)):
        flags: list[str] = []
        support = 0.0
        for n in ns:
            m = matrix[i][col[n]]
            support = max(support, m.score)
            matches_for_n.setdefault(n, []).append(m)
        if not ns and not (exempt and exempt(sent)):
            flags.append("uncited")
        elif ns and support < UNSUPPORTED_BELOW:
            flags.append("unsupported")
        if is_hedged and is_hedged(sent):
            flags.append("hedged")
        checks.append(SentenceCheck(text=sent, citations=tuple(ns), support=round(support, 4), flags=tuple(flags)))

    citations = tuple(make_citation(by_n[n], matches_for_n.get(n, [])) for n in needed)
    return CheckedAnswer(clean.strip(), citations, Validation(stripped=stripped, sentences=tuple(checks)))


def make_citation(e: Evidence, matches: Sequence[SupportMatch]) -> Citation:
    """A citation narrowed to the lines of the sentences that support the citing claims.

    Narrowing needs the chunk's text lines to map 1:1 onto source lines (text, Markdown,
    reST, code, PDF pages); for HTML the chunk's whole line range is kept.
    """
    c = e.chunk
    start, end = c.start_line, c.end_line
    spans = [m.span for m in matches if m.span is not None]
    if spans and len(c.text.split("\n")) == c.end_line - c.start_line + 1:
        start = c.start_line + min(line_of_offset(c.text, sp.start) for sp in spans)
        end = c.start_line + max(line_of_offset(c.text, max(sp.end - 1, sp.start)) for sp in spans)
    support = max((m.score for m in matches), default=0.0)
    return Citation(
        n=e.n, chunk_id=c.chunk_id, path=c.path, start_line=start, end_line=end, section=c.section, page=c.page,
        anchor=c.anchor, url=source_url(c.path, start, end, c.page), retrieval_score=e.score, score_kind=e.score_kind,
        support=round(support, 4), origin=e.origin,
    )


def source_url(path: str, start: int, end: int, page: int | None = None) -> str:
    """The locator the app turns into a source-viewer link."""
    params = {"path": path, "lines": f"{start}-{end}"}
    if page is not None:
        params["page"] = str(page)
    return "?" + urlencode(params)
