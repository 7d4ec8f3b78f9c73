"""What the MCP tools return: plain JSON objects in which every piece of evidence carries a stable
id and a locator an agent can cite, so that ``ragcore.agents`` can check the agent's final text
against exactly what the tools showed it.

* an **id** is ``ev-`` and the first 12 hex digits of the chunk's id (sha256 of path, span and
  text: the same chunk has the same id in every run and on every server of the same corpus);
  a ``read`` range gets an id of its own, from its collection, path, lines and text;
* a **locator** is ``ragcore://COLLECTION/PATH#L10-L20`` (the resource ``read`` serves).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any, Sequence
from urllib.parse import quote

from ragcore.service.wire import json_bytes
from ragcore.types import Answer, Candidate, Chunk, Evidence, RetrievalResult

ID_PREFIX = "ev-"
ID_HEX = 12
SNIPPET_CHARS = 240
MAX_CUT_LISTED = 20  # cut candidates listed one by one (the rest are only counted by reason)
HOW_TO_CITE = ("Cite evidence by its id in square brackets after the sentence it supports, e.g. "
               "'Tokens expire after 10 minutes [ev-3f2a9b1c0d4e].' Only ids returned by a ragcore tool count.")


def json_text(obj: dict[str, Any]) -> str:
    """A tool's output as compact JSON text (orjson, as the HTTP API writes its replies)."""
    return json_bytes(obj).decode("utf-8")


def evidence_id(chunk_id: str) -> str:
    return ID_PREFIX + chunk_id[:ID_HEX]


def range_id(collection: str, path: str, start: int, end: int, text: str) -> str:
    digest = hashlib.sha256("\x1f".join((collection, path, str(start), str(end), text)).encode("utf-8")).hexdigest()
    return ID_PREFIX + digest[:ID_HEX]


def locator(collection: str, path: str, start: int, end: int) -> str:
    return f"ragcore://{collection}/{quote(path, safe='/')}#L{start}-L{end}"


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _where(collection: str, c: Chunk) -> dict[str, Any]:
    return {"id": evidence_id(c.chunk_id), "path": c.path, "start_line": c.start_line, "end_line": c.end_line,
            "locator": locator(collection, c.path, c.start_line, c.end_line), "section": list(c.section),
            "page": c.page, "kind": c.kind}


def _scores(c: Candidate) -> dict[str, float | None]:
    return {"cosine": _r(c.dense_score), "bm25": _r(c.sparse_score), "fused": _r(c.fused_score)}


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def search_output(collection: str, result: RetrievalResult) -> dict[str, Any]:
    """``search``: the kept evidence (full text: what the agent reads and cites) with every score
    and its kind, then the cut candidates with why they were cut (as ``/api/retrieve`` has them)."""
    kind = result.rank_score_kind
    kept = [{**_where(collection, c.chunk), "rank": c.rank, "score": _r(c.score_for(kind)), "score_kind": kind,
             "scores": _scores(c), "snippet": snippet(c.chunk.text), "text": c.chunk.text} for c in result.candidates if c.kept]
    cut = [c for c in result.candidates if not c.kept]
    listed = [{**_where(collection, c.chunk), "rank": c.rank, "score": _r(c.score_for(kind)), "score_kind": kind,
               "cut_reason": c.dropped_reason, "snippet": snippet(c.chunk.text)} for c in cut[:MAX_CUT_LISTED]]
    return {"collection": collection, "question": result.query, "retrieval_mode": result.retrieval_mode,
            "score_kind": kind, "evidence": kept, "cut": listed,
            "cut_counts": dict(Counter(str(c.dropped_reason) for c in cut)), "notes": list(result.notes),
            "how_to_cite": HOW_TO_CITE}


def _evidence_item(collection: str, e: Evidence) -> dict[str, Any]:
    return {**_where(collection, e.chunk), "n": e.n, "origin": e.origin, "score": _r(e.score), "score_kind": e.score_kind,
            "text": e.chunk.text}


def ask_output(collection: str, answer: Answer) -> dict[str, Any]:
    """``ask``: the Answer's text with its [n] markers, each citation with the evidence id and
    locator it stands for, the evidence itself, status, confidence (when the Answer has one)."""
    ids = {e.n: evidence_id(e.chunk.chunk_id) for e in answer.evidence}
    cites = [{"n": c.n, "id": ids.get(c.n, evidence_id(c.chunk_id)), "path": c.path, "start_line": c.start_line,
              "end_line": c.end_line, "locator": locator(collection, c.path, c.start_line, c.end_line),
              "section": list(c.section), "page": c.page, "support": c.support, "retrieval_score": _r(c.retrieval_score),
              "score_kind": c.score_kind, "origin": c.origin} for c in answer.citations]
    v = answer.validation
    out = {"collection": collection, "question": answer.question, "answer": answer.answer, "status": answer.status,
           "citations": cites, "evidence": [_evidence_item(collection, e) for e in answer.evidence],
           "validation": {"stripped": list(v.stripped), "unsupported": list(v.unsupported), "uncited": list(v.uncited),
                          "hedged": list(v.hedged)},
           "how_to_cite": HOW_TO_CITE + " The [n] markers in 'answer' are this answer's own numbering: cite the ids."}
    confidence = answer.metadata.get("confidence")
    if confidence is not None:
        out["confidence"] = confidence
    if answer.error_message:
        out["error_message"] = answer.error_message
    return out


def read_output(collection: str, path: str, lines: Sequence[tuple[int, str]], last_line: int,
                chunks: Sequence[Chunk]) -> dict[str, Any]:
    """``read``: the lines asked for, one id for the range, and the ids of the chunks it overlaps."""
    start, end = lines[0][0], lines[-1][0]
    text = "\n".join(t for _, t in lines)
    kind = next((c.kind for c in chunks), "text")
    return {"collection": collection, "path": path, "start_line": start, "end_line": end, "last_line": last_line,
            "id": range_id(collection, path, start, end, text), "locator": locator(collection, path, start, end),
            "kind": kind, "lines": [{"n": n, "text": t} for n, t in lines], "text": text,
            "chunks": [{"id": evidence_id(c.chunk_id), "start_line": c.start_line, "end_line": c.end_line}
                       for c in chunks if c.end_line >= start and c.start_line <= end],
            "how_to_cite": HOW_TO_CITE}
