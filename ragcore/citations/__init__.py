"""Citations: numbering the evidence, and checking an answer against it.

* :class:`CitationNumberer` — a LlamaIndex ``BaseNodePostprocessor`` that numbers the evidence;
* :class:`CitationChecker` / :func:`check_answer` — parse markers, strip invalid ones, score each
  sentence's support, narrow citations to lines, flag uncited/unsupported/hedged sentences; on
  ragcore's Evidence, on LlamaIndex nodes, or on a LlamaIndex ``Response``.
"""

from importlib import import_module
from typing import Any

from ragcore.citations.checker import CheckedAnswer, CitationChecker, as_evidence, check_answer
from ragcore.citations.evidence import evidence_from_candidates
from ragcore.citations.locate import make_citation, source_url
from ragcore.citations.markers import MARKER_RE, MAX_RANGE, clean_markers, markers_in, parse_marker, strip_markers
from ragcore.citations.support import UNSUPPORTED_BELOW, SupportMatch, SupportScorer

# the LlamaIndex post-processor and node conversion load on first use (a cold question needs neither)
_LAZY = {"CitationNumberer": ".numbering", "EvidenceNumberer": ".numbering", "evidence_from_nodes": ".numbering"}

__all__ = [
    "MARKER_RE", "MAX_RANGE", "UNSUPPORTED_BELOW", "CheckedAnswer", "CitationChecker", "CitationNumberer", "EvidenceNumberer",
    "SupportMatch", "SupportScorer", "as_evidence", "check_answer", "clean_markers", "evidence_from_candidates",
    "evidence_from_nodes", "make_citation", "markers_in", "parse_marker", "source_url", "strip_markers",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
