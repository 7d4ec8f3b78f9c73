"""The retrieval signals beyond cosine and BM25, each over a real embedded Qdrant and the real
ONNX model: field matches (title, section, anchor, file name), documents ranked before
passages (with the per-document cap), and pseudo-relevance feedback. Each test checks the
signal off (behaviour unchanged, nothing recorded) and on (what it changes, and that the
candidate or result says why)."""

from __future__ import annotations

from typing import Iterator

import pytest

from ragcore.config import RagcoreSettings
from ragcore.embeddings import OnnxMiniLM
from ragcore.pipeline import Engine
from ragcore.retrieval.documents import rank_documents
from ragcore.retrieval.expansion import expanded_query, expansion_terms
from ragcore.retrieval.fields import FieldIndex, field_texts
from ragcore.sparse import Bm25Encoder, term_index
from ragcore.types import Candidate, Chunk, RetrievalResult
from tests.conftest import write_corpus

COLLECTION = "sig"
IDENT = "SPOOL_FLUSH_INTERVAL"

FILES = {
    # The one place that defines the identifier: its heading. The body never repeats it.
    "reference/settings.md": (
        "# Settings reference\n\n"
        f"## {IDENT}\n\n"
        "Default: 30. How many seconds the print spooler keeps jobs in memory before it writes "
        "them to disk. Lower values lose less work in a crash; higher values write less often.\n\n"
        "## SPOOL_DIR\n\nThe folder where the spooler writes jobs that it has flushed.\n"
    ),
    # Pages that merely mention it, several times each, in short passages: plain BM25 prefers them.
    "releases/2.1.md": (
        "# Release 2.1\n\n## Changes\n\n"
        f"{IDENT} now defaults to 30. Set {IDENT} lower on laptops; {IDENT} was 60 before.\n"
    ),
    "howto/laptops.md": (
        "# Running on laptops\n\n## Battery\n\n"
        f"On battery, raise {IDENT}. A larger {IDENT} wakes the disk less; {IDENT} of 120 is fine.\n"
    ),
    # Pseudo-relevance feedback: the question's words lead to the first page, whose text names
    # the glorpify command; the second page is about glorpify and shares no word with the question.
    "guide/widgets.md": (
        "# Widgets\n\n## Converting widgets\n\n"
        "To convert widgets between formats, run the glorpify command on the widget file. "
        "Converting widgets keeps their colours and sizes.\n"
    ),
    "commands/glorpify.md": (
        "# glorpify\n\n## Options\n\n"
        "glorpify accepts --fast and --quiet. glorpify reads a file, glorpify writes a new one.\n"
    ),
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, encoder: OnnxMiniLM) -> Iterator[Engine]:
    root = write_corpus(tmp_path_factory.mktemp("sig-corpus"), FILES)
    e = Engine(RagcoreSettings(data_dir=tmp_path_factory.mktemp("sig-data"), collection=COLLECTION), encoder=encoder)
    e.ingest([root], COLLECTION)
    yield e
    e.close()


def search(engine: Engine, query: str, **overrides) -> RetrievalResult:
    return engine.retrieve(query, engine.settings.with_(**overrides))


def defining(result: RetrievalResult) -> Candidate:
    return next(c for c in result.candidates if c.chunk.path == "reference/settings.md" and IDENT in c.chunk.section)


# --------------------------------------------------------------------------- fields


def test_fields_off_by_default_record_nothing(engine: Engine) -> None:
    r = search(engine, f"What does {IDENT} do?")
    assert all(c.field_score is None and c.matched_fields == () for c in r.candidates)
    assert all(c.doc_rank is None and c.doc_score is None for c in r.candidates)
    assert r.expansion_terms == ()


def test_identifier_finds_its_definition_before_its_mentions(engine: Engine) -> None:
    q = f"What does {IDENT} do?"
    plain = search(engine, q, retrieval_mode="sparse")
    fielded = search(engine, q, retrieval_mode="sparse", field_weight=1.0)
    # plain BM25: the short passages that repeat the name win
    assert defining(plain).sparse_rank > 1
    top = fielded.candidates[0]
    assert top.chunk.chunk_id == defining(fielded).chunk.chunk_id
    assert top.field_score and top.field_score > 0
    assert f"section:{IDENT.lower()}" in top.matched_fields
    # the sparse score shown is the one that ranked: body BM25 plus the weighted field score
    assert top.sparse_score >= top.field_score
    assert all(c.matched_fields == () for c in fielded.candidates if not c.field_score)


def test_file_name_and_title_are_fields() -> None:
    c = Chunk("x", "text", "commands/git-config.html", "h", "html", 1, 2, ("git-config(1)", "OPTIONS"),
              anchor="_options", title="git-config(1) Manual Page")
    texts = field_texts(c)
    assert "git-config" in texts["path"] and "git_config" in texts["path"]
    fi = FieldIndex([c, Chunk("y", "text", "other.html", "h2", "html", 1, 2, ("Other",), title="Other page")])
    matched = set(fi.explain(c, "How do I config git options?"))
    assert {"path:config", "path:git", "title:config", "section:option", "anchor:option"} <= matched
    assert not any(m.endswith(":how") for m in matched)
    s = fi.score("config options")
    assert s[0] > 0 and s[1] == 0


# --------------------------------------------------------------------------- documents, then passages


def cand(cid: str, path: str, score: float, rank: int) -> Candidate:
    ch = Chunk(cid, f"text {cid}", path, "h", "markdown", rank, rank, (f"s{cid}",))
    return Candidate(ch, None, None, score, None, None, rank, rank)


def test_several_good_chunks_beat_one_lucky_chunk() -> None:
    pool = [cand("a1", "lucky.md", 0.09, 1), cand("b1", "solid.md", 0.08, 2), cand("b2", "solid.md", 0.07, 3),
            cand("b3", "solid.md", 0.06, 4), cand("c1", "other.md", 0.05, 5)]
    assert [c.chunk.chunk_id for c in rank_documents(pool, "rrf", decay=0.0, per_doc=0)] == ["a1", "b1", "b2", "b3", "c1"]
    out = rank_documents(pool, "rrf", decay=1.0, per_doc=0)
    assert [c.chunk.chunk_id for c in out] == ["b1", "b2", "b3", "a1", "c1"]
    assert [c.rank for c in out] == [1, 2, 3, 4, 5]
    assert out[0].doc_rank == 1 and out[0].doc_score == pytest.approx(0.21)
    assert out[3].doc_rank == 2 and out[3].fused_rank == 1  # its own scores and ranks are kept
    capped = rank_documents(pool, "rrf", decay=1.0, per_doc=1)
    assert [c.chunk.chunk_id for c in capped] == ["b1", "a1", "c1", "b2", "b3"]


def test_engine_ranks_documents_then_passages(engine: Engine) -> None:
    r = search(engine, "How often does the spooler write jobs to disk?", doc_decay=1.0, per_doc=1)
    ranks = [c.doc_rank for c in r.candidates]
    assert None not in ranks
    firsts = list(dict.fromkeys(c.chunk.path for c in r.candidates))
    n_docs = len(firsts)
    # per_doc=1: the first n_docs candidates are one chunk of each document, in document order
    assert [c.chunk.path for c in r.candidates[:n_docs]] == firsts
    assert [c.doc_rank for c in r.candidates[:n_docs]] == list(range(1, n_docs + 1))
    scores = [c.doc_score for c in r.candidates[:n_docs]]
    assert scores == sorted(scores, reverse=True)


# --------------------------------------------------------------------------- pseudo-relevance feedback


def test_feedback_finds_what_the_question_leaves_implicit(engine: Engine) -> None:
    q = "How do I convert widgets between formats?"
    plain = search(engine, q, retrieval_mode="sparse")
    assert all(c.chunk.path != "commands/glorpify.md" for c in plain.candidates)
    prf = search(engine, q, retrieval_mode="sparse", prf_terms=5, prf_docs=1, prf_weight=0.5)
    terms = dict(prf.expansion_terms)
    assert "glorpify" in terms and 0 < terms["glorpify"] <= 0.5
    assert not {"convert", "widget", "format"} & set(terms)  # the question's own words are not "expansion"
    hit = next(c for c in prf.candidates if c.chunk.path == "commands/glorpify.md")
    assert hit.sparse_rank is not None and hit.sparse_score > 0


def test_expanded_query_keeps_question_weights() -> None:
    q = Bm25Encoder().encode_query("convert widgets")
    ex = expanded_query(q, [("glorpify", 0.3), ("widget", 0.2)])
    w = dict(zip(ex.indices, ex.values))
    assert w[term_index("glorpify")] == 0.3 and w[term_index("widget")] == 1.0
    assert expansion_terms("x", [], lambda t: 1.0, n_terms=5, weight=0.3) == ()
