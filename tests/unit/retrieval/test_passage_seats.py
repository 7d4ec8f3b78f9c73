"""The evidence adds the best passage of a document the top-K lacks (passage_seats.py), when the
document ranking puts its page behind a long page's sections; the top-K and the ranking do not move."""

from __future__ import annotations

from ragcore.retrieval.cutrules import apply_cuts
from ragcore.retrieval.passage_seats import EVIDENCE_SEATS, keep_top_with_seats
from ragcore.settings.config import RagcoreSettings
from tests.unit.retrieval.test_evidence_per_doc import _kept, _pool, cand  # the same candidates and pool


# the best passage (b1) is on a short page; a long page's four fair chunks win the document ranking
POOL = [("b1", "answer.md", 0.10), ("a1", "long.md", 0.09), ("a2", "long.md", 0.08), ("a3", "long.md", 0.08),
        ("c1", "third.md", 0.075), ("a4", "long.md", 0.07), ("a5", "long.md", 0.06)]


def test_the_best_passage_of_a_missing_page_joins_the_top_k() -> None:
    pool = _pool(POOL)
    assert [c.chunk.chunk_id for c in pool[:5]] == ["a1", "a2", "a3", "a4", "a5"]  # documents first
    off = apply_cuts(pool, top_k=4, threshold=0.0, dedupe=True)
    assert _kept(off) == ["a1", "a2", "a3", "a4"]  # without seats the best passage is cut
    assert not any(c.seated for c in off)
    on = apply_cuts(pool, top_k=4, threshold=0.0, dedupe=True, seats=1)
    assert _kept(on) == ["a1", "a2", "a3", "a4", "b1"]  # the top-K untouched, b1 added after it, in rank order
    assert [c.chunk.chunk_id for c in on if c.seated] == ["b1"]  # the lab and the composer know why b1 is in
    why = {c.chunk.chunk_id: c.dropped_reason for c in on}
    assert why["a5"] == why["c1"] == "top_k"
    assert len(on) == len(pool)  # the lab still lists every chunk with the reason it was cut
    # a second seat goes to the next missing page among the top-K passages (c1, passage #5 > top-K 4: none)
    assert _kept(apply_cuts(pool, top_k=4, threshold=0.0, dedupe=True, seats=2)) == ["a1", "a2", "a3", "a4", "b1"]
    assert _kept(apply_cuts(pool, top_k=5, threshold=0.0, dedupe=True, seats=2)) == ["a1", "a2", "a3", "a4", "a5", "b1", "c1"]


def test_a_re_cut_without_seats_clears_the_mark() -> None:
    on = apply_cuts(_pool(POOL), top_k=4, threshold=0.0, dedupe=True, seats=1)
    again = apply_cuts(on, top_k=4, threshold=0.0, dedupe=True, seats=0)
    assert _kept(again) == ["a1", "a2", "a3", "a4"] and not any(c.seated for c in again)


def test_no_seat_for_a_page_the_top_k_holds() -> None:
    # the four best passages are all the long page's: answer.md's (#5) is not among them, so no seat
    pool = _pool([("a0", "long.md", 0.11), ("a1", "long.md", 0.10), ("a2", "long.md", 0.09), ("a3", "long.md", 0.09),
                  ("b1", "answer.md", 0.085), ("a4", "long.md", 0.07)])
    on = apply_cuts(pool, top_k=4, threshold=0.0, dedupe=True, seats=1)
    assert _kept(on) == ["a0", "a1", "a2", "a3"] and not any(c.seated for c in on)


def test_seats_count_what_the_earlier_cuts_left() -> None:
    # b1 is cut by the threshold: no seat brings it back; the seat goes to the best passage of a missing
    # page among what is left (c1, now passage #4 of the remaining: a1, a2, a3, c1)
    pool = [c if c.chunk.chunk_id != "b1" else c.evolve(dense_score=0.1) for c in _pool(POOL)]
    on = apply_cuts(pool, top_k=4, threshold=0.3, dedupe=True, seats=1)
    assert _kept(on) == ["a1", "a2", "a3", "a4", "c1"]
    assert {c.chunk.chunk_id: c.dropped_reason for c in on}["b1"] == "threshold"


def test_without_a_document_ranking_seats_change_nothing() -> None:
    pool = [cand(cid, path, s, i) for i, (cid, path, s) in enumerate(POOL, 1)]  # chunk_rank None: passages only
    assert _kept(apply_cuts(pool, top_k=3, threshold=0.0, dedupe=True, seats=2)) == ["b1", "a1", "a2"]
    assert keep_top_with_seats([], 6, 2) == []


def test_the_default_is_the_settings_default() -> None:
    assert RagcoreSettings().evidence_seats == EVIDENCE_SEATS == 1


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
    ranking; the page whose passage answers best is in the evidence only with a seat, which the
    default settings give (main before issue 28's round 4 had no seat: this failed there)."""
    eng = ingested_engine({"pool.md": "# Connection pool\n\n" + LONG, "retry.md": ANSWER}, "seats")
    q = "How do I retry a statement automatically after a dropped connection?"
    s = eng.settings.with_(top_k=3)
    off = eng.retrieve(q, s.with_(evidence_seats=0), "seats")
    best = min(off.candidates, key=lambda c: c.chunk_rank)
    first = min(off.candidates, key=lambda c: c.rank)
    assert best.chunk.path == "retry.md" and first.chunk.path == "pool.md"  # the case this is for
    assert "retry.md" not in {c.chunk.path for c in off.candidates if c.kept}
    seated = eng.retrieve(q, s, "seats")  # the default: one seat
    kept = [c for c in seated.candidates if c.kept]
    assert [c.chunk.chunk_id for c in kept[:3]] == [c.chunk.chunk_id for c in off.candidates if c.kept]
    assert len(kept) == 4 and kept[-1].chunk.chunk_id == best.chunk.chunk_id and kept[-1].seated
    assert [c.chunk.chunk_id for c in seated.candidates] == [c.chunk.chunk_id for c in off.candidates]  # same ranking
