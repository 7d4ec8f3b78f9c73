"""The citation checker: is every claim of an answer cited, and does what it cites say it?

It parses ``[n]`` markers (code untouched, see ``markers.py``), strips the ones that point at no
evidence or are malformed (and records them), maps each citation to path + the lines that
support it + section + page, scores each sentence's support by what it cites (``support.py``)
and flags uncited, unsupported and hedged sentences, and ``injected`` ones: a sentence that
cites evidence holding instruction-like text, or that reads like an instruction itself
(``injection.py``).

It takes ragcore's :class:`~ragcore.types.Evidence` or LlamaIndex ``NodeWithScore``s (numbered
by :class:`~ragcore.citations.numbering.CitationNumberer`, or by position), and checks a LlamaIndex
``Response`` in place of a text: :meth:`CitationChecker.check_response` returns the response with
the cleaned text and its verdict in ``metadata["citation_check"]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, Sequence, Union

from ragcore.safety.injection import looks_like_instruction, suspicious_evidence
from ragcore.textutil import sentence_spans
from ragcore.types import Citation, Evidence, SentenceCheck, Validation, to_jsonable
from ragcore.citations.locate import make_citation
from ragcore.citations.markers import MARKER_RE, clean_markers, markers_in, strip_markers
from ragcore.citations.support import UNSUPPORTED_BELOW, SupportMatch, SupportScorer

_LEADING_MARKERS = re.compile(r"^(?:\s*\[\s*\d[\d\s,\-–]*\])+")
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d+[.)]|#{1,6})\s+")
if TYPE_CHECKING:  # LlamaIndex is imported only when nodes or a Response are given (a cold question has none)
    from llama_index.core.base.response.schema import Response
    from llama_index.core.schema import NodeWithScore
EvidenceLike = Union[Evidence, "NodeWithScore"]


@dataclass(frozen=True)
class CheckedAnswer:
    text: str
    citations: tuple[Citation, ...]
    validation: Validation


def as_evidence(items: Sequence[EvidenceLike]) -> tuple[Evidence, ...]:
    """Evidence as given, or LlamaIndex nodes turned into numbered Evidence."""
    if all(isinstance(e, Evidence) for e in items):
        return tuple(items)  # type: ignore[arg-type]
    from llama_index.core.schema import NodeWithScore

    from ragcore.citations.numbering import evidence_from_nodes

    return evidence_from_nodes([e for e in items if isinstance(e, NodeWithScore)])


def attribute(clean: str) -> tuple[list[str], list[list[int]]]:
    """Sentences of ``clean`` (markers removed) with the numbers each cites. "Claim [1]." and
    "Claim. [1]" both cite [1] for that claim: a marker that opens a span (or is all the span
    has) belongs to the sentence before."""
    sentences: list[str] = []
    cited: list[list[int]] = []
    for span in sentence_spans(clean):
        raw = clean[span.start : span.end]
        lead = _LEADING_MARKERS.match(raw)
        if lead and cited:
            cited[-1] = list(dict.fromkeys([*cited[-1], *markers_in(lead.group(0))]))
            raw = raw[lead.end() :]
        body = strip_markers(raw).strip()
        if not any(ch.isalnum() for ch in body):  # (any script: a Japanese answer was once never checked)
            continue
        sentences.append(" ".join(_BULLET.sub("", body).split()))
        cited.append(markers_in(raw))
    return sentences, cited


# An answer sentence this long found word for word in instruction-like evidence repeats that
# evidence (a planted sentence), whichever evidence it cites: it is flagged injected.
_COPIED_MIN_CHARS = 20


def _folded(text: str) -> str:
    return " ".join(text.casefold().split())


class CitationChecker:
    def __init__(
        self, scorer: SupportScorer | None = None, *, is_hedged: Callable[[str], bool] | None = None,
        exempt: Callable[[str], bool] | None = None,
    ) -> None:
        self.scorer = scorer or SupportScorer()
        self.is_hedged = is_hedged
        self.exempt = exempt  # sentences that need no citation ("The evidence does not say.")

    def check(self, text: str, evidence: Sequence[EvidenceLike]) -> CheckedAnswer:
        ev = as_evidence(evidence)
        by_n = {e.n: e for e in ev}
        clean, stripped = clean_markers(text, set(by_n))
        sentences, cited = attribute(clean)
        needed = sorted({n for ns in cited for n in ns})
        col = {n: j for j, n in enumerate(needed)}
        # only the (sentence, evidence it cites) pairs are read below, so only those are scored
        pairs = [[col[n] for n in ns] for ns in cited]
        matrix = self.scorer.best(sentences, [by_n[n].chunk for n in needed], pairs) if needed else [[] for _ in sentences]
        suspicious = {s.n for s in suspicious_evidence(ev)}
        planted = [_folded(by_n[n].chunk.text) for n in suspicious]
        checks: list[SentenceCheck] = []
        matches_for_n: dict[int, list[SupportMatch]] = {}
        for i, (sent, ns) in enumerate(zip(sentences, cited)):
            found = [matrix[i][col[n]] for n in ns]
            for n, m in zip(ns, found):
                matches_for_n.setdefault(n, []).append(m)
            copied = len(sent) >= _COPIED_MIN_CHARS and any(_folded(sent) in text for text in planted)
            checks.append(self._sentence(sent, ns, max((m.score for m in found), default=0.0), suspicious, copied))
        citations = tuple(make_citation(by_n[n], matches_for_n.get(n, [])) for n in needed)
        validation = Validation(stripped=stripped, sentences=tuple(checks), suspicious_evidence=tuple(sorted(suspicious)))
        return CheckedAnswer(clean.strip(), citations, validation)

    def _sentence(self, sent: str, ns: list[int], support: float, suspicious: set[int], copied: bool = False) -> SentenceCheck:
        """``copied``: the sentence is found word for word in instruction-like evidence, whatever it cites."""
        flags: list[str] = []
        if suspicious.intersection(ns) or copied or looks_like_instruction(sent):
            flags.append("injected")
        if not ns and not (self.exempt and self.exempt(sent)):
            flags.append("uncited")
        elif ns and support < UNSUPPORTED_BELOW:
            flags.append("unsupported")
        if self.is_hedged and self.is_hedged(sent):
            flags.append("hedged")
        return SentenceCheck(text=sent, citations=tuple(ns), support=round(support, 4), flags=tuple(flags))  # type: ignore[arg-type]

    def check_response(self, response: Response) -> Response:
        """A copy of ``response`` with the cleaned text and the verdict in ``metadata["citation_check"]``."""
        checked = self.check(response.response or "", response.source_nodes)
        verdict = to_jsonable({"citations": checked.citations, "validation": checked.validation})
        v = checked.validation
        verdict["ok"] = not (v.unsupported or v.uncited or v.stripped or v.injected)
        return replace(response, response=checked.text, metadata={**(response.metadata or {}), "citation_check": verdict})


def check_answer(
    text: str, evidence: Sequence[EvidenceLike], *, scorer: SupportScorer | None = None,
    is_hedged: Callable[[str], bool] | None = None, exempt: Callable[[str], bool] | None = None,
) -> CheckedAnswer:
    """Validate an answer against the evidence it was written from (see the module docstring)."""
    return CitationChecker(scorer, is_hedged=is_hedged, exempt=exempt).check(text, evidence)


__all__ = ["MARKER_RE", "CheckedAnswer", "CitationChecker", "as_evidence", "attribute", "check_answer"]
