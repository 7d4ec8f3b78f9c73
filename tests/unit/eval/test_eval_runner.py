"""The evaluation runner end to end on a slice of the Django data set, plus its pure parts.

The slice: 8 real Django pages (the relevant pages of 5 FAQ questions and 3 others), those 5
questions and 3 unanswerable Python FAQ questions, ingested into a temp embedded Qdrant.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from ragcore.settings.config import RagcoreSettings
from ragcore.eval.baselines import (
    BM25_LABEL, LLAMAINDEX_LABEL, BaselineAnswer, BaselineHit, LlamaIndexBaseline, baseline_record,
)
from ragcore.cli.eval_command import add_eval_parser
from ragcore.eval.dataset import EvalQuestion, load_dataset
from ragcore.eval.metrics import QuestionResult
from ragcore.eval.report import (
    format_table, load_saved_runs, markdown, report_from_dict, save_run, trend_rows, write_json,
)
from ragcore.eval.runner import (
    DocPathMapper, QuestionRecord, abstain_curve, clear_encoder_cache, infer_prefix, recommend_bar,
)
from ragcore.eval.charts import sweep_rows, write_charts
from ragcore.eval.sweep import BaseCollection, ChunkCollection, SweepError, evaluate, parse_sweep, plan_runs
from tests.support.app_support import app_env  # noqa: F401  (fixture)
from tests.conftest import DJANGO, django_subset

QUESTIONS = ["dj-faq-0005", "dj-faq-0011", "dj-faq-0031", "dj-faq-0034", "dj-faq-0041"]
UNANSWERABLE = ["py-faq-0001", "py-faq-0004", "py-faq-0023"]
EXTRA_PAGES = ["intro/install.html", "releases/3.2.7.html", "releases/2.2.21.html"]  # small distractors


def _slice(dest: Path) -> Path:
    """questions.jsonl + unanswerable.jsonl + corpus/ with the relevant pages and 3 others."""
    corpus = DJANGO / "corpus"
    if not corpus.is_dir():
        pytest.skip(f"the django-docs-qa data set is not at {DJANGO}")
    dest.mkdir(parents=True)
    pages = set(EXTRA_PAGES)
    lines = [ln for ln in (DJANGO / "questions.jsonl").read_text(encoding="utf-8").splitlines() if ln.strip()]
    picked = [ln for ln in lines if json.loads(ln)["id"] in QUESTIONS]
    for ln in picked:
        pages.update(json.loads(ln)["relevant_docs"])
    (dest / "questions.jsonl").write_text("\n".join(picked) + "\n", encoding="utf-8")
    un = [ln for ln in (DJANGO / "unanswerable.jsonl").read_text(encoding="utf-8").splitlines()
          if ln.strip() and json.loads(ln)["id"] in UNANSWERABLE]
    (dest / "unanswerable.jsonl").write_text("\n".join(un) + "\n", encoding="utf-8")
    django_subset(dest / "corpus", sorted(pages))
    assert len(pages) == 8
    return dest


def _metric_ranges(m: dict) -> None:
    for k in ("recall_at_1", "recall_at_5", "recall_at_10", "recall_at_20", "mrr_at_10", "ndcg_at_10",
              "answer_rate", "abstain_rate", "citation_precision", "supported_share", "token_f1"):
        assert m[k] is None or 0.0 <= m[k] <= 1.0, (k, m[k])
    assert m["recall_at_1"] <= m["recall_at_5"] <= m["recall_at_10"] <= m["recall_at_20"]
    assert m["recall_at_1"] <= m["mrr_at_10"] + 1e-9  # a hit at rank 1 gives RR 1


def _eval_parser() -> argparse.ArgumentParser:
    """``ragcore``'s parser with the eval subcommand (added here if cli.py does not yet)."""
    from ragcore.cli.main import build_parser

    p = build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    if "eval" not in sub.choices:
        add_eval_parser(sub)
    return p


@pytest.mark.slow
def test_eval_end_to_end(tmp_path: Path, make_engine, encoder, monkeypatch, capsys) -> None:
    ds_dir = _slice(tmp_path / "ds")
    dataset = load_dataset(ds_dir)
    assert len(dataset.answerable) == 5 and len(dataset.unanswerable) == 3
    data_dir = tmp_path / "data"
    engine = make_engine(data_dir=data_dir, top_k=3)  # a small top-K keeps the test fast
    engine.ingest([ds_dir / "corpus"], "dj")

    seen: list[tuple[int, int]] = []
    report = evaluate(
        engine, dataset, collection="dj", settings=engine.settings, sweeps=[parse_sweep("top_k=1,2")],
        baselines=["bm25", "llamaindex"], progress=lambda d, t, _label: seen.append((d, t)),
    )
    labels = [r.label for r in report.runs]
    assert labels == ["ragcore hybrid (base)", "top_k=1", "top_k=2", "BM25 alone", LLAMAINDEX_LABEL]
    assert seen[-1][0] == seen[-1][1] == 5 * 8  # base, two sweep values, BM25, LlamaIndex
    assert all(d <= t for d, t in seen)

    # the index matches this code's chunker/BM25, and holds every relevant page
    assert not any("WARNING" in n for n in report.notes)
    base = report.run("ragcore hybrid (base)")
    m = base.metrics()
    assert (m["n_answerable"], m["n_unanswerable"]) == (5, 3)
    for run in report.runs:
        _metric_ranges(run.metrics())
    # every relevant page is in an 8-page corpus: the pool finds it, near the top
    assert m["recall_at_20"] == 1.0 and m["recall_at_5"] >= 0.8 and m["ndcg_at_10"] >= 0.6
    # answers: the 5 FAQ questions are answered, the Python questions mostly abstained
    assert m["answer_rate"] >= 0.8
    una = [r for r in base.records if not r.result.answerable]
    assert m["abstain_rate"] == sum(r.result.status == "abstained" for r in una) / 3
    assert m["abstain_rate"] >= 2 / 3
    for r in base.records:
        assert r.best_support is not None
        assert 0 <= r.result.supported_sentences <= r.result.total_sentences
        if r.result.status == "abstained":
            assert r.result.cited_docs == () and r.result.total_sentences == 0
        else:
            assert r.result.cited_docs and r.result.total_sentences >= 1
            assert set(r.result.cited_docs) <= set(r.result.retrieved_docs)
        # hits: distinct documents, best first, mapped to the data set's paths
        assert [h.rank for h in r.hits] == list(range(1, len(r.hits) + 1))
        assert len({h.path for h in r.hits}) == len(r.hits)
        assert all((ds_dir / "corpus" / h.path).is_file() for h in r.hits)
    # the answerable questions score higher than the unanswerable ones
    ans_support = [r.best_support for r in base.records if r.result.answerable]
    assert min(ans_support) > max(r.best_support for r in una) or m["abstain_rate"] < 1

    # sweep: one row per value; the evidence at top_k=1 is a prefix of the evidence at top_k=2
    (group,) = report.sweeps
    rows = sweep_rows(report, group)
    assert [row["top_k"] for row in rows] == [1, 2]
    assert rows[0]["evidence_recall"] <= rows[1]["evidence_recall"] <= base.evidence_recall
    assert report.run("top_k=1").metrics()["ndcg_at_10"] == pytest.approx(m["ndcg_at_10"])  # the pool does not depend on top_k

    # BM25 alone is ragcore's sparse mode; the LlamaIndex baseline has retrieval metrics only
    assert report.run("BM25 alone").config["retrieval_mode"] == "sparse"
    li = report.run(LLAMAINDEX_LABEL).metrics()
    assert li["recall_at_20"] is not None and li["answer_rate"] is None and li["token_f1"] is None
    cache = data_dir / "eval_cache"
    assert len(list(cache.glob("llamaindex-*"))) == 1
    again = LlamaIndexBaseline(ds_dir / "corpus", engine.encoder, cache)
    again.index()
    assert not again.built  # loaded from the cache keyed by the corpus hash

    # outputs: JSON (round trip), saved run + trend, Markdown, charts, terminal table
    out = write_json(report, tmp_path / "out" / "eval.json")
    back = report_from_dict(json.loads(out.read_text()))
    assert [r.label for r in back.runs] == labels
    assert back.run("ragcore hybrid (base)").metrics()["ndcg_at_10"] == pytest.approx(m["ndcg_at_10"])
    assert len(back.run("top_k=2").records) == 8
    saved = save_run(report, data_dir)
    assert saved.parent == data_dir / "eval_runs"
    trend = trend_rows(load_saved_runs(data_dir), collection="dj")
    assert [t["label"] for t in trend] == labels
    md = markdown(report, json_path=out)
    assert "| configuration | R@1 |" in md and "## Sweep: top_k" in md and "Abstaining" in md
    assert "## Against the base (ragcore hybrid (base)), question by question" in md and "| top_k=1 | 0 / 0 / 5 | – |" in md
    charts = write_charts(report, tmp_path / "out" / "eval")
    assert set(charts) == {"comparison", "sweep:top_k", "abstain"}
    assert all(p.is_file() and p.stat().st_size > 1000 for p in charts.values())
    table = format_table(report.runs)
    assert table.splitlines()[0].startswith("configuration") and len(table.splitlines()) == 2 + len(labels)

    # the CLI on the same store (the engine lets go of the embedded folder first), with the
    # session's encoder and its warm cache so that this part takes a second
    engine.close()
    import ragcore.engine.engine

    real_engine = ragcore.engine.engine.Engine
    monkeypatch.setattr(ragcore.engine.engine, "Engine", lambda s: real_engine(s, encoder=encoder))
    args = _eval_parser().parse_args([
        "--data-dir", str(data_dir), "eval", str(ds_dir), "--collection", "dj", "--limit", "1", "--top-k", "3",
        "--baselines", "none", "--warm", "--out", str(tmp_path / "cli" / "e.json"), "-q",
    ])
    assert args.func(args) == 0
    printed = capsys.readouterr().out
    assert "nDCG@10" in printed and "ragcore hybrid (base)" in printed
    cli_json = json.loads((tmp_path / "cli" / "e.json").read_text())
    assert cli_json["runs"][0]["metrics"]["n_answerable"] == 1
    assert (tmp_path / "cli" / "e.md").is_file()


def test_eval_cli_errors(tmp_path: Path, capsys) -> None:
    args = _eval_parser().parse_args(["eval", str(tmp_path / "missing"), "--collection", "x"])
    assert args.func(args) == 2
    assert "no such file or folder" in capsys.readouterr().err
    (tmp_path / "q.jsonl").write_text('{"question": "Why?"}\n')
    args = _eval_parser().parse_args(["eval", str(tmp_path / "q.jsonl"), "-c", "x", "--sweep", "top_k=a"])
    assert args.func(args) == 2
    assert "top_k=a is not allowed: top_k must be an integer" in capsys.readouterr().err


# --------------------------------------------------------------------------- pure parts


def test_parse_sweep_types_values() -> None:
    assert parse_sweep("top_k=5,10,20").values == (5, 10, 20)
    assert parse_sweep("threshold=0, 0.25").values == (0.0, 0.25)
    assert parse_sweep("retrieval_mode=dense,sparse,hybrid").values == ("dense", "sparse", "hybrid")
    assert parse_sweep("rrf-k=10,60").key == "rrf_k"
    assert parse_sweep("fusion_k=30").key == "rrf_k"
    assert parse_sweep("dedupe=true,false").values == (True, False)
    assert parse_sweep("top_k=5,5,10").values == (5, 10)
    assert parse_sweep("collection=a,b").values == ("a", "b")  # other collections of the corpus, by name
    # values are checked by the setting's rule (the catalog), range included: top_k=0 used to pass as an int
    for bad, msg in (("top_k", "KEY=V1"), ("retrieval_mode=bm25", "must be 'dense', 'sparse' or 'hybrid'"),
                     ("nope=1", "unknown setting"), ("chunk_size=a", "chunk_size must be an integer"),
                     ("threshold=x", "threshold must be a finite number"), ("top_k=0,5", "top_k must be an integer from 1"),
                     ("embed_timeout_s=1", "cannot be swept")):
        with pytest.raises(SweepError, match=msg):
            parse_sweep(bad)


def test_infer_prefix_and_mapper() -> None:
    known = {"topics/a.html", "ref/b.html", "index.html"}
    assert infer_prefix(["topics/a.html", "ref/b.html"], known) == ""
    assert infer_prefix(["corpus/topics/a.html", "corpus/ref/b.html", "corpus/x.html"], known) == "corpus/"
    # "" wins a tie: a stored "index.html" stays itself
    assert infer_prefix(["index.html", "sub/index.html"], known) == ""
    assert infer_prefix([], known) == "" and infer_prefix(["a"], set()) == ""
    m = DocPathMapper("corpus/")
    assert m("corpus/ref/b.html") == "ref/b.html" and m("other.html") == "other.html"
    assert m.stored("ref/b.html") == "corpus/ref/b.html"


def test_plan_runs_labels_dedupes_and_chunk_collections(tmp_path: Path) -> None:
    base = BaseCollection(RagcoreSettings(data_dir=tmp_path, collection="dj", chunk_size=800, chunk_overlap=200,
                                          retrieval_mode="hybrid", calibrated_bar=True), corpus_version="v1")
    sweeps = [parse_sweep("top_k=3,5"), parse_sweep("chunk_size=800,150"), parse_sweep("retrieval_mode=sparse"),
              parse_sweep("abstain_bar=0.3")]
    plan = plan_runs(base, "dj", sweeps, ["bm25", "llamaindex"], None)
    labels = [p.label for p in plan.runs]
    assert labels == ["ragcore hybrid (base)", "top_k=3", "top_k=5", "chunk_size=800", "chunk_size=150",
                      "retrieval_mode=sparse", "abstain_bar=0.3", BM25_LABEL]  # LlamaIndex runs apart
    assert [g.labels for g in plan.groups][1] == ("chunk_size=800", "chunk_size=150")
    run = {p.label: p for p in plan.runs}
    # the base chunking reads the base collection; a new size gets its own, its overlap lowered below it
    assert run["chunk_size=800"].collection == "dj"
    assert run["chunk_size=150"].collection == "dj__cs150o30" and run["chunk_size=150"].settings.chunk_overlap == 30
    assert plan.notes == ("chunk_size=150: chunk_overlap lowered to 30 (must be below the size)",)
    assert plan.chunk_collections("dj") == (ChunkCollection("dj__cs150o30", 150, 30),)
    assert run["abstain_bar=0.3"].settings.calibrated_bar is False
    # chunk_size=800 is the base again and BM25 alone is retrieval_mode=sparse: 8 labels, 6 runs
    assert run[BM25_LABEL].key() == run["retrieval_mode=sparse"].key()
    assert plan.distinct_runs() == 6
    assert plan_runs(base, "dj", (), (), "mine").base_label == "mine"


def test_clear_encoder_cache_empties_the_real_encoders_cache(encoder) -> None:
    """The real ONNX encoder; the engine around it is a stand-in (only ``.encoder`` is read)."""
    from types import SimpleNamespace

    encoder.encode(["a question to cache"])
    assert "a question to cache" in encoder.cached_texts()
    assert clear_encoder_cache(SimpleNamespace(encoder=encoder)) is True
    assert encoder.cached_texts() == []
    assert clear_encoder_cache(SimpleNamespace(encoder=object())) is False
    assert clear_encoder_cache(object()) is False


def test_baseline_record_keeps_each_document_at_its_best_node() -> None:
    q = EvalQuestion(id="q1", question="How?", answer="Like so.", relevant=("b.html#x",), relevant_docs=("b.html",),
                     answerable=True)
    hits = (BaselineHit("a.html", 0.9, 1, 5), BaselineHit("b.html", 0.8, 10, 20), BaselineHit("a.html", 0.7, 30, 40),
            BaselineHit("c.html", 0.6, 2, 3))
    rec = baseline_record(q, BaselineAnswer(hits, None, 12.5), DocPathMapper("corpus/"))
    assert rec.result.status == "ok" and rec.result.retrieved_docs == ("a.html", "b.html", "a.html", "c.html")
    assert rec.result.latency_ms == {"retrieve": 12.5, "total": 12.5}
    assert [(h.path, h.rank, h.chunk_rank, h.start_line, h.relevant) for h in rec.hits] == [
        ("a.html", 1, 1, 1, False), ("b.html", 2, 2, 10, True), ("c.html", 3, 4, 2, False)]
    assert rec.hits[1].stored_path == "corpus/b.html" and rec.best_support is None
    failed = baseline_record(q, BaselineAnswer((), "RuntimeError: boom", 1.0), DocPathMapper())
    assert failed.result.status == "error" and failed.error_message == "RuntimeError: boom" and failed.hits == ()


def _rec(qid: str, answerable: bool, best: float | None) -> QuestionRecord:
    return QuestionRecord(QuestionResult(id=qid, question=qid, answerable=answerable, status="ok"), best_support=best)


def test_abstain_curve_and_recommended_bar() -> None:
    recs = [_rec("a1", True, 0.6), _rec("a2", True, 0.5), _rec("a3", True, 0.35),
            _rec("u1", False, 0.2), _rec("u2", False, 0.3), _rec("u3", False, None)]
    p = abstain_curve(recs, [0.4])[0]
    assert (p.answer_rate, p.abstain_rate) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    choice = recommend_bar(recs)
    # any bar in (0.30, 0.35] answers all three and abstains on both scored unanswerable ones
    assert 0.30 < choice.bar <= 0.35
    assert choice.answer_rate == 1.0 and choice.abstain_rate == pytest.approx(2 / 3) and not choice.both_met
    assert recommend_bar([_rec("x", True, None)]) is None


# --------------------------------------------------------------------------- the Evaluate page


@pytest.mark.slow
def test_evaluate_page_runs_and_saves(app_env, tmp_path: Path) -> None:
    """The page on the app's demo collection ("guide", the user guide in docs/)."""
    from streamlit.testing.v1 import AppTest

    from tests.support.app_support import ROOT

    ds = tmp_path / "guide-qa"
    ds.mkdir()
    rows = [
        {"id": "g1", "question": "How do I change the chunk size?", "answer": "Set RAGCORE_CHUNK_SIZE before ingesting.",
         "relevant": ["03-chunking-and-provenance.md"]},
        {"id": "g2", "question": "What does the threshold apply to?", "answer": "The cosine similarity.",
         "relevant": ["05-scores-top-k-and-threshold.md"]},
    ]
    (ds / "questions.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (ds / "unanswerable.jsonl").write_text(json.dumps(
        {"id": "u1", "question": "Why is there no goto?", "relevant": [], "answerable": False}) + "\n")

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.session_state["cfg_collection"] = "guide"
    at.run()
    at.switch_page("pages/evaluate.py").run()
    assert not at.exception, [e.value for e in at.exception]
    at.text_input(key="ev_folder").set_value(str(ds)).run()
    assert "2 answerable, 1 unanswerable" in "\n".join(c.value for c in at.caption)
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    assert 0.0 <= float(metrics["nDCG@10"]) <= 1.0 and "answered" in metrics
    assert len(at.dataframe) == 2  # the comparison and the per-question table
    assert len(at.dataframe[1].value) == 3
    saved = list((app_env / "eval_runs").glob("*-guide-qa-guide.json"))
    assert saved and json.loads(saved[-1].read_text())["runs"][0]["metrics"]["n_answerable"] == 2
    # nothing from the data set reaches the page as Markdown/HTML: the question text is in a dataframe
    assert not any("How do I change" in m.value for m in at.markdown)

    # with a baseline, each run against the base, question by question
    at.session_state["ev_baselines"] = ["bm25"]
    at.button[0].click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(e.label == "Against the base, question by question" for e in at.expander)
    assert len(at.dataframe) == 3
    paired = at.dataframe[1].value
    assert list(paired["configuration"]) == ["BM25 alone"]
    assert int(paired["better"][0] + paired["worse"][0] + paired["same"][0]) == 2


@pytest.mark.slow
def test_evaluate_page_calibrates_the_collections_bar(app_env, tmp_path: Path) -> None:
    """"Calibrate the abstain bar" stores a bar with the collection; the page then shows it in force."""
    from streamlit.testing.v1 import AppTest

    from tests.support.app_support import ROOT, shared_runtime

    store = shared_runtime().engine.store
    before = store.read_meta("guide")["calibration"]  # set on first start from bench/data/guide-qa
    ds = tmp_path / "mini-qa"
    ds.mkdir()
    (ds / "questions.jsonl").write_text(json.dumps(
        {"id": "g1", "question": "What does the threshold apply to?", "relevant": ["05-scores-top-k-and-threshold.md"]}) + "\n")
    (ds / "unanswerable.jsonl").write_text(json.dumps(
        {"id": "u1", "question": "Who won the 1998 World Cup?", "answerable": False}) + "\n")
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
        at.session_state["cfg_collection"] = "guide"
        at.run()
        at.switch_page("pages/evaluate.py").run()
        # Markdown-escaped on the page: "guide\\-qa"
        assert any("(calibrated on guide\\-qa)" in c.value for c in at.caption)
        at.text_input(key="ev_folder").set_value(str(ds)).run()
        at.button(key="ev_calibrate").click().run()
        assert not at.exception, [e.value for e in at.exception]
        at.button(key="ev_cal_replace").click().run()  # the stored bar is replaced only once confirmed
        assert not at.exception, [e.value for e in at.exception]
        (msg,) = [s.value for s in at.success]
        assert "mini\\-qa" in msg and "answers 100% of 1 answerable" in msg and "abstains on 100% of 1" in msg
        cal = store.read_meta("guide")["calibration"]
        assert cal["dataset"] == "mini-qa" and cal["answerable"] == 1
        assert any(f"abstain bar {cal['bar']:.3f} (calibrated on mini\\-qa)" in c.value for c in at.caption)
    finally:
        store.write_meta("guide", {"calibration": before})  # other app tests use the shipped bar
