"""The citation post-processor: marker parsing and cleaning, support scoring and flags,
line narrowing, evidence numbering and source URLs — on hand-made Chunk/Evidence objects."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import numpy as np
import pytest
from llama_index.core.schema import NodeWithScore, TextNode

from ragcore.citations import (
    MAX_RANGE,
    UNSUPPORTED_BELOW,
    EvidenceNumberer,
    SupportMatch,
    SupportScorer,
    check_answer,
    clean_markers,
    evidence_from_candidates,
    markers_in,
    parse_marker,
    source_url,
)
from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.safety.guardrails import is_hedged
from ragcore.textutil import content_terms, normalize_ws
from ragcore.types import Candidate, Chunk, Evidence

# A Markdown chunk: lines 10..15 of docs/scores guide.md, one line per source line.
MD_TEXT = (
    "# Threshold\n"  # 10
    "\n"  # 11
    "The threshold applies to the cosine similarity between question and chunk.\n"  # 12
    "It does not apply to the BM25 score or to the fused score.\n"  # 13
    "\n"  # 14
    "Top-K is the number of chunks kept as evidence after all other cuts. The default top-K is six."  # 15
)
MD = Chunk(
    chunk_id="c" * 32, text=MD_TEXT, path="docs/scores guide.md", doc_hash="h1", kind="markdown",
    start_line=10, end_line=15, section=("Threshold",), anchor="threshold",
)
QD = Chunk(
    chunk_id="d" * 32,
    text="Qdrant runs embedded in a local folder by default. A Qdrant server is used when a URL is configured.",
    path="docs/store.md", doc_hash="h2", kind="markdown", start_line=3, end_line=3, section=("Storage",),
)
EVIDENCE = (
    Evidence(1, MD, "corpus", 0.71, "cosine", dense_score=0.71, sparse_score=3.2, fused_score=0.03),
    Evidence(2, QD, "corpus", 0.55, "cosine", dense_score=0.55),
)


@pytest.fixture(scope="module")
def scorer(encoder: OnnxMiniLM) -> SupportScorer:
    return SupportScorer(encoder=encoder.encode)


def check(text: str, scorer: SupportScorer, evidence=EVIDENCE):
    return check_answer(text, evidence, scorer=scorer, is_hedged=is_hedged)


def unmarked(sentence: str) -> str:
    """A sentence without its [n] markers (and without a space left before its punctuation)."""
    return normalize_ws(re.sub(r"\s+([.,;:!?])", r"\1", re.sub(r"\s*\[[^\]]*\]", "", sentence)))


# --------------------------------------------------------------------------- markers


@pytest.mark.parametrize(
    "body, expected",
    [
        ("1", [1]),
        ("12", [12]),
        ("1, 3", [1, 3]),
        ("1,3", [1, 3]),
        ("2-4", [2, 3, 4]),
        ("1–3", [1, 2, 3]),  # en dash
        ("1 - 3, 5", [1, 2, 3, 5]),
        ("4-2", None),  # reversed
        (f"1-{2 + MAX_RANGE}", None),  # too wide
        ("1-1000", None),
        ("1, 4-2", None),  # one bad range spoils the marker
    ],
)
def test_parse_marker(body: str, expected: list[int] | None) -> None:
    assert parse_marker(body) == expected


def test_parse_marker_widest_allowed_range() -> None:
    assert parse_marker(f"1-{1 + MAX_RANGE}") == list(range(1, 2 + MAX_RANGE))


def test_markers_in() -> None:
    assert markers_in("A [1]. B [2, 3]. C [2-4]. D [4-2]. E [x].") == [1, 2, 3, 4]
    assert markers_in("no markers, just [brackets] and [1a]") == []


def test_clean_markers_rewrites_partly_valid() -> None:
    text, stripped = clean_markers("The threshold is on cosine [1, 9].", {1, 2})
    assert text == "The threshold is on cosine [1]."
    assert stripped == ("[9]",)


def test_clean_markers_drops_wholly_invalid() -> None:
    text, stripped = clean_markers("The threshold is on cosine [9]. Top-K is six [2].", {1, 2})
    assert text == "The threshold is on cosine. Top-K is six [2]."
    assert stripped == ("[9]",)


def test_clean_markers_keeps_valid() -> None:
    src = "A [1]. B [1, 2]. C [1-2]."
    text, stripped = clean_markers(src, {1, 2})
    assert stripped == ()
    assert markers_in(text) == [1, 2]
    assert "[1]" in text


def test_clean_markers_invalid_range_and_zero() -> None:
    text, stripped = clean_markers("Claim [1-500]. Other [0]. Valid [2].", {1, 2})
    assert text == "Claim. Other. Valid [2]."
    assert stripped == ("[1-500]", "[0]")


def test_clean_markers_range_partly_out_of_evidence() -> None:
    text, stripped = clean_markers("Claim [1-3].", {1, 2})
    assert text == "Claim [1, 2]."
    assert stripped == ("[3]",)


# --------------------------------------------------------------------------- check_answer


def test_verbatim_sentence_is_supported(scorer: SupportScorer) -> None:
    res = check("The threshold applies to the cosine similarity between question and chunk [1].", scorer)
    (s,) = res.validation.sentences
    assert s.citations == (1,)
    assert s.support > 0.9
    assert s.flags == ()
    assert res.validation.unsupported == () and res.validation.uncited == ()
    (c,) = res.citations
    assert c.n == 1 and c.chunk_id == MD.chunk_id and c.path == MD.path
    assert c.support > 0.9
    assert c.retrieval_score == 0.71 and c.score_kind == "cosine"
    assert c.section == ("Threshold",) and c.anchor == "threshold" and c.page is None
    assert c.origin == "corpus"


def test_a_verbatim_quote_is_scored_without_the_model_and_as_the_model_would(encoder: OnnxMiniLM) -> None:
    calls: list[list[str]] = []

    def counting(texts):
        calls.append(list(texts))
        return encoder.encode(texts)

    quote = "It does not apply to the BM25 score or to the fused score."
    fast = SupportScorer(encoder=counting).best([quote], [MD], [[0]])[0][0]
    assert calls == []  # no embedding: the sentence is one of the chunk's own
    # the model's own verdict over every span of the chunk picks the same span, with the same score
    scorer = SupportScorer(encoder=encoder.encode)
    spans = scorer.spans(MD)
    sims = {0: np.clip(encoder.encode([quote, *(s.text for s in spans)]) @ encoder.encode([quote])[0], 0, 1)[1:]}
    ref = scorer._best_span(0, content_terms(quote), spans, sims, 0)
    assert fast.span == ref.span
    assert fast.score == pytest.approx(ref.score, abs=1e-6)


def test_a_code_block_quoted_whole_is_verbatim_and_cites_its_lines(encoder: OnnxMiniLM) -> None:
    calls: list[list[str]] = []

    def counting(texts):
        calls.append(list(texts))
        return encoder.encode(texts)

    code = Chunk(chunk_id="e" * 32, text="Install it first.\n\n    pip install alpha\n    alpha --fast\n\nThen run it.",
                 path="docs/install.md", doc_hash="h3", kind="markdown", start_line=20, end_line=25, section=("Install",))
    ev = (Evidence(1, code, "corpus", 0.6, "cosine", dense_score=0.6),)
    res = check_answer("Install it first. [1]\n\n```\npip install alpha\nalpha --fast\n```\n[1]", ev,
                       scorer=SupportScorer(encoder=counting))
    assert calls == []  # both the sentence and the block are the chunk's own text
    assert [c.support for c in res.validation.sentences] == [1.0, 1.0]
    (cit,) = res.citations
    assert (cit.start_line, cit.end_line) == (20, 23)  # the sentence's line through the block's last line
    # a block that is not the chunk's text is still judged by the model
    other = check_answer("```\npip install beta\n```\n[1]", ev, scorer=SupportScorer(encoder=counting))
    assert calls and other.validation.sentences[0].support < 1.0


def test_only_cited_pairs_are_scored(encoder: OnnxMiniLM) -> None:
    calls: list[list[str]] = []

    def counting(texts):
        calls.append(list(texts))
        return encoder.encode(texts)

    claim = "Thresholds are about cosine similarity."  # a paraphrase: needs the model
    rows = SupportScorer(encoder=counting).best([claim], [MD, QD], [[1]])
    assert rows[0][0] == SupportMatch(0.0, None)  # [1] not cited: not scored
    assert rows[0][1].span is not None
    (texts,) = calls
    assert texts[0] == claim and set(texts[1:]) <= {s.text for s in SupportScorer().spans(QD)}


def test_verbatim_without_encoder_uses_lexical_support() -> None:
    res = check_answer("The default top-K is six [1].", EVIDENCE, scorer=SupportScorer())
    assert res.validation.sentences[0].support == pytest.approx(1.0)


def test_unsupported_claim_is_flagged(scorer: SupportScorer) -> None:
    res = check("The threshold is measured in kilograms of flour per hour [1].", scorer)
    (s,) = res.validation.sentences
    assert "unsupported" in s.flags
    assert s.support < UNSUPPORTED_BELOW
    assert res.validation.unsupported == (s.text,)


def test_citing_the_wrong_evidence_is_unsupported(scorer: SupportScorer) -> None:
    res = check("Qdrant runs embedded in a local folder by default [1].", scorer)
    assert "unsupported" in res.validation.sentences[0].flags
    res = check("Qdrant runs embedded in a local folder by default [2].", scorer)
    assert res.validation.sentences[0].flags == ()


def test_uncited_sentence_is_flagged(scorer: SupportScorer) -> None:
    res = check("The default top-K is six [1]. Bananas are yellow.", scorer)
    a, b = res.validation.sentences
    assert a.flags == ()
    assert b.flags == ("uncited",) and b.citations == ()
    assert res.validation.uncited == ("Bananas are yellow.",)


def test_exempt_sentence_needs_no_citation(scorer: SupportScorer) -> None:
    res = check_answer(
        "The evidence does not say.", EVIDENCE, scorer=scorer, exempt=lambda s: s.startswith("The evidence does not")
    )
    assert res.validation.sentences[0].flags == ()


def test_hedged_sentence_is_flagged(scorer: SupportScorer) -> None:
    res = check("This might possibly work [1]. The default top-K is six [1].", scorer)
    hedged, plain = res.validation.sentences
    assert "hedged" in hedged.flags
    assert "hedged" not in plain.flags
    assert res.validation.hedged == (hedged.text,)
    # no detector given: no hedge flags
    res = check_answer("This might possibly work [1].", EVIDENCE, scorer=scorer)
    assert "hedged" not in res.validation.sentences[0].flags


def test_invalid_markers_are_stripped_and_recorded(scorer: SupportScorer) -> None:
    res = check("The default top-K is six [1, 7]. Qdrant runs embedded in a local folder by default [9].", scorer)
    assert res.validation.stripped == ("[7]", "[9]")
    assert "[7]" not in res.text and "[9]" not in res.text
    assert [c.n for c in res.citations] == [1]
    assert res.validation.sentences[1].flags == ("uncited",)


def test_sentence_texts_have_markers_removed(scorer: SupportScorer) -> None:
    res = check("The default top-K is six [1].", scorer)
    text = res.validation.sentences[0].text
    assert "[" not in text
    assert text == "The default top-K is six."


def test_marker_after_the_full_stop_belongs_to_its_sentence(scorer: SupportScorer) -> None:
    """"Claim one. [1] Claim two. [2]": each marker cites the sentence it follows."""
    res = check(
        "The threshold applies to the cosine similarity between question and chunk. [1] "
        "Qdrant runs embedded in a local folder by default. [2]",
        scorer,
    )
    sents = [s for s in res.validation.sentences if s.text]
    assert [s.citations for s in sents] == [(1,), (2,)], sents
    assert all(s.flags == () for s in sents), sents
    assert {c.n: c.support for c in res.citations}[2] > 0.9


# --------------------------------------------------------------------------- line narrowing


def lines_of(chunk: Chunk, start: int, end: int) -> str:
    rows = chunk.text.split("\n")
    return "\n".join(rows[start - chunk.start_line : end - chunk.start_line + 1])


@pytest.mark.parametrize(
    "sentence, line",
    [
        ("The threshold applies to the cosine similarity between question and chunk", 12),
        ("It does not apply to the BM25 score or to the fused score", 13),
        ("The default top-K is six", 15),
    ],
)
def test_citation_narrows_to_supporting_line(scorer: SupportScorer, sentence: str, line: int) -> None:
    res = check(f"{sentence} [1].", scorer)
    (c,) = res.citations
    assert MD.start_line <= c.start_line <= c.end_line <= MD.end_line
    assert (c.start_line, c.end_line) == (line, line)
    assert normalize_ws(sentence) in normalize_ws(lines_of(MD, c.start_line, c.end_line))
    q = parse_qs(urlparse(c.url).query)
    assert q == {"path": [MD.path], "lines": [f"{line}-{line}"]}


def test_citation_narrows_to_multi_line_sentence(scorer: SupportScorer) -> None:
    chunk = Chunk(
        chunk_id="e" * 32, path="docs/wrap.md", doc_hash="h3", kind="markdown", start_line=40, end_line=43,
        text="Intro line here.\nThe threshold applies to the cosine similarity\nbetween the question and the chunk, in every mode.\nLast line.",
    )
    ev = (Evidence(1, chunk, "corpus", 0.5, "cosine"),)
    res = check_answer(
        "The threshold applies to the cosine similarity between the question and the chunk, in every mode [1].",
        ev, scorer=scorer,
    )
    (c,) = res.citations
    assert (c.start_line, c.end_line) == (41, 42)


def test_citation_covers_every_sentence_that_cites_it(scorer: SupportScorer) -> None:
    """Two answer sentences cite [1] from different lines: the citation's line range must
    contain both, or the link opens lines that do not hold the second claim."""
    res = check(
        "The threshold applies to the cosine similarity between question and chunk [1]. "
        "The default top-K is six [1].",
        scorer,
    )
    assert all(s.support > 0.9 for s in res.validation.sentences)
    (c,) = res.citations
    cited = lines_of(MD, c.start_line, c.end_line)
    for s in res.validation.sentences:
        assert unmarked(s.text) in normalize_ws(cited), (c.start_line, c.end_line, s.text)


def test_no_narrowing_when_chunk_does_not_map_to_lines(scorer: SupportScorer) -> None:
    html = Chunk(
        chunk_id="f" * 32, path="ref/page.html", doc_hash="h4", kind="html", start_line=100, end_line=180,
        text="The cache framework stores rendered pages. Memcached is the fastest backend.", page=None,
    )
    ev = (Evidence(1, html, "corpus", 0.6, "cosine"),)
    res = check_answer("Memcached is the fastest backend [1].", ev, scorer=scorer)
    (c,) = res.citations
    assert (c.start_line, c.end_line) == (100, 180)


def test_pdf_citation_carries_page(scorer: SupportScorer) -> None:
    pdf = Chunk(
        chunk_id="a" * 32, path="papers/x.pdf", doc_hash="h5", kind="pdf", start_line=1, end_line=2, page=4,
        text="Dense retrieval uses embeddings.\nSparse retrieval uses term weights.",
    )
    res = check_answer("Sparse retrieval uses term weights [1].", (Evidence(1, pdf, "corpus", 0.4, "cosine"),), scorer=scorer)
    (c,) = res.citations
    assert c.page == 4 and (c.start_line, c.end_line) == (2, 2)
    assert parse_qs(urlparse(c.url).query)["page"] == ["4"]


# --------------------------------------------------------------------------- numbering


def test_evidence_numberer_numbers_from_start() -> None:
    nodes = [NodeWithScore(node=TextNode(id_=f"n{i}", text=f"t{i}"), score=1.0 - i / 10) for i in range(4)]
    out = EvidenceNumberer(start=5).postprocess_nodes(nodes)
    assert [n.node.node_id for n in out] == ["n0", "n1", "n2", "n3"]
    assert [n.node.metadata["citation_n"] for n in out] == [5, 6, 7, 8]
    out = EvidenceNumberer().postprocess_nodes([NodeWithScore(node=TextNode(id_="x", text="x"), score=0.1)])
    assert out[0].node.metadata["citation_n"] == 1


def cand(chunk: Chunk, rank: int, kept: bool = True, cos: float = 0.5) -> Candidate:
    return Candidate(
        chunk=chunk, dense_score=cos, sparse_score=1.5, fused_score=0.02, dense_rank=rank, sparse_rank=None,
        fused_rank=rank, rank=rank, kept=kept, dropped_reason=None if kept else "top_k",
    )


def test_evidence_from_candidates_numbers_kept_by_rank() -> None:
    other = Chunk(chunk_id="b" * 32, text="Other text.", path="o.md", doc_hash="h", kind="markdown", start_line=1, end_line=1)
    cands = [cand(MD, 1, cos=0.8), cand(other, 2, kept=False), cand(QD, 3, cos=0.4)]
    ev = evidence_from_candidates(cands, "cosine", start=3)
    assert [e.n for e in ev] == [3, 4]
    assert [e.chunk.chunk_id for e in ev] == [MD.chunk_id, QD.chunk_id]
    assert [e.score for e in ev] == [0.8, 0.4]
    assert all(e.origin == "corpus" and e.score_kind == "cosine" for e in ev)
    assert ev[0].sparse_score == 1.5 and ev[0].fused_score == 0.02
    ev = evidence_from_candidates(cands, "rrf")
    assert [e.n for e in ev] == [1, 2] and [e.score for e in ev] == [0.02, 0.02]


# --------------------------------------------------------------------------- urls


def test_source_url_encodes_path() -> None:
    url = source_url("docs/my notes/a&b#c?.md", 3, 7)
    assert url.startswith("?")
    assert " " not in url and "#" not in url and "&b" not in url
    q = parse_qs(urlparse(url).query)
    assert q == {"path": ["docs/my notes/a&b#c?.md"], "lines": ["3-7"]}


def test_source_url_with_page_and_unicode() -> None:
    url = source_url("docs/Übersicht.pdf", 1, 2, page=9)
    q = parse_qs(urlparse(url).query)
    assert q == {"path": ["docs/Übersicht.pdf"], "lines": ["1-2"], "page": ["9"]}
    assert "Ü" not in url
