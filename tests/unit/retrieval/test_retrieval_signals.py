"""The retrieval signals beyond cosine and BM25, each over a real embedded Qdrant and the real
ONNX model: field matches (title, section, anchor, file name), documents ranked before
passages (with the per-document cap), pseudo-relevance feedback, and the document signals
(title and centroid cosines, documents named by the question or its evidence). Each test checks the
signal off (behaviour unchanged, nothing recorded) and on (what it changes, and that the
candidate or result says why)."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pytest

from ragcore.settings.config import ConfigError, RagcoreSettings
from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.engine.engine import Engine
from ragcore.retrieval.documents import rank_documents
from ragcore.retrieval.expansion import expanded_query, expansion_terms
from ragcore.retrieval.fields import FieldIndex, field_texts
from ragcore.storage.name_index import command_names, heading_identifiers, text_names
from ragcore.encoders.sparse import Bm25Encoder, term_index
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
def engine(ingested_engine) -> Engine:
    return ingested_engine(FILES, COLLECTION)


def search(engine: Engine, query: str, **overrides) -> RetrievalResult:
    """Every signal off unless the test turns it on (documents ranked, named pages and the title
    cosine are on by default: test_defaults_rank_documents_and_nothing_else)."""
    overrides = {"doc_decay": 0.0, "named_weight": 0.0, "doc_title_weight": 0.0, **overrides}
    return engine.retrieve(query, engine.settings.with_(**overrides))


def defining(result: RetrievalResult) -> Candidate:
    return next(c for c in result.candidates if c.chunk.path == "reference/settings.md" and IDENT in c.chunk.section)


# --------------------------------------------------------------------------- fields


def test_defaults_rank_documents_and_nothing_else(engine: Engine) -> None:
    s = RagcoreSettings()
    assert (s.doc_decay, s.named_weight) == (1.0, 0.6)  # helped on both django-docs-qa and git-docs-qa
    assert s.doc_title_weight == 0.3  # raised nDCG@10 and citation precision on both (bench/results/eval-signals-r.md)
    assert (s.field_weight, s.prf_terms, s.doc_centroid_weight) == (0.0, 0, 0.0)
    r = engine.retrieve(f"What does {IDENT} do?", engine.settings.with_(doc_decay=s.doc_decay, named_weight=s.named_weight))
    assert all(c.field_score is None and c.matched_fields == () for c in r.candidates)
    assert all(c.doc_rank is not None and c.chunk_rank is not None for c in r.candidates)
    assert r.expansion_terms == ()
    plain = search(engine, f"What does {IDENT} do?")  # all off: chunks ranked alone, nothing recorded
    assert all(c.doc_rank is None and c.doc_score is None and c.chunk_rank is None for c in plain.candidates)


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


# --------------------------------------------------------------------------- document signals

CMD_COLLECTION = "cmds"
CMD_FILES = {
    # The guide answers in prose and names the command; the command's own page shares no word
    # with the question. Five tool-* pages make "tool-" a command namespace.
    "guide/sharing.md": (
        "# Sharing your work\n\n## Sending changes to the team\n\n"
        "When your changes are finished, share them with the team: run tool push from the project "
        "folder and every new snapshot goes to the team server.\n"
    ),
    "commands/tool-push.md": "# tool-push\n\n## Description\n\nUploads local snapshots to a remote server. Accepts --force and --dry-run.\n",
    "commands/tool-pull.md": "# tool-pull\n\n## Description\n\nDownloads snapshots from a remote server into the local store.\n",
    "commands/tool-init.md": "# tool-init\n\n## Description\n\nCreates an empty project folder with a snapshot store.\n",
    "commands/tool-log.md": "# tool-log\n\n## Description\n\nLists snapshots, newest first, with their authors and dates.\n",
    "commands/tool-diff.md": "# tool-diff\n\n## Description\n\nShows what changed between two snapshots, line by line.\n",
    "notes/team-meetings.md": "# Team meetings\n\n## Weekly\n\nThe team meets weekly to share what changed and what is finished.\n",
}


@pytest.fixture(scope="module")
def cmd_engine(tmp_path_factory: pytest.TempPathFactory, encoder: OnnxMiniLM) -> Iterator[Engine]:
    root = write_corpus(tmp_path_factory.mktemp("cmd-corpus"), CMD_FILES)
    e = Engine(RagcoreSettings(data_dir=tmp_path_factory.mktemp("cmd-data"), collection=CMD_COLLECTION), encoder=encoder)
    e.ingest([root], CMD_COLLECTION)
    yield e
    e.close()


def doc_rank_of(result: RetrievalResult, path: str) -> int:
    return next(c.doc_rank for c in result.candidates if c.chunk.path == path)


def test_document_signals_off_by_default(engine: Engine) -> None:
    s = RagcoreSettings()
    assert s.doc_centroid_weight == 0.0
    r = search(engine, f"What does {IDENT} do?", doc_decay=1.0)
    assert all(c.doc_title_cosine is None and c.doc_centroid_cosine is None and c.named_by == () for c in r.candidates)


@pytest.mark.parametrize("key,bad", [("doc_title_weight", -0.1), ("doc_centroid_weight", 11.0), ("named_weight", -1.0),
                                     ("named_evidence", 0)])
def test_document_signal_settings_validate(key: str, bad: float) -> None:
    with pytest.raises(ConfigError):
        RagcoreSettings(**{key: bad})


def test_command_names_need_a_namespace_and_keep_case() -> None:
    paths = [f"man/git-{c}.html" for c in ("clone", "fetch", "pull", "push", "rebase")] + ["new-contributors.html", "django-admin.html"]
    names = command_names(paths)
    assert names["git-clone"] == "man/git-clone.html"
    assert "new-contributors" not in names and "django-admin" not in names  # no namespace: English, not a command
    assert "git-clone" in text_names("then run git clone with the URL")
    assert "django-admin" not in text_names("open the Django admin site")  # the site, not the command
    assert heading_identifiers("DJANGO_SETTINGS_MODULE") == {"DJANGO_SETTINGS_MODULE"}
    assert heading_identifiers("django-users") == {"django-users"}
    assert heading_identifiers("Getting started") == set()


def test_evidence_names_the_command_page(cmd_engine: Engine) -> None:
    q = "How do I share my finished changes with the team?"
    plain = cmd_engine.retrieve(q, cmd_engine.settings.with_(doc_decay=1.0, named_weight=0.0))
    named = cmd_engine.retrieve(q, cmd_engine.settings.with_(doc_decay=1.0, named_weight=1.0))
    assert doc_rank_of(plain, "guide/sharing.md") == 1
    assert doc_rank_of(named, "commands/tool-push.md") < doc_rank_of(plain, "commands/tool-push.md")
    push = next(c for c in named.candidates if c.chunk.path == "commands/tool-push.md")
    assert push.named_by == ("evidence:tool-push",)
    assert all(c.named_by == () for c in named.candidates if c.chunk.path != "commands/tool-push.md")


def test_question_names_the_identifier_heading(engine: Engine) -> None:
    q = f"Why is {IDENT} ignored?"
    plain = search(engine, q, retrieval_mode="sparse")
    named = search(engine, q, retrieval_mode="sparse", named_weight=1.0)  # ranks documents by their best chunk
    assert plain.candidates[0].chunk.path != "reference/settings.md"  # the pages repeating the name win on BM25
    assert doc_rank_of(named, "reference/settings.md") == 1 and named.candidates[0].chunk.path == "reference/settings.md"
    assert defining(named).named_by == (f"question:{IDENT}",)


def test_title_and_centroid_cosines_rank_documents(engine: Engine, encoder: OnnxMiniLM) -> None:
    q = "Which settings control the print spooler?"
    r = search(engine, q, doc_decay=1.0, doc_title_weight=10.0, doc_centroid_weight=0.001)
    qv = encoder.encode([q])[0]
    by_doc = {c.chunk.path: c for c in r.candidates}
    assert len(by_doc) >= 3
    for c in by_doc.values():
        assert c.doc_title_cosine == pytest.approx(float(encoder.encode([c.chunk.title])[0] @ qv), abs=1e-4)
    # a title weight this large orders the documents by their titles' cosines
    order = list(dict.fromkeys(c.chunk.path for c in r.candidates))
    assert order == sorted(order, key=lambda p: -by_doc[p].doc_title_cosine)


def test_title_cosines_alone_come_from_the_pool_without_building_profiles(engine: Engine, encoder: OnnxMiniLM) -> None:
    """With the centroid off (the default), the title cosine is read from the pool's own chunks'
    titles: the same cosines, and no profile of every document is built (a scan of every chunk,
    0.3-0.7 s on a cold 7k-chunk question)."""
    q = "Which settings control the print spooler?"
    engine.hybrid_search._doc_signals._profiles.clear()
    r = search(engine, q, doc_decay=1.0, doc_title_weight=0.3)
    assert engine.hybrid_search._doc_signals._profiles == {}
    qv = encoder.encode([q])[0]
    titled = [c for c in r.candidates if c.chunk.title]
    assert titled
    for c in titled:
        assert c.doc_title_cosine == pytest.approx(float(encoder.encode([c.chunk.title])[0] @ qv), abs=1e-4)
    both = search(engine, q, doc_decay=1.0, doc_title_weight=0.3, doc_centroid_weight=1e-9)  # the profile's path
    assert {c.chunk.path: c.doc_title_cosine for c in both.candidates} == \
        pytest.approx({c.chunk.path: c.doc_title_cosine for c in r.candidates}, abs=1e-6)


def test_centroid_is_the_mean_chunk_vector(engine: Engine, encoder: OnnxMiniLM) -> None:
    q = "laptop battery"
    r = search(engine, q, doc_decay=1.0, doc_centroid_weight=1.0)
    idx = engine.hybrid_search.index(COLLECTION)
    qv = encoder.encode([q])[0]
    for c in r.candidates:
        rows = np.array([i for i, x in enumerate(idx.chunks) if x.path == c.chunk.path])
        mean = idx.dense[rows].mean(axis=0)
        assert c.doc_centroid_cosine == pytest.approx(float(mean @ qv / np.linalg.norm(mean)), abs=1e-4)
        assert c.doc_title_cosine is None  # its weight is 0: not recorded


def test_document_signals_are_sweepable() -> None:
    from ragcore.eval.runner import CONFIG_KEYS
    from ragcore.eval.sweep import SweepError, parse_sweep

    assert parse_sweep("named_weight=0,0.6").values == (0.0, 0.6)
    assert parse_sweep("doc_title_weight=0,1").values == (0.0, 1.0)
    assert parse_sweep("named_evidence=5,10").values == (5, 10)
    assert {"doc_title_weight", "doc_centroid_weight", "named_weight", "named_evidence"} <= set(CONFIG_KEYS)
    with pytest.raises(SweepError):
        parse_sweep("named_weights=1")  # a typo names no setting


def test_support_does_not_depend_on_how_documents_are_ranked(engine: Engine) -> None:
    """Whether to answer is the corpus's call, not the page order's: the support score reads the
    passage ranking (chunk_rank), so ranking documents moves no abstention."""
    q = f"Why is {IDENT} ignored?"
    off = engine.settings.with_(doc_decay=0.0, named_weight=0.0)
    on = engine.settings.with_(doc_decay=1.0, named_weight=1.0)
    a, b = engine.support(q, off), engine.support(q, on)
    assert (a.score, a.lexical, a.evidence_cosine) == (b.score, b.lexical, b.evidence_cosine)
    moved = search(engine, q, doc_decay=1.0, named_weight=1.0)
    assert any(c.rank != c.chunk_rank for c in moved.candidates)  # the order did change


def test_candidate_evolve_equals_dataclasses_replace() -> None:
    import dataclasses

    from ragcore.types import Candidate, Chunk

    c = Candidate(Chunk(chunk_id="a" * 32, text="t", path="p.md", doc_hash="h", kind="markdown", start_line=1, end_line=1),
                  0.5, 1.0, 0.02, 1, 2, 1, 1, matched_fields=("path:p",))
    changes = {"rank": 3, "doc_score": 0.7, "kept": False, "dropped_reason": "top_k"}
    assert c.evolve(**changes) == dataclasses.replace(c, **changes)
    assert c.with_cut("threshold") == dataclasses.replace(c, kept=False, dropped_reason="threshold")
    assert c.rank == 1 and c.kept  # the original is untouched
    with pytest.raises(TypeError, match="rnak"):
        c.evolve(rnak=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.evolve(rank=2).rank = 5  # type: ignore[misc]
