"""The passage ranking's best chunks keep a place in the top-K evidence (passage_seats.py), even
when the document ranking puts their page behind a long page's sections; nothing else moves."""

from __future__ import annotations

from ragcore.retrieval.cutrules import apply_cuts
from ragcore.retrieval.passage_seats import EVIDENCE_SEATS, keep_top_with_seats
from ragcore.settings.config import RagcoreSettings
from tests.unit.retrieval.test_evidence_per_doc import _kept, _pool, cand  # the same candidates and pool


# the best passage (b1) is on a short page; a long page's four fair chunks win the document ranking
POOL = [("b1", "answer.md", 0.10), ("a1", "long.md", 0.09), ("a2", "long.md", 0.08), ("a3", "long.md", 0.08),
        ("c1", "third.md", 0.075), ("a4", "long.md", 0.07), ("a5", "long.md", 0.06)]


def test_the_best_passage_takes_the_last_place_of_the_long_page() -> None:
    pool = _pool(POOL)
    assert [c.chunk.chunk_id for c in pool[:5]] == ["a1", "a2", "a3", "a4", "a5"]  # documents first
    off = apply_cuts(pool, top_k=4, threshold=0.0, dedupe=True)
    assert _kept(off) == ["a1", "a2", "a3", "a4"]  # without seats the best passage is cut
    on = apply_cuts(pool, top_k=4, threshold=0.0, dedupe=True, seats=1)
    assert _kept(on) == ["a1", "a2", "a3", "b1"]  # still four, in rank order; a4 gave its place
    why = {c.chunk.chunk_id: c.dropped_reason for c in on}
    assert why["a4"] == why["a5"] == why["c1"] == "top_k"
    assert len(on) == len(pool)  # the lab still lists every chunk with the reason it was cut
    two = apply_cuts(pool, top_k=4, threshold=0.0, dedupe=True, seats=2)
    assert _kept(two) == ["a1", "a2", "a3", "b1"]  # the second best passage (a1) was in already


def test_seats_count_what_the_earlier_cuts_left() -> None:
    # b1 is cut by the threshold: the seat goes to the best passage still in (a1), nothing is brought back
    pool = [c if c.chunk.chunk_id != "b1" else c.evolve(dense_score=0.1) for c in _pool(POOL)]
    on = apply_cuts(pool, top_k=4, threshold=0.3, dedupe=True, seats=1)
    assert _kept(on) == ["a1", "a2", "a3", "a4"]
    assert {c.chunk.chunk_id: c.dropped_reason for c in on}["b1"] == "threshold"


def test_without_a_document_ranking_seats_change_nothing() -> None:
    pool = [cand(cid, path, s, i) for i, (cid, path, s) in enumerate(POOL, 1)]  # chunk_rank None: passages only
    assert _kept(apply_cuts(pool, top_k=3, threshold=0.0, dedupe=True, seats=2)) == ["b1", "a1", "a2"]
    assert keep_top_with_seats([], 6, 2) == []
    # more seats than top-K: the top-K best passages, never more than top-K items
    ranked = _pool(POOL)
    kept = keep_top_with_seats([type("I", (), {"chunk_rank": c.chunk_rank})() for c in ranked], 2, 5)
    assert sum(kept) == 2


def test_the_default_is_the_settings_default() -> None:
    assert RagcoreSettings().evidence_seats == EVIDENCE_SEATS


LONG = "\n\n".join(
    f"## Pool option {i}\n\nThe connection pool option {name} sets the retry count of a statement when a dropped connection "
    f"is retried. The pool applies it automatically when a connection is checked out."
    for i, name in enumerate(["size", "overflow", "timeout", "recycle", "reset", "echo", "logging", "class"], 1))
# one excellent section among unrelated ones: three chunks, so no short-document lift (documents.py)
ANSWER = ("# Retrying\n\n## Running a failed query again\n\nTo retry a statement after the database link was lost, "
          "catch the disconnect error and execute the query once more on a new link.\n"
          "\n## Log files\n\nLog lines are written to standard error unless a file is named.\n"
          "\n## Colours\n\nThe terminal output uses colours when it is a terminal.\n")


def test_a_real_search_seats_the_best_passage(ingested_engine) -> None:
    """Real parts: the bundled ONNX model, an embedded store. The long page wins the document
    ranking; the page whose passage answers best is in the evidence only with a seat."""
    eng = ingested_engine({"pool.md": "# Connection pool\n\n" + LONG, "retry.md": ANSWER}, "seats")
    q = "How do I retry a statement automatically after a dropped connection?"
    s = eng.settings.with_(top_k=3)
    res = eng.retrieve(q, s, "seats")
    best = min(res.candidates, key=lambda c: c.chunk_rank)
    first = min(res.candidates, key=lambda c: c.rank)
    assert best.chunk.path == "retry.md" and first.chunk.path == "pool.md"  # the case this is for
    assert "retry.md" not in {c.chunk.path for c in res.candidates if c.kept}
    seated = eng.retrieve(q, s.with_(evidence_seats=1), "seats")
    kept = [c for c in seated.candidates if c.kept]
    assert len(kept) == 3 and best.chunk.chunk_id in {c.chunk.chunk_id for c in kept}
    assert [c.chunk.chunk_id for c in seated.candidates] == [c.chunk.chunk_id for c in res.candidates]  # same ranking
