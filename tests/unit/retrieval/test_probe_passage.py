"""The "why not retrieved?" probe finds the chunk that holds a pasted passage: verbatim first,
then near-verbatim, and only then the closest by cosine (ragcore/retrieval/probe.py, ragcore/engine/probe.py).

Issue 28: a paragraph of config.html pasted whole was matched to a chunk of api.html (cosine 0.53)
that mentions the same setting, while the sentence stands verbatim at config.html:324. The pure
matcher is tested with scores given; the probe end to end on a real collection (embedded Qdrant,
the real MiniLM model) with a chunk that is close in meaning but does not hold the passage."""

from __future__ import annotations

from ragcore.retrieval.probe import NEAR_VERBATIM, best_match, containment, normalise
from ragcore.types import Candidate, Chunk

PASSAGE = ("Don't read more than this many bytes from the incoming request data. If not set and the request "
           "does not specify a CONTENT_LENGTH, no data will be read for security.")


def _cand(cid: str, text: str, cosine: float) -> Candidate:
    chunk = Chunk(chunk_id=cid, text=text, path=f"{cid}.html", doc_hash="h", kind="html", start_line=1,
                  end_line=text.count("\n") + 1)
    return Candidate(chunk, cosine, 1.0, None, None, None, None, rank=1)


def test_normalising_ignores_typography_case_and_line_breaks() -> None:
    assert normalise("Don’t  read\nmore — `MAX_CONTENT_LENGTH`") == "don't read more - max_content_length"
    held = "MAX_CONTENT_LENGTH\nDon’t read more than this many bytes from the incoming request data. If not\nset and the " \
           "request does not specify a CONTENT_LENGTH, no data will be\nread for security.\n\nDefault: None"
    assert containment(PASSAGE, held) == 1.0


def test_the_chunk_holding_the_passage_wins_over_a_closer_cosine() -> None:
    holder = _cand("config", "MAX_CONTENT_LENGTH\nDon’t read more than this many bytes from the incoming request data. "
                   "If not\nset and the request does not specify a CONTENT_LENGTH, no data will be\nread for security.", 0.41)
    mention = _cand("api", "max_content_length: the maximum number of bytes of request data; see MAX_CONTENT_LENGTH in "
                    "the configuration for the incoming request data limit.", 0.53)
    m = best_match(PASSAGE, [mention, holder])
    assert (m.chunk.chunk_id, m.kind, m.score) == ("config", "verbatim", 1.0)


def test_a_passage_across_a_chunk_boundary_is_near_verbatim() -> None:
    first_half = _cand("a", "Don’t read more than this many bytes from the incoming request data. If not set and the", 0.5)
    most = _cand("b", "from the incoming request data. If not set and the request does not specify a CONTENT_LENGTH, "
                 "no data will be read for security.", 0.45)
    m = best_match(PASSAGE, [first_half, most])
    assert m.kind == "near-verbatim" and m.chunk.chunk_id == "b" and NEAR_VERBATIM <= m.score < 1.0


def test_without_the_text_the_closest_chunk_by_cosine() -> None:
    m = best_match(PASSAGE, [_cand("x", "Sessions last a month.", 0.2), _cand("y", "Uploads are limited in size.", 0.4)])
    assert (m.chunk.chunk_id, m.kind, m.score) == ("y", "similar", 0.4)
    assert best_match(PASSAGE, []) is None


def test_the_probe_finds_the_pasted_passage_by_its_text(make_engine, tmp_path) -> None:
    from tests.conftest import write_corpus
    from ui.probe import probe

    filler = " ".join(f"Paragraph {i} talks about request data, bytes and limits of uploads in general." for i in range(12))
    root = write_corpus(tmp_path / "c", {
        "config.md": f"# Configuration\n\n{filler}\n\nMAX_CONTENT_LENGTH: {PASSAGE} Default: None.\n",
        "api.md": "# API\n\nThe maximum number of bytes of incoming request data is read from MAX_CONTENT_LENGTH; "
                  "if it is not set, request data is not read.\n"})
    eng = make_engine()
    eng.ingest([root], "p")
    s = eng.settings.with_(collection="p")
    res = probe(eng, "How much request data is read?", s, collection="p", passage=PASSAGE.replace("Don't", "Don’t"))
    assert res.chunk is not None and res.chunk.path == "config.md" and PASSAGE in res.chunk.text
    assert (res.match_kind, res.match_score) == ("verbatim", 1.0)
