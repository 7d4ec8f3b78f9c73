"""The Retrieval lab's chunk table: every candidate with its scores, as HTML (``ui/htmltable.py``).

One row per candidate in the order asked for (rank by default), kept rows first-class and cut rows
dimmed with their reason on hover; the signal columns (field, doc, doc #) only while their signal
is on. Locator, section and passage are shortened to fit 1280 px, in full on hover; the analyst
reads a whole chunk by picking its rank below the table.
"""

from __future__ import annotations

from typing import Any

from ragcore.types import Candidate, RetrievalResult

from .htmltable import CUT_LABELS, Column, cut_reason, table_html

TABLE_HEIGHT_PX = 460  # about 17 rows; the rest scroll under a header that stays in view
ORDERS = {"rank": "rank", "cosine": "cosine", "BM25": "BM25", "fused": "fused", "rerank": "rerank"}  # what the rows can be sorted by


def lab_columns(res: RetrievalResult, *, fusion: str, fields_on: bool, docs_on: bool) -> list[Column]:
    """The columns, narrowest first; at 1280 px the table is ~818 px wide beside the sidebar (measured
    in chromium): the fixed ones take ~300 px (+150 with every signal on), the text ones share the rest."""
    fused_kind = "RRF" if fusion == "rrf" else "weighted"
    cols = [
        Column("rank", "rank", "3.2em", "num", f"Rank by the {res.rank_score_kind} score ({res.retrieval_mode} mode)"),
        Column("status", "kept / cut", "6.8em", "st", "kept [n]: evidence number given to the composer (seat: added "
               "after the top-K, the best passage of a page the top-K lacked); cut: by the "
               "threshold, dedupe (another chunk of the section won) or top-K (hover a cut row for why)"),
        Column("cosine", "cosine", "4.3em", "num", "Dense score: cosine similarity of question and chunk (−1..1). "
               "The threshold applies to this.", digits=3),
        Column("BM25", "BM25", "3.9em", "num", "Sparse score: BM25 with Qdrant's IDF (0 = no shared terms)", digits=2),
        Column("fused", "fused", "4.7em", "num", f"{fused_kind} fusion score", digits=4),
    ]
    if any(c.rerank_score is not None for c in res.candidates):  # a reranker ran (RAGCORE_RERANK)
        cols.append(Column("rerank", "rerank", "4.3em", "num", "The reranker's relevance score; the pool's best were "
                           "re-ordered by it (RAGCORE_RERANK_THRESHOLD can cut on it)", digits=3))
    if fields_on:
        cols.append(Column("field", "field", "3.8em", "num", "The part of BM25 from question terms in the chunk's title, "
                           "section path, anchor or file name (field weight on)", digits=2))
    if docs_on:
        doc_digits = 3 if res.rank_score_kind == "cosine" else 2 if res.rank_score_kind == "bm25" else 4
        cols += [
            Column("doc score", "doc", "4.3em", "num", f"The chunk's document's score: its best chunks' {res.rank_score_kind} "
                   "scores, best + decay × second + decay² × third", digits=doc_digits),
            Column("doc #", "doc #", "3.6em", "num", "The document's rank: documents first, then their passages"),
        ]
    # with every signal on, locator and section give way so the scores stay in view
    loc, sec = ("22%", "14%") if fields_on or docs_on else ("25%", "17%")
    return cols + [
        Column("locator", "locator", loc, "loc", "path:lines, shortened; hover for the full text", long="locator"),
        Column("section", "section", sec, "sec", "Section path, shortened; hover for the full text", long="section"),
        Column("text", "passage", "auto", "txt", "The chunk's text; hover for more, pick its rank below to read all of it", long="text"),
    ]


def lab_rows(res: RetrievalResult, order: str = "rank") -> list[dict[str, Any]]:
    """One row per candidate, full text (the table shortens it), sorted by ``order`` (a score: highest
    first, absent last; ties keep rank order)."""
    rows, n = [], 0
    for c in res.candidates:
        n += c.kept
        rows.append(_row(c, n))
    key = ORDERS.get(order, "rank")
    if key != "rank":
        rows.sort(key=lambda r: (r[key] is None, -(r[key] or 0.0)))
    return rows


def _row(c: Candidate, n: int) -> dict[str, Any]:
    ch = c.chunk
    reason = c.dropped_reason or "top_k"
    return {
        "rank": c.rank, "status": (f"kept [{n}] seat" if c.seated else f"kept [{n}]") if c.kept
        else CUT_LABELS.get(reason, f"cut: {reason}"),
        "kept": c.kept, "cut": "" if c.kept else reason, "seated": c.seated,
        "cosine": c.dense_score, "BM25": c.sparse_score, "fused": c.fused_score, "rerank": c.rerank_score,
        "field": c.field_score, "doc score": c.doc_score, "doc #": c.doc_rank,
        "locator": ch.locator.split("#")[0], "section": ch.section_label, "text": ch.text,
    }


def lab_table_html(
    res: RetrievalResult, *, fusion: str, order: str = "rank", fields_on: bool = False, docs_on: bool = False,
) -> str:
    return table_html(
        lab_rows(res, order), lab_columns(res, fusion=fusion, fields_on=fields_on, docs_on=docs_on), box="rc-lab",
        row_class=lambda r: "kept" if r["kept"] else "cut",
        title_of=cut_reason,
        max_height_px=TABLE_HEIGHT_PX, narrow=True,
    )
