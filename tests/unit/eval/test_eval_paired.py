"""Each configuration against the base, question by question (ragcore/eval/paired.py)."""

from __future__ import annotations

import pytest

from ragcore.eval.metrics import QuestionResult, summarize
from ragcore.eval.paired import paired_delta, paired_deltas, sign_test_p
from ragcore.eval.report import paired_markdown
from ragcore.eval.runner import EvalRun, QuestionRecord


def _run(label: str, rows: list[tuple[str, bool, str, tuple[str, ...]]], *, retrieval_only: bool = False) -> EvalRun:
    """rows: (id, answerable, status, retrieved docs); the relevant document of every answerable
    question is "<id>.html"."""
    results = [
        QuestionResult(id=q, question=q, answerable=a, status=s, retrieved_docs=docs,
                       relevant_docs=(f"{q}.html",) if a else ())
        for q, a, s, docs in rows
    ]
    return EvalRun(label, "ragcore", "c", {"run": label}, tuple(QuestionRecord(r) for r in results), summarize(results),
                   retrieval_only=retrieval_only)


BASE = _run("base", [
    ("q1", True, "ok", ("q1.html", "x.html")),   # rank 1
    ("q2", True, "ok", ("x.html", "q2.html")),   # rank 2
    ("q3", True, "abstained", ("x.html", "y.html")),  # not found
    ("q4", True, "ok", ("q4.html",)),
    ("u1", False, "ok", ("x.html",)),
    ("u2", False, "abstained", ("x.html",)),
])


def test_counts_better_worse_same_and_flips() -> None:
    run = _run("run", [
        ("q1", True, "ok", ("x.html", "q1.html")),        # worse: rank 1 -> 2
        ("q2", True, "ok", ("q2.html",)),                 # better: rank 2 -> 1
        ("q3", True, "ok", ("q3.html",)),                 # better, and newly answered
        ("q4", True, "abstained", ("q4.html", "z.html")),  # same ranking of the relevant page; no longer answered
        ("u1", False, "abstained", ("x.html",)),          # newly abstained
        ("u2", False, "ok", ("x.html",)),                 # no longer abstained
    ])
    d = paired_delta(BASE, run)
    assert (d.judged, d.better, d.worse, d.same) == (4, 2, 1, 1)
    assert d.ndcg_base == pytest.approx(BASE.summary.ndcg_at_10)
    assert d.ndcg_run == pytest.approx(run.summary.ndcg_at_10)
    # best of both: q1 and q4 from either, q2 and q3 from the run -> every question at rank 1
    assert d.ndcg_best_of_both == pytest.approx(1.0)
    assert (d.answers_gained, d.answers_lost, d.abstains_gained, d.abstains_lost) == (1, 1, 1, 1)
    assert d.sign_p == pytest.approx(1.0)  # 2 vs 1 is no evidence either way


def test_a_run_against_itself_ties_everywhere() -> None:
    (d,) = paired_deltas([BASE, BASE])
    assert (d.better, d.worse, d.same, d.sign_p) == (0, 0, 4, None)
    assert d.ndcg_best_of_both == pytest.approx(d.ndcg_base)
    assert paired_deltas([BASE]) == [] and paired_deltas([]) == []


def test_retrieval_only_runs_have_no_answer_flips() -> None:
    li = _run("li", [(q, a, "abstained", docs) for q, a, _, docs in
                     [("q1", True, "", ("q1.html",)), ("u1", False, "", ("x.html",))]], retrieval_only=True)
    d = paired_delta(BASE, li)
    assert d.judged == 1 and (d.answers_lost, d.abstains_gained) == (0, 0)


def test_sign_test_matches_the_binomial() -> None:
    # 6 better, 2 worse: P(X <= 2 | n=8, p=.5) = (1 + 8 + 28) / 256, doubled
    assert sign_test_p(6, 2) == pytest.approx(2 * 37 / 256)
    assert sign_test_p(2, 6) == sign_test_p(6, 2)
    assert sign_test_p(10, 0) == pytest.approx(2 / 1024)
    assert sign_test_p(3, 3) == 1.0 and sign_test_p(0, 0) is None


def test_markdown_row() -> None:
    run = _run("run", [("q1", True, "ok", ("q1.html",)), ("q2", True, "ok", ("q2.html",)),
                       ("q3", True, "abstained", ("y.html",)), ("q4", True, "ok", ("q4.html",)),
                       ("u1", False, "ok", ("x.html",)), ("u2", False, "abstained", ("x.html",))])
    md = paired_markdown([BASE, run])
    assert md.splitlines()[0].startswith("| configuration | nDCG@10 better / worse / same | sign test p |")
    assert "| run | 1 / 0 / 3 | 1.00 | 0.658 → 0.750 | 0.750 | +0 −0 | +0 −0 |" in md


def test_compare_cli_rereads_saved_results(tmp_path, capsys) -> None:
    """python -m ragcore.eval.compare on a JSON round trip, and on a file that is not one."""
    from ragcore.eval.compare import main
    from ragcore.eval.report import write_json
    from ragcore.eval.sweep import EvalReport

    run = _run("top_k=3", [(q, a, s, docs) for q, a, s, docs in
                           [("q1", True, "ok", ("x.html", "q1.html")), ("q2", True, "ok", ("x.html", "q2.html")),
                            ("q3", True, "abstained", ()), ("q4", True, "ok", ("q4.html",)),
                            ("u1", False, "ok", ()), ("u2", False, "abstained", ())]])
    good = write_json(EvalReport("set", None, "c", "base", [BASE, run]), tmp_path / "e.json")
    one = write_json(EvalReport("set", None, "c", "base", [BASE]), tmp_path / "one.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    assert main([str(good), str(one)]) == 0
    out = capsys.readouterr().out
    assert "## e.json: set on `c`" in out and "| top_k=3 | 0 / 1 / 3 | 1.00 |" in out
    assert "Only one configuration (base): nothing to compare." in out
    assert main([str(bad), str(good)]) == 1  # the bad file is reported, the good one still printed
    cap = capsys.readouterr()
    assert "bad.json: not an evaluation result" in cap.err and "| top_k=3 |" in cap.out


def test_citable_bounds_answers_citing_a_relevant_page() -> None:
    def rec(q: str, answerable: bool, status: str, evidence: tuple[str, ...], cited: tuple[str, ...]) -> QuestionRecord:
        return QuestionRecord(QuestionResult(id=q, question=q, answerable=answerable, status=status,
                                             relevant_docs=(f"{q}.html",) if answerable else (), cited_docs=cited),
                              evidence_docs=evidence)
    recs = (
        rec("a", True, "ok", ("x.html", "a.html"), ("a.html",)),  # cites the relevant page
        rec("b", True, "ok", ("x.html", "b.html"), ("x.html",)),  # could have: the evidence holds it
        rec("c", True, "ok", ("x.html",), ("x.html",)),           # could not
        rec("d", True, "abstained", ("d.html",), ()),             # not answered: not counted
        rec("u", False, "ok", ("x.html",), ("x.html",)),          # unanswerable: not counted
    )
    run = EvalRun("r", "ragcore", "c", {}, recs, summarize([r.result for r in recs]))
    assert run.citable == (1, 2, 3)
    from ragcore.eval.report import evidence_lines
    assert any("r 1 / 2 / 3" in line for line in evidence_lines([run]))
    li = EvalRun("li", "baseline", "c", {}, recs, run.summary, retrieval_only=True)
    assert li.citable is None and evidence_lines([li]) == []


def test_terminal_lines() -> None:
    from ragcore.eval.report import paired_lines
    run = _run("run", [("q1", True, "ok", ("x.html", "q1.html")), *[(q, a, s, d) for q, a, s, d in [
        ("q2", True, "ok", ("x.html", "q2.html")), ("q3", True, "abstained", ("x.html", "y.html")),
        ("q4", True, "ok", ("q4.html",)), ("u1", False, "ok", ("x.html",)), ("u2", False, "abstained", ("x.html",))]]])
    (line,) = paired_lines([BASE, run])
    assert line == ("  run: 0 better / 1 worse / 3 same (sign test p 1.00); nDCG@10 0.658 -> 0.565, best of both 0.658; "
                    "answered +0 -0, abstained (unanswerable) +0 -0")
    assert paired_lines([BASE]) == []
