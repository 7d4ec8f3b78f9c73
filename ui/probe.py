"""The "why not retrieved?" probe's signals as the lab's table cells. The probe itself runs in the
engine (ragcore/engine/probe.py); its names are re-exported here for the pages."""

from __future__ import annotations

from ragcore.engine.probe import FIXES, ProbeResult, Verdict, probe  # noqa: F401 - the pages use them from here

from ui.render import fields_text, fmt_score

SIGNAL_HELP = {
    "field part of BM25": "The part of the chunk's BM25 from question terms in its title, section path, anchor or file name",
    "matched fields": "Which question terms matched which field, as field:term",
    "document rank": "Its document's rank (documents first, then passages)",
    "document score": "Its document's score: best chunk + decay × second + decay² × third",
    "document named by": "What names the chunk's document: the question, or one of the best passages (named pages)",
    "expansion terms in the chunk": "Which of the terms pseudo-relevance feedback added to the BM25 query the chunk contains",
    "rerank score": "The reranker's relevance score (RAGCORE_RERANK); the pool's best were re-ordered by it",
}


def signal_cells(pr: ProbeResult) -> dict[str, str]:
    """The probed chunk's retrieval signals that were on, as table cells (keys: ``SIGNAL_HELP``'s)."""
    where = " (large pool)" if pr.signals_from == "large pool" else ""
    out: dict[str, str] = {}
    if pr.field_score is not None:
        out["field part of BM25"] = f"{pr.field_score:.2f}{where}"
        out["matched fields"] = fields_text(pr.matched_fields)
    if pr.doc_rank is not None:
        out["document rank"] = f"{pr.doc_rank}{where}"
        out["document score"] = fmt_score(pr.doc_score, 4)
        out["document named by"] = ", ".join(pr.named_by) or "–"
    if pr.rerank_score is not None:
        out["rerank score"] = f"{pr.rerank_score:.3f}{where}"
    if pr.expansion_terms:
        out["expansion terms in the chunk"] = (", ".join(pr.expansion_matched) or "none") + f" (of {len(pr.expansion_terms)})"
    return out
