"""The failure analysis (ragcore/eval/misses.py): where a relevant page sits against the page
ranked first, and the class that says why. Pure functions over hand-made candidates."""

from __future__ import annotations

from ragcore.eval.misses import DocView, classify, doc_view, markdown, Miss
from ragcore.types import Candidate, Chunk
from tests.conftest import REPO


def cand(path: str, rank: int, *, dense: int | None, sparse: int | None, doc_rank: int, chunk_rank: int,
         text: str = "", named: tuple[str, ...] = ()) -> Candidate:
    chunk = Chunk(chunk_id=f"{path}{rank}", text=text, path=path, doc_hash="h", kind="html", start_line=1, end_line=1)
    return Candidate(chunk=chunk, dense_score=0.5, sparse_score=1.0, fused_score=0.1, dense_rank=dense, sparse_rank=sparse,
                     fused_rank=chunk_rank, rank=rank, doc_rank=doc_rank, chunk_rank=chunk_rank, named_by=named)


POOL = [
    cand("win.html", 1, dense=3, sparse=1, doc_rank=1, chunk_rank=2, text="cookie domain login", named=("evidence:win",)),
    cand("win.html", 2, dense=5, sparse=4, doc_rank=1, chunk_rank=3, text="session"),
    cand("rel.html", 3, dense=1, sparse=9, doc_rank=2, chunk_rank=1, text="cookie"),
]


def test_doc_view_reads_a_documents_place_from_its_chunks() -> None:
    from ragcore.encoders.sparse import tokenize

    terms = set(tokenize("login cookie domain session"))
    rel, win = doc_view("rel.html", POOL, terms), doc_view("win.html", POOL, terms)
    assert (rel.doc_rank, rel.chunk_rank, rel.dense_rank, rel.sparse_rank, rel.chunks) == (2, 1, 1, 9, 1)
    assert (win.doc_rank, win.chunk_rank, win.dense_rank, win.sparse_rank, win.chunks) == (1, 2, 3, 1, 2)
    assert win.coverage == 1.0 and rel.coverage == 0.25
    assert doc_view("absent.html", POOL, terms).doc_rank is None


def test_classes() -> None:
    def view(**kw) -> DocView:
        base = dict(path="p", doc_rank=2, chunk_rank=5, dense_rank=5, sparse_rank=5, chunks=1, coverage=1.0)
        return DocView(**{**base, **kw})

    win = view(doc_rank=1, chunk_rank=1, dense_rank=1, sparse_rank=1)
    assert classify(view(doc_rank=None), win) == "relevant page not in the pool"
    assert classify(view(), view(doc_rank=1, named_by=("evidence:x",))) == "outranked by a page the question or evidence names"
    assert classify(view(chunk_rank=1), view(doc_rank=1, chunk_rank=3)).startswith("its passage ranks first")
    assert classify(view(), win) == "outranked in both branches by a passage that matches better"
    assert classify(view(dense_rank=1, sparse_rank=9), view(doc_rank=1, chunk_rank=1, dense_rank=3, sparse_rank=1)) \
        == "outranked lexically (a page that uses the words more)"
    assert classify(view(dense_rank=9, sparse_rank=1), view(doc_rank=1, chunk_rank=1, dense_rank=1, sparse_rank=3)) \
        == "outranked semantically (a closer passage elsewhere)"


def test_markdown_counts_each_class() -> None:
    rel = DocView("rel.html", 2, 1, 1, 9, 1, 0.25)
    win = DocView("win.html", 1, 2, 3, 1, 2, 1.0, ("evidence:win",))
    md = markdown("T", [Miss("q1", "Why?", rel, win, 1, 9, classify(rel, win))], answerable=3)
    assert "1 of 3 answerable" in md and "| outranked by a page the question or evidence names | 1 |" in md


def test_no_answer_on_the_guide_quotes_a_sentence_without_the_one_it_leans_on(guide_engine) -> None:
    """``python -m ragcore.eval.fragments`` on the bundled guide's questions: answers are
    composed, units counted, and none leans on a sentence the answer does not quote before it."""
    from pathlib import Path

    from ragcore.eval.dataset import load_dataset
    from ragcore.eval.fragments import count

    dataset = load_dataset(str(REPO / "bench" / "data" / "guide-qa"))
    c = count(guide_engine, "guide", dataset, guide_engine.settings)
    assert c.answers >= 5 and c.units >= c.answers
    assert c.orphans == (), c.orphans
