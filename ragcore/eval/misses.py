"""Failure analysis: for every answerable question whose first relevant document is not ranked
first, where the relevant page sits (each branch's rank of its best chunk, its chunk and document
rank, or absent from the pool) and what beat it, with a one-line classification.

It decides which retrieval change is worth trying (bench/results/eval-misses.md). The pool is
the configuration's own; a second, deep pool (``DEEP`` candidates per branch) says how far a page
absent from the pool really is.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Iterable, Sequence

from ragcore.settings.config import RagcoreSettings
from ragcore.encoders.sparse import tokenize
from ragcore.types import Candidate
from ragcore.eval.dataset import EvalDataset, EvalQuestion
from ragcore.eval.runner import DocPathMapper, mapper_for

DEEP = 1000  # candidates per branch of the deep pool


@dataclass(frozen=True)
class DocView:
    """One document of a ranked pool, seen through its chunks there."""

    path: str
    doc_rank: int | None  # None: not in the pool
    chunk_rank: int | None  # its best chunk's rank before documents were ranked
    dense_rank: int | None  # best rank of its chunks in the dense branch
    sparse_rank: int | None
    chunks: int  # its chunks in the pool
    coverage: float  # share of the question's terms its pool chunks hold
    named_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class Miss:
    qid: str
    question: str
    relevant: DocView  # the best-placed relevant document
    winner: DocView  # the document ranked first
    deep_dense: int | None  # best dense rank of a relevant chunk in the deep pool
    deep_sparse: int | None
    kind: str


def _min(xs: Iterable[int | None]) -> int | None:
    vals = [x for x in xs if x is not None]
    return min(vals) if vals else None


def doc_view(path: str, cands: Sequence[Candidate], q_terms: set[str]) -> DocView:
    mine = [c for c in cands if c.chunk.path == path]
    if not mine:
        return DocView(path, None, None, None, None, 0, 0.0)
    held = set()
    for c in mine:
        held.update(tokenize(" ".join([c.chunk.title or "", *c.chunk.section, c.chunk.text])))
    return DocView(
        path=path, doc_rank=mine[0].doc_rank or _doc_order(cands).index(path) + 1,
        chunk_rank=_min(c.chunk_rank or c.rank for c in mine),
        dense_rank=_min(c.dense_rank for c in mine), sparse_rank=_min(c.sparse_rank for c in mine),
        chunks=len(mine), coverage=len(held & q_terms) / max(len(q_terms), 1), named_by=mine[0].named_by,
    )


def _doc_order(cands: Sequence[Candidate]) -> list[str]:
    return list(dict.fromkeys(c.chunk.path for c in sorted(cands, key=lambda c: c.rank)))


def classify(rel: DocView, win: DocView) -> str:
    """Why the relevant page is not first, from its place against the winner's."""
    if rel.doc_rank is None:
        return "relevant page not in the pool"
    if win.named_by and not rel.named_by:
        return "outranked by a page the question or evidence names"
    if rel.chunk_rank is not None and win.chunk_rank is not None and rel.chunk_rank < win.chunk_rank:
        return "its passage ranks first, the winner's page has more matching chunks"
    d_better = (win.dense_rank or 10**6) < (rel.dense_rank or 10**6)
    s_better = (win.sparse_rank or 10**6) < (rel.sparse_rank or 10**6)
    if d_better and s_better:
        return "outranked in both branches by a passage that matches better"
    if s_better:
        return "outranked lexically (a page that uses the words more)"
    return "outranked semantically (a closer passage elsewhere)"


def analyse(engine: Any, collection: str, dataset: EvalDataset, settings: RagcoreSettings) -> list[Miss]:
    mapper = mapper_for(engine, collection, dataset)
    deep = replace(settings, candidates=DEEP)
    out = []
    for q in dataset.answerable:
        if not q.relevant_docs:
            continue
        miss = _one(engine, collection, q, settings, deep, mapper)
        if miss is not None:
            out.append(miss)
    return out


def _one(engine: Any, collection: str, q: EvalQuestion, settings: RagcoreSettings, deep: RagcoreSettings,
         mapper: DocPathMapper) -> Miss | None:
    cands = engine.retrieve(q.question, settings, collection).candidates
    order = _doc_order(cands)
    rel_paths = [mapper.stored(p) for p in q.relevant_docs]
    q_terms = set(tokenize(q.question))
    views = [doc_view(p, cands, q_terms) for p in rel_paths]
    rel = min(views, key=lambda v: (v.doc_rank or 10**6, v.path))
    if rel.doc_rank == 1 or not order:
        return None
    win = doc_view(order[0], cands, q_terms)
    dcands = [c for c in engine.retrieve(q.question, deep, collection).candidates if c.chunk.path in set(rel_paths)]
    return Miss(q.id, q.question, rel, win, _min(c.dense_rank for c in dcands), _min(c.sparse_rank for c in dcands),
                classify(rel, win))


def _r(x: int | None) -> str:
    return "–" if x is None else str(x)


def markdown(title: str, misses: Sequence[Miss], mapper: DocPathMapper | None = None, answerable: int = 0) -> str:
    m = mapper or DocPathMapper()
    lines = [f"## {title}", "",
             f"{len(misses)} of {answerable} answerable questions have their first relevant document below rank 1.", "",
             "| question | relevant (doc rank; best chunk rank; dense/sparse rank; chunks; coverage) | deep dense/sparse |"
             " ranked first (chunk rank; dense/sparse; chunks; coverage; named) | class |",
             "|---|---|---|---|---|"]
    for x in misses:
        r, w = x.relevant, x.winner
        lines.append(
            f"| {x.qid}: {x.question[:60]} | {m(r.path)} (#{_r(r.doc_rank)}; {_r(r.chunk_rank)}; {_r(r.dense_rank)}/{_r(r.sparse_rank)};"
            f" {r.chunks}; {r.coverage:.2f}) | {_r(x.deep_dense)}/{_r(x.deep_sparse)} | {m(w.path)} ({_r(w.chunk_rank)};"
            f" {_r(w.dense_rank)}/{_r(w.sparse_rank)}; {w.chunks}; {w.coverage:.2f}; {','.join(w.named_by)[:40] or '–'}) | {x.kind} |"
        )
    counts: dict[str, int] = {}
    for x in misses:
        counts[x.kind] = counts.get(x.kind, 0) + 1
    lines += ["", "| class | questions |", "|---|---|"] + [f"| {k} | {n} |" for k, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ragcore.eval.misses DATASET --collection NAME [--title T]``: the table on stdout,
    with the settings of the environment (RAGCORE_DATA_DIR, RAGCORE_* signals)."""
    from ragcore.eval.analysis_cli import open_analysis

    a = open_analysis("python -m ragcore.eval.misses", main.__doc__, argv, title=True)
    try:
        found = analyse(a.engine, a.args.collection, a.dataset, a.settings)
        print(markdown(a.args.title or a.dataset.name, found, mapper_for(a.engine, a.args.collection, a.dataset), len(a.dataset.answerable)))
    finally:
        a.engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
