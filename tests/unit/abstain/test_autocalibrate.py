"""Label-free calibration of the abstain bar (ragcore/abstain/autocalibrate.py): questions generated
from the corpus, the bundled off-topic questions, the bar between them, where it is stored
and which bar wins. Real parts: the ONNX encoder and embedded Qdrant in a temp folder."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from ragcore.abstain.autocalibrate import (
    AUTO_KEY, BAR_POSITION, AbstainBarInfo, auto_calibrate, bar_info, calibration_scores, choose_bar, clean_heading,
    drop_high_outliers, ensure_auto_calibration, generate_questions, offtopic_questions,
)
from ragcore.settings.config import RagcoreSettings
from ragcore.eval.calibration import calibrate
from ragcore.eval.dataset import load_dataset
from ragcore.engine.engine import Engine
from ragcore.encoders.sparse import STOPWORDS, tokenize
from ragcore.types import Chunk
from tests.conftest import write_corpus

# An analyst's own notes, as in the issue: six short Markdown files on unrelated subjects.
NOTES = {
    "q3-planning.md": "# Q3 planning\n\nOur team's goals for the third quarter:\n\n"
    "- Move the billing service from MySQL 5.7 to PostgreSQL 16 before the end of August.\n"
    "- Bring the p95 latency of the search API under 300 ms.\n- Hire two data engineers; Priya runs the interviews.\n\n"
    "The budget for cloud spend is capped at 42,000 EUR a month. Anything above that needs sign-off from Marta.\n",
    "home-network.md": "# Home network\n\nThe router is a Ubiquiti EdgeRouter X. The smart plugs, the thermostat and "
    "the cameras live on\nVLAN 30, which cannot reach the main LAN. The laptops and the NAS are on VLAN 10.\n\n"
    "DNS goes through a Pi-hole on the Raspberry Pi 4 (192.168.10.53), which blocks ad domains and\n"
    "forwards everything else to Quad9.\n",
    "onboarding.md": "# Onboarding checklist for new analysts\n\n1. Ask IT for a laptop and an Okta account on day one.\n"
    "2. Request VPN access through the service desk; it takes about two days.\n"
    "3. Access to the Snowflake data warehouse needs a ticket approved by your team lead, then the\n"
    "   data platform team grants the ANALYST_READ role.\n4. Join the #data-help channel for questions.\n",
    "vector-db-evaluation.md": "# Vendor evaluation: vector databases\n\nWe compared Qdrant, pgvector and Weaviate for "
    "the document search prototype.\n\npgvector was the simplest to run because we already operate PostgreSQL, but "
    "filtered search was\nslow above five million rows. Weaviate needed more memory than our budget allowed.\n\n"
    "Decision: we chose Qdrant, for its payload filtering, its sparse vectors and because it can run\nembedded in tests.\n",
    "incident-etl.md": "# Incident 2026-03-14: nightly ETL failure\n\nThe nightly ETL job that loads sales data failed "
    "at 02:10 and the morning dashboards showed\nstale numbers.\n\nCause: the S3 access key used by the loader had "
    "expired; it had been created with a 90-day\nlifetime. Fix: the key was rotated and the loader now reads "
    "credentials from the secrets\nmanager, which rotates them automatically. An alert now fires when the job has "
    "not finished by 05:00.\n",
    "reading-kahneman.md": "# Reading notes: Thinking, Fast and Slow\n\nKahneman describes two modes of thought. "
    "System 1 is fast, automatic and intuitive; it jumps to\nconclusions from little evidence. System 2 is slow, "
    "effortful and deliberate, and it is lazy:\nit often endorses what System 1 suggests.\n\nAnchoring: an arbitrary "
    "number shown first pulls later estimates toward it, even when people\nknow the number is irrelevant.\n",
}
# written for this test from the notes, in a user's words (not the notes' sentences)
ANSWERABLE = [
    "Why did the nightly ETL job fail in March?",
    "Which vector database did we pick, and why?",
    "Which VLAN are the smart home devices on?",
    "How does a new analyst get access to the data warehouse?",
    "What are the team's goals for Q3?",
    "What is System 1 according to Kahneman?",
]
# off-topic, and none of them in the bundled list
OFFTOPIC = [
    "What is the boiling point of mercury?",
    "Who won the 1966 football World Cup?",
    "How do I knit a scarf for beginners?",
    "What is the population of Canada?",
    "How do I make cold brew coffee?",
    "Which planet has the most moons?",
]


def _chunk(path: str, text: str, section: tuple[str, ...], line: int = 1) -> Chunk:
    return Chunk(chunk_id=f"{path}:{line}", text=text, path=path, doc_hash="h", kind="markdown",
                 start_line=line, end_line=line + 3, section=section)


CHUNKS = [
    _chunk("cache.md", "The cache framework stores rendered pages so that later requests are served quickly. "
           "A cache backend is a class that stores values under keys for a timeout.", ("Caching", "Setting up the cache backend")),
    _chunk("cache.md", "Per-view caching decorates a view with cache_page and a timeout in seconds.", ("Caching", "The per-view cache"), 20),
    _chunk("forms.md", "A form class describes the fields, their widgets and their validation rules in one place.",
           ("Working with forms",)),
    _chunk("deploy.md", "Gunicorn is a WSGI server that runs the application behind a reverse proxy such as nginx.",
           ("Deploying with Gunicorn and nginx",)),
]


# --------------------------------------------------------------------------- pure parts

TEMPLATE_WORDS = set(tokenize("what should I know about tell me how does it work"))


def test_generated_questions_are_deterministic_and_come_from_the_corpus() -> None:
    a = generate_questions(CHUNKS, n=12)
    assert a == generate_questions(list(reversed(CHUNKS)), n=12)  # same seed, same questions, whatever the order
    assert [q.question for q in a] != [q.question for q in generate_questions(CHUNKS, n=12, seed=7)]
    assert len({q.question for q in a}) == len(a) and {q.kind for q in a} >= {"heading", "keywords"}
    by_path = {c.path: c for c in CHUNKS}
    for q in a:
        src = [c for c in CHUNKS if c.path == q.path and c.start_line == q.start_line]
        assert src and q.path in by_path
        corpus_words = set(tokenize(src[0].text + " " + " ".join(src[0].section)))
        words = {w for w in tokenize(q.question) if w not in STOPWORDS}
        assert words and words - TEMPLATE_WORDS <= corpus_words, q
    # a long heading is paraphrased (one inner word dropped), not asked verbatim
    heading_qs = [q.question for q in a if q.kind == "heading"]
    assert "Setting up the cache backend" not in " ".join(heading_qs)
    assert any("Setting" in q and "backend" in q for q in heading_qs)


def test_heading_and_definition_templates() -> None:
    assert clean_heading("2.1. `Managing files`:") == "Managing files"
    assert clean_heading("``AUTH_USER_MODEL`` ¶") == "AUTH_USER_MODEL"
    qs = {q.question for q in generate_questions(CHUNKS, n=12)}
    assert "What is A cache backend?" in qs or "What is cache backend?" in qs  # "A cache backend is a class …"
    assert "What should I know about Working forms?" in qs or "What should I know about Working with forms?" in qs


def test_offtopic_questions_are_bundled() -> None:
    qs = offtopic_questions()
    assert len(qs) >= 75 and len(set(qs)) == len(qs) and all(q.endswith("?") for q in qs)
    assert not set(qs) & set(OFFTOPIC)


def test_high_offtopic_outliers_are_dropped_and_the_bar_sits_between_the_medians() -> None:
    off = [0.10, 0.12, 0.13, 0.15, 0.16, 0.18, 0.20, 0.62]  # the corpus happens to answer the last one
    assert drop_high_outliers(off) == off[:-1]
    d = choose_bar([0.40, 0.55, 0.60, 0.70], off)
    assert d.offtopic_mean == pytest.approx(0.14857, abs=1e-4) and d.answerable_mean == pytest.approx(0.5625)
    assert d.bar == pytest.approx(d.offtopic_mean + BAR_POSITION * (0.5625 - d.offtopic_mean), abs=1e-4)
    assert d.offtopic_mean < d.bar < d.answerable_mean
    assert choose_bar([0.16, 0.17], off).bar is None  # generated questions score like off-topic ones: no bar
    assert choose_bar([], off).bar is None


def test_bar_precedence_labelled_then_auto_then_settings() -> None:
    s = RagcoreSettings(data_dir="/nonexistent")
    auto = {"bar": 0.27, "method": "generated-vs-offtopic", "expected_answer_rate": 0.9, "expected_abstain_rate": 1.0,
            "n_answerable": 18, "n_offtopic": 79, "when": "t", "corpus_version": "v1"}
    labelled = {"bar": 0.41, "dataset": "guide-qa", "answer_rate": 0.86, "abstain_rate": 0.89, "answerable": 22,
                "unanswerable": 18, "corpus_version": "v1", "when": "t"}
    assert bar_info({}, s) == AbstainBarInfo(s.abstain_bar, "settings", "settings")
    info = bar_info({"corpus_version": "v2", AUTO_KEY: auto}, s)
    assert (info.value, info.source, info.stale) == (0.27, "auto", True)
    assert info.description == "calibrated without labels on this corpus (18 generated / 79 off-topic questions)"
    assert info.summary().startswith("0.27 — calibrated without labels") and "answers 90%, abstains 100%" in info.summary()
    both = bar_info({"corpus_version": "v1", AUTO_KEY: auto, "calibration": labelled}, s)
    assert (both.value, both.source, both.description, both.stale) == (0.41, "labelled", "calibrated on guide-qa", False)
    assert bar_info({AUTO_KEY: auto}, s.with_(calibrated_bar=False)).source == "settings"
    assert bar_info({AUTO_KEY: {**auto, "bar": None}}, s).source == "settings"  # a calibration that set no bar


# --------------------------------------------------------------------------- on a real corpus


@pytest.fixture
def notes(make_engine, tmp_path: Path) -> tuple[Engine, Path]:
    e = make_engine(collection="notes")
    root = write_corpus(tmp_path / "notes", NOTES)
    e.ingest([root], "notes")
    return e, root


def test_notes_corpus_answers_and_abstains_at_the_auto_bar(notes: tuple[Engine, Path]) -> None:
    e, _ = notes
    meta = e.store.read_meta("notes")
    auto = meta[AUTO_KEY]
    assert auto["corpus_version"] == meta["corpus_version"] and auto["n_answerable"] >= 12 and auto["n_offtopic"] >= 75
    info = e.abstain_bar_info("notes")
    assert info.source == "auto" and info.value == auto["bar"]
    assert info.expected_answer_rate >= 0.7 and info.expected_abstain_rate >= 0.95
    assert e.abstain_bar() == (auto["bar"], info.description)
    # the stored bar is what the scores give again (same seed), and the scores are the two sets'
    assert auto_calibrate(e, "notes", e.settings, save=False).bar == auto["bar"]
    sc = calibration_scores(e, "notes", e.settings, seed=7)
    assert len(sc.answerable) == len(sc.generated) >= 12
    assert sc.generated != tuple(generate_questions(e.hybrid_search.index("notes").chunks))  # another seed, another sample
    assert len(sc.offtopic) == len(offtopic_questions()) == auto["n_offtopic"] + auto["n_offtopic_dropped"]
    ans = {q: e.support(q).score for q in ANSWERABLE}
    off = {q: e.support(q).score for q in OFFTOPIC}
    assert min(ans.values()) < e.settings.abstain_bar  # the issue: the default bar abstains on these notes
    assert all(v >= info.value for v in ans.values()), (info.value, ans)
    assert all(v < info.value for v in off.values()), (info.value, off)
    # and the answers themselves use that bar
    a, b = e.ask(ANSWERABLE[0]), e.ask(OFFTOPIC[0])
    assert a.status != "abstained" and b.status == "abstained"
    assert a.metadata["abstain_bar"]["source"] == info.description


def test_labelled_calibration_overrides_the_auto_bar(notes: tuple[Engine, Path], tmp_path: Path) -> None:
    e, _ = notes
    auto_bar = e.abstain_bar_info("notes").value
    qa = tmp_path / "qa"
    qa.mkdir()
    (qa / "questions.jsonl").write_text("".join(
        json.dumps({"id": f"a{i}", "question": q, "relevant": [], "answerable": True}) + "\n" for i, q in enumerate(ANSWERABLE)))
    (qa / "unanswerable.jsonl").write_text("".join(
        json.dumps({"id": f"u{i}", "question": q, "relevant": [], "answerable": False}) + "\n" for i, q in enumerate(OFFTOPIC)))
    cal = calibrate(e, load_dataset(qa), "notes")
    info = e.abstain_bar_info("notes")
    assert (info.source, info.value, info.dataset) == ("labelled", cal.bar, "qa") and cal.bar != auto_bar
    assert e.abstain_bar() == (cal.bar, "calibrated on qa")
    assert e.store.read_meta("notes")[AUTO_KEY]["bar"] == auto_bar  # kept, just not in force


def test_a_new_corpus_version_recalibrates_and_an_unchanged_one_does_not(notes: tuple[Engine, Path]) -> None:
    e, root = notes
    first = e.store.read_meta("notes")[AUTO_KEY]
    e.ingest([root], "notes")  # nothing changed: the stored calibration stands
    assert e.store.read_meta("notes")[AUTO_KEY] == first
    (root / "garden.md").write_text("# Garden\n\nThe tomatoes on the balcony need water every evening in July.\n"
                                    "Prune the roses in late winter, just above an outward-facing bud.\n")
    e.ingest([root], "notes")
    meta = e.store.read_meta("notes")
    again = meta[AUTO_KEY]
    assert meta["corpus_version"] != first["corpus_version"] == first["corpus_version"]
    assert again["corpus_version"] == meta["corpus_version"] and again["n_answerable"] > first["n_answerable"]
    assert not e.abstain_bar_info("notes").stale
    # a bar stored by an older rule (another method name) is recomputed, not trusted
    e.store.write_meta("notes", {AUTO_KEY: {**again, "method": "generated-vs-offtopic", "bar": 0.99}})
    assert ensure_auto_calibration(e, "notes", e.settings).bar == again["bar"]
    assert e.store.read_meta("notes")[AUTO_KEY]["method"] == again["method"] != "generated-vs-offtopic"


def test_ingest_without_calibration_and_uploads(make_engine) -> None:
    e = make_engine(collection="up")
    e.ingest_uploads([("a.md", NOTES["home-network.md"].encode())], "up", calibrate=False)
    assert AUTO_KEY not in e.store.read_meta("up") and e.abstain_bar_info("up").source == "settings"
    e.ingest_uploads([(n, t.encode()) for n, t in NOTES.items()], "up")
    assert e.abstain_bar_info("up").source == "auto"
    info = e.abstain_bar_info("up")
    assert replace(info, when=None).n_offtopic >= 75
