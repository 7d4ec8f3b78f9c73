"""Answerability: the topic index (section headings), the support score, the abstain decision
and the per-collection calibrated bar. Real encoder, embedded Qdrant in temp folders."""

from __future__ import annotations

from dataclasses import replace

import json
from pathlib import Path

import numpy as np
import pytest

from ragcore.abstain.answerability import Support, assess, corpus_support, evidence_cosine, lexical_coverage, unseen_words
from ragcore.eval.demo import demo_calibration_dir
from ragcore.eval.calibration import CalibrationError, calibrate
from ragcore.eval.dataset import load_dataset
from ragcore.eval.runner import run_config
from ragcore.engine.engine import Engine
from ragcore.storage.store import TOPICS_COLLECTION
from ragcore.storage.sections import heading_of
from ragcore.abstain.topics import TopicIndex, TopicMatch
from ragcore.types import Candidate, Chunk
from tests.conftest import write_corpus

CORPUS = {
    "garden.md": (
        "# Gardening\n\nNotes about the garden.\n\n"
        "## Watering tomatoes\n\nWater tomato plants deeply twice a week, in the morning, at the roots.\n\n"
        "## Pruning roses\n\nPrune roses in late winter, just above an outward-facing bud.\n"
    ),
    "kitchen/bread.md": (
        "# Baking bread\n\nKnead the dough for ten minutes until it is smooth and elastic.\n\n"
        "## Proofing the dough\n\nLet the dough rise in a warm place until it doubles in size.\n"
    ),
}


def _chunk(path: str, text: str, section: tuple[str, ...] = (), line: int = 1) -> Chunk:
    return Chunk(chunk_id=f"{path}:{line}", text=text, path=path, doc_hash="h", kind="markdown",
                 start_line=line, end_line=line, section=section)


def _cand(chunk: Chunk, cos: float | None, rank: int) -> Candidate:
    return Candidate(chunk=chunk, dense_score=cos, sparse_score=None, fused_score=None, dense_rank=rank,
                     sparse_rank=None, fused_rank=rank, rank=rank)


@pytest.fixture
def garden(make_engine, tmp_path: Path) -> Engine:
    e = make_engine(collection="garden")
    # the settings' bar, not the one a label-free calibration would set (test_autocalibrate.py covers that)
    e.ingest([write_corpus(tmp_path / "corpus", CORPUS)], "garden", calibrate=False)
    return e


# ---------------------------------------------------------------------------- topics


def test_heading_of_is_the_innermost_heading_else_the_title() -> None:
    assert heading_of(("Guide", "Install", "On Windows"), "Title") == "On Windows"
    assert heading_of(("Guide", "  "), "Title") == "Guide"
    assert heading_of((), "Title") == "Title"
    assert heading_of((), None) is None


def test_ingest_stores_heading_vectors_and_the_index_finds_the_section(garden: Engine) -> None:
    stored = garden.store.heading_vectors(["Watering tomatoes", "Pruning roses", "Proofing the dough"])
    assert set(stored) == {"Watering tomatoes", "Pruning roses", "Proofing the dough"}
    # same vector as embedding the heading now
    assert float(stored["Pruning roses"] @ garden.encoder.encode(["Pruning roses"])[0]) == pytest.approx(1.0, abs=1e-4)

    m = garden.closest_topic("When should I prune my roses?")
    assert isinstance(m, TopicMatch)
    assert (m.heading, m.path, m.start_line) == ("Pruning roses", "garden.md", 9)  # the heading line
    assert m.score > 0.5
    # the path filter limits the headings too
    m2 = garden.closest_topic("When should I prune my roses?", garden.settings.with_(path_filter="kitchen/"))
    assert m2 is not None and m2.path == "kitchen/bread.md" and m2.score < m.score
    assert garden.closest_topic("roses", garden.settings.with_(path_filter="nothing/*")) is None


def test_heading_vectors_are_reused_not_re_embedded(garden: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """A collection's topic index reads the stored vectors: no heading is embedded again."""
    calls: list[int] = []
    real = garden.encoder.encode_uncached
    monkeypatch.setattr(garden.encoder, "encode_uncached", lambda texts: calls.append(len(texts)) or real(texts))
    idx = TopicIndex.build(garden.store.section_refs("garden"), garden.store, garden.encoder)
    assert len(idx) == 5 and calls == []
    # a heading never seen is embedded once and stored
    garden.store.client.delete_collection(TOPICS_COLLECTION)
    TopicIndex.build(garden.store.section_refs("garden"), garden.store, garden.encoder)
    assert calls == [5]
    assert TOPICS_COLLECTION not in garden.store.collection_names()


# ---------------------------------------------------------------------------- the score


def test_support_score_is_the_weighted_mean_of_its_parts() -> None:
    cands = [
        _cand(_chunk("a.md", "Prune roses in late winter.", ("Roses",), i), cos, i)
        for i, cos in enumerate([0.9, 0.7, 0.5, 0.3, 0.1, 0.05], 1)
    ]
    assert evidence_cosine(cands) == pytest.approx((0.9 + 0.7 + 0.5 + 0.3 + 0.1) / 5)
    # content words of the question: prune, rose, winter -> the top chunk has all three
    assert lexical_coverage("When do I prune roses in winter?", cands) == pytest.approx(1.0)
    assert lexical_coverage("When do I water tomatoes?", cands) == pytest.approx(0.0)
    topic = TopicMatch("Roses", 0.8, "a.md", 1)
    s = corpus_support("When do I prune roses in winter?", cands, topic)
    assert s.basis == "corpus"
    assert s.score == pytest.approx(0.4 * 0.5 + 0.4 * 0.8 + 0.2 * 1.0)
    # a missing part leaves the others in proportion: no topic -> (0.4 ev + 0.2 lex) / 0.6
    s2 = corpus_support("When do I prune roses in winter?", cands, None)
    assert s2.score == pytest.approx((0.4 * 0.5 + 0.2 * 1.0) / 0.6)
    assert corpus_support("roses", [], None) == Support(0.0, "none")


def test_assess_modes() -> None:
    cands = [_cand(_chunk("a.md", "Prune roses in late winter.", ("Roses",)), 0.5, 1)]
    topic = TopicMatch("Roses", 0.5, "a.md", 1)
    corpus = assess("corpus", "prune roses", cands, topic, None)
    assert corpus.basis == "corpus" and corpus.score == pytest.approx(0.4 * 0.5 + 0.4 * 0.5 + 0.2 * 1.0)
    sel = assess("selection", "prune roses", cands, topic, 0.31)
    assert (sel.basis, sel.score, sel.evidence_cosine) == ("selection", 0.31, None)
    both_sel = assess("both", "prune roses", cands, topic, 0.95)
    assert both_sel.basis == "selection" and both_sel.score == 0.95 and both_sel.topic == topic
    both_corpus = assess("both", "prune roses", cands, topic, 0.2)
    assert both_corpus.basis == "corpus" and both_corpus.score == pytest.approx(corpus.score)


def test_explain_names_score_bar_and_closest_section() -> None:
    s = Support(0.41, "corpus", 0.39, TopicMatch("Install Python", 0.44, "intro/install.html", 12), 0.5)
    line = s.explain(0.5)
    assert line.startswith("support 0.41 < abstain bar 0.50")
    assert "“Install Python” in intro/install.html 0.44" in line and "closest passages 0.39" in line and "50%" in line
    assert "≥" in s.explain(0.4)


# ---------------------------------------------------------------------------- the engine


def test_engine_abstains_off_topic_and_says_why(garden: Engine) -> None:
    on = garden.ask("How often should I water tomato plants?")
    assert on.status == "ok" and "[" in on.answer
    sup = on.metadata["support"]
    assert sup["basis"] == "corpus" and sup["topic"]["heading"] == "Watering tomatoes"
    assert on.metadata["best_support"] == pytest.approx(sup["score"], abs=1e-4)
    assert sup["score"] >= garden.settings.abstain_bar
    assert on.metadata["abstain_bar"] == {"value": garden.settings.abstain_bar, "source": "settings"}

    off = garden.ask("What is the airspeed of an unladen swallow?")
    assert off.status == "abstained" and off.citations == ()
    (action,) = off.validation.guardrail_actions
    assert action.startswith("abstained: support ") and "closest section “" in action


def test_unseen_words_are_rare_words_no_chunk_contains() -> None:
    corpus = {"water", "tomato", "plant", "django-admin", "django", "admin", "graph"}
    common = {"summer", "often", "explain", "difference"}
    got = unseen_words("Can you explain how often to water tomato plants hydroponically in summer, with django-admin "
                       "or GraphQL? See settings.GRAPHENE and run_graphql().",
                       has_term=lambda terms: any(t in corpus for t in terms), is_common=lambda w: w.lower() in common)
    # common words the corpus lacks are not counted (they may be paraphrases); identifiers are left
    # to the other signals; a word is reported once, as the question wrote it
    assert got == ("hydroponically", "GraphQL")
    assert unseen_words("", has_term=lambda t: False, is_common=lambda w: False) == ()
    # another form of a word the corpus uses is not unseen: "tokenizer" covers "tokenized" and "tokenization"
    seen = {"tokenizer"}
    assert unseen_words("How is tokenized text stored, and what does tokenization cost?",
                        has_term=lambda terms: any(t in seen for t in terms), is_common=lambda w: False) == ("text", "stored", "cost")


def test_a_rare_word_the_corpus_never_uses_makes_the_engine_abstain(garden: Engine) -> None:
    s = garden.settings.with_(abstain_bar=0.3)  # a bar this question's score clears: the word alone decides
    q = "How often should I water tomato plants hydroponically?"
    a = garden.ask(q, settings=s)
    assert a.status == "abstained" and a.citations == ()
    assert list(a.metadata["support"]["unseen"]) == ["hydroponically"]
    assert a.metadata["support"]["score"] >= s.abstain_bar  # the score alone would have answered
    (action,) = a.validation.guardrail_actions
    assert action.startswith("abstained: support ") and "the corpus never mentions “hydroponically”" in action
    off = garden.ask(q, settings=s.with_(abstain_unseen_words=False))
    assert off.status == "ok" and not off.metadata["support"]["unseen"]
    common = garden.ask("How often should I water tomato plants in summer?", settings=s)  # absent but common
    assert common.status == "ok" and not common.metadata["support"]["unseen"]
    sel = "Water tomato plants deeply twice a week, in the morning, at the roots. Mulch keeps the soil moist."
    in_sel = garden.ask(q, context="selection", selection=sel, settings=s)  # the user chose the passage
    assert in_sel.status == "ok"


def test_a_server_is_asked_whether_a_word_occurs(garden: Engine) -> None:
    """The server path's term lookup (one sparse query of limit 1), run on the embedded engine's
    client, which speaks the same query API; it agrees with the in-process index."""
    from ragcore.retrieval.pools import server_has_terms

    idx = garden.hybrid_search.index("garden")
    with garden.store.session(write=False) as client:
        for terms in (["tomato"], ["hydroponically"], ["zzz", "dough"]):
            assert server_has_terms(client, "garden", terms) == idx.has_any_term(terms) == ("hydroponically" not in terms)


def test_selection_mode_is_judged_on_the_selection(garden: Engine) -> None:
    sel = "Water tomato plants deeply twice a week, in the morning, at the roots. Mulch keeps the soil moist."
    a = garden.ask("How often should tomatoes be watered?", context="selection", selection=sel)
    assert a.status == "ok" and a.metadata["support"]["basis"] == "selection"
    assert a.metadata["support"]["topic"] is None


# ---------------------------------------------------------------------------- calibration


def _dataset(root: Path, answerable: list[str], unanswerable: list[str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "questions.jsonl").write_text("".join(
        json.dumps({"id": f"a{i}", "question": q, "relevant": ["garden.md"]}) + "\n" for i, q in enumerate(answerable)))
    (root / "unanswerable.jsonl").write_text("".join(
        json.dumps({"id": f"u{i}", "question": q, "answerable": False}) + "\n" for i, q in enumerate(unanswerable)))
    return root


ANSWERABLE = ["How often should I water tomato plants?", "When do I prune roses?", "How long do I knead bread dough?"]
UNANSWERABLE = ["Who won the 1998 World Cup?", "What is the capital of Australia?", "How do I change a car tyre?"]


def test_calibration_is_stored_used_and_survives_a_reingest(garden: Engine, tmp_path: Path) -> None:
    ds = load_dataset(_dataset(tmp_path / "qa", ANSWERABLE, UNANSWERABLE))
    cal = calibrate(garden, ds, "garden")
    assert (cal.answer_rate, cal.abstain_rate) == (1.0, 1.0)
    scores = {q: garden.support(q).score for q in ANSWERABLE + UNANSWERABLE}
    assert max(scores[q] for q in UNANSWERABLE) < cal.bar <= min(scores[q] for q in ANSWERABLE)
    assert garden.abstain_bar() == (cal.bar, "calibrated on qa")
    a = garden.ask(UNANSWERABLE[0])
    assert a.status == "abstained" and a.metadata["abstain_bar"]["source"] == "calibrated on qa"

    garden.ingest([tmp_path / "corpus"], "garden")  # an ingest merges its metadata; the bar stays
    assert garden.abstain_bar()[0] == cal.bar
    # turning calibration off, or an explicit sweep, uses the settings' bar
    assert garden.abstain_bar(garden.settings.with_(calibrated_bar=False)) == (garden.settings.abstain_bar, "settings")

    # an eval run records the bar actually in force
    run = run_config(garden, ds, settings=garden.settings, collection="garden")
    assert run.config["abstain_bar"] == cal.bar
    # each question's record names the corpus heading closest to it
    rec = next(r for r in run.records if r.result.question == ANSWERABLE[1])
    assert rec.closest_section is not None and rec.closest_section.startswith("Pruning roses — garden.md (0.")
    assert type(rec).from_dict(rec.as_dict()).closest_section == rec.closest_section  # saved runs keep it


def test_calibration_needs_both_kinds_of_question(garden: Engine, tmp_path: Path) -> None:
    ds = load_dataset(_dataset(tmp_path / "only", ANSWERABLE, []))
    with pytest.raises(CalibrationError, match="answerable and unanswerable"):
        calibrate(garden, ds, "garden")
    assert "calibration" not in garden.store.read_meta("garden")


def test_bundled_guide_is_calibrated_and_separates_its_questions(guide_engine: Engine) -> None:
    """The demo collection's bar comes from bench/data/guide-qa on first start; at that bar
    the guide's own questions are answered and the others abstained (in-sample: this is the
    calibration's fit, and it fails if the support score stops separating them)."""
    cal = guide_engine.store.read_meta("guide")["calibration"]
    assert cal["dataset"] == "guide-qa" and cal["answerable"] == 22 and cal["unanswerable"] == 18
    assert cal["answer_rate"] >= 0.8 and cal["abstain_rate"] >= 0.8
    ds = load_dataset(demo_calibration_dir())
    bar = guide_engine.abstain_bar()[0]
    got = [(q.answerable, guide_engine.support(q.question).score >= bar) for q in ds.questions]
    answered = np.mean([ok for answerable, ok in got if answerable])
    abstained = np.mean([not ok for answerable, ok in got if not answerable])
    assert answered >= 0.8 and abstained >= 0.8


def test_cli_eval_calibrate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`ragcore eval --calibrate` stores the bar with the collection and the run uses it."""
    from ragcore.cli.main import main

    monkeypatch.setenv("RAGCORE_DATA_DIR", str(tmp_path / "data"))
    assert main(["ingest", str(write_corpus(tmp_path / "corpus", CORPUS)), "-c", "g"]) == 0
    ds = _dataset(tmp_path / "qa", ANSWERABLE, UNANSWERABLE)
    out = tmp_path / "run.json"
    assert main(["eval", str(ds), "-c", "g", "--calibrate", "--baselines", "none", "--no-charts", "--no-save",
                 "-q", "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    bar = report["runs"][0]["config"]["abstain_bar"]
    assert report["runs"][0]["metrics"]["answer_rate"] == 1.0 and report["runs"][0]["metrics"]["abstain_rate"] == 1.0
    capsys.readouterr()
    assert main(["ask", UNANSWERABLE[1], "-c", "g", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["status"] == "abstained"
    assert answer["metadata"]["abstain_bar"] == {"value": bar, "source": "calibrated on qa"}
    # a data set without unanswerable questions cannot calibrate: a clear error, exit 2
    only = _dataset(tmp_path / "only", ANSWERABLE, [])
    assert main(["eval", str(only), "-c", "g", "--calibrate", "--baselines", "none", "--no-save", "-q"]) == 2
    assert "answerable and unanswerable" in capsys.readouterr().err


def test_lexical_part_reads_the_passage_ranking_not_the_document_ranking() -> None:
    """Ranking documents (retrieval/documents.py) may put another page's chunk first; whether the
    corpus answers must not move with the page order, so the top chunk is the one the passages'
    own ranking (chunk_rank) put first."""
    roses = _cand(_chunk("a.md", "Prune roses in late winter.", ("Roses",), 1), 0.9, 1)
    bread = _cand(_chunk("b.md", "Knead the dough for ten minutes.", ("Bread",), 1), 0.5, 2)
    q = "When do I prune roses in winter?"
    docs_first = [replace(bread, rank=1, chunk_rank=2), replace(roses, rank=2, chunk_rank=1)]
    assert lexical_coverage(q, docs_first) == pytest.approx(1.0)
    assert lexical_coverage(q, [replace(bread, rank=1), replace(roses, rank=2)]) == pytest.approx(0.0)
