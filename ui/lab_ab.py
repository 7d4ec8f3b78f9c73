"""The Retrieval lab's A/B comparison: what configuration B keeps that A does not, and the other way round.

The table is HTML (``ui/htmltable.py``), like the lab's chunk table: an absent value (a chunk only one
side keeps has no rank or score on the other) reads "–". ``st.dataframe`` drew such a cell as "None".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragcore.types import Candidate, RetrievalResult

from .htmltable import Column, table_html


@dataclass(frozen=True)
class ABComparison:
    rows: tuple[dict[str, Any], ...]  # one per chunk kept by A or B: A's order first, then B's additions
    evidence_a: int
    evidence_b: int
    overlap: int
    added: int  # kept by B only
    dropped: int  # kept by A only
    moved: int  # kept by both at different positions
    kind_a: str  # what each side ranks by (cosine, bm25, fused…)
    kind_b: str

    @property
    def jaccard(self) -> float | None:
        union = self.evidence_a + self.evidence_b - self.overlap
        return self.overlap / union if union else None


def _change(a: int | None, b: int | None) -> str:
    if a and b:
        return "same" if a == b else (f"moved up {a - b}" if b < a else f"moved down {b - a}")
    return "only in A (dropped by B)" if a else "only in B (added by B)"


def compare(ra: RetrievalResult, rb: RetrievalResult) -> ABComparison:
    ka: dict[str, tuple[int, Candidate]] = {c.chunk.chunk_id: (i, c) for i, c in enumerate(ra.kept, 1)}
    kb: dict[str, tuple[int, Candidate]] = {c.chunk.chunk_id: (i, c) for i, c in enumerate(rb.kept, 1)}
    both = ka.keys() & kb.keys()
    rows = []
    for cid in [*ka, *(c for c in kb if c not in ka)]:
        a, b = ka.get(cid), kb.get(cid)
        cand = (a or b)[1]  # type: ignore[index]
        rows.append({
            "change": _change(a and a[0], b and b[0]), "A [n]": a[0] if a else None, "B [n]": b[0] if b else None,
            "locator": cand.chunk.locator.split("#")[0], "section": cand.chunk.section_label, "cosine": cand.dense_score,
            "A score": a[1].score_for(ra.rank_score_kind) if a else None,
            "B score": b[1].score_for(rb.rank_score_kind) if b else None,
        })
    return ABComparison(
        rows=tuple(rows), evidence_a=len(ka), evidence_b=len(kb), overlap=len(both), added=len(kb.keys() - ka.keys()),
        dropped=len(ka.keys() - kb.keys()), moved=sum(1 for cid in both if ka[cid][0] != kb[cid][0]),
        kind_a=ra.rank_score_kind, kind_b=rb.rank_score_kind,
    )


def ab_columns(cmp: ABComparison) -> list[Column]:
    return [
        Column("change", "change", "12.5em", "st", "Where B puts the chunk compared with A"),
        Column("A [n]", "A [n]", "3.6em", "num", "Its evidence number under A (– : A does not keep it)"),
        Column("B [n]", "B [n]", "3.6em", "num", "Its evidence number under B (– : B does not keep it)"),
        Column("locator", "locator", "30%", "loc", "path:lines, shortened; hover for the full text", long="locator"),
        Column("section", "section", "auto", "sec", "Section path, shortened; hover for the full text", long="section"),
        Column("cosine", "cosine", "4.3em", "num", "Cosine similarity of question and chunk", digits=3),
        Column("A score", f"A ({cmp.kind_a})", "6.5em", "num", f"A's ranking score ({cmp.kind_a})", digits=4),
        Column("B score", f"B ({cmp.kind_b})", "6.5em", "num", f"B's ranking score ({cmp.kind_b})", digits=4),
    ]


def ab_table_html(cmp: ABComparison) -> str:
    return table_html(cmp.rows, ab_columns(cmp), box="rc-ab", narrow=True)
