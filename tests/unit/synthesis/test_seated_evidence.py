"""A seated chunk (the best passage of a page the top-K lacked, retrieval/passage_seats.py) widens
the evidence, but the extractive answer quotes it only when it clearly answers better than the
document ranking's top-K (composer.held_back, SEAT_MARGIN). Real ONNX encoder."""

from __future__ import annotations

from ragcore.synthesis.extractive.composer import SEAT_MARGIN, ExtractiveComposer
from ragcore.types import Chunk, Evidence

Q = "How do I retry a statement after the database connection was lost?"
SEATED = ("To retry a statement after the database connection was lost, catch the disconnect error and run "
          "the statement again.")
CLOSE = "The pool retries a statement automatically after the database connection was lost at checkout."
FAR = "Pool sizes are set with the size and overflow options of the engine."


def ev(n: int, path: str, text: str, seated: bool = False) -> Evidence:
    chunk = Chunk(chunk_id=f"c{n}", text=text, path=path, doc_hash="h", kind="md", start_line=1, end_line=1)
    return Evidence(n=n, chunk=chunk, origin="corpus", score=0.5, score_kind="rrf", dense_score=0.6, seated=seated)


def _scores(composer: ExtractiveComposer, evidence: list[Evidence]) -> dict[int, float]:
    return {p.n: p.score for p in composer.score_sentences(Q, evidence)}


def test_a_seat_alone_does_not_choose_the_page_quoted(encoder) -> None:
    comp = ExtractiveComposer(encoder)
    free = [ev(1, "pool.md", CLOSE), ev(2, "retry.md", SEATED)]
    assert "[2]" in comp.compose(Q, free).text  # unseated, the better sentence's page is quoted
    held = [ev(1, "pool.md", CLOSE), ev(2, "retry.md", SEATED, seated=True)]
    s = _scores(comp, held)
    assert 0 < s[2] - s[1] < SEAT_MARGIN  # better, but not by the margin: the case this is for
    out = comp.compose(Q, held)
    assert out.status == "ok" and "[1]" in out.text and "[2]" not in out.text


def test_a_seat_that_clearly_answers_better_is_quoted(encoder) -> None:
    comp = ExtractiveComposer(encoder)
    evidence = [ev(1, "pool.md", FAR), ev(2, "retry.md", SEATED, seated=True)]
    s = _scores(comp, evidence)
    assert s[2] - s[1] >= SEAT_MARGIN
    assert comp.compose(Q, evidence).text == f"{SEATED} [2]"


def test_only_seats_quotable_still_answers(encoder) -> None:
    # nothing of the top-K can be quoted (a heading and a question): the seat is all there is
    evidence = [ev(1, "pool.md", "Is the pool reset on return?"), ev(2, "retry.md", SEATED, seated=True)]
    assert ExtractiveComposer(encoder).compose(Q, evidence).text == f"{SEATED} [2]"
