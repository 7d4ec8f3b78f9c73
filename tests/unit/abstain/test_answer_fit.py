"""Does what is quoted answer the question? (abstain/answer_fit.py) A citation's ``support`` says
its sentence is in the evidence (an extractive quote always is); ``answers`` says whether it is
about what was asked. Real MiniLM model; the engine test runs over embedded Qdrant."""

from __future__ import annotations

from ragcore.abstain.answer_fit import answer_fit, claim_scores, question_terms


def test_a_claim_about_the_question_scores_above_one_that_is_not(encoder) -> None:
    q = "What is the default value of MAX_CONTENT_LENGTH?"
    on, off = claim_scores(encoder, q, [
        "MAX_CONTENT_LENGTH Don’t read more than this many bytes from the incoming request data. Default: None",
        "The debugger allows executing arbitrary Python code from the browser."])
    assert on > off + 0.3, (on, off)
    assert question_terms("What happens if this is not set?") == {"set"}  # "happen" says nothing of the subject


def test_a_citation_gets_its_best_claims_score(encoder) -> None:
    fit = answer_fit(encoder, "How do I deploy with Gunicorn?",
                     ["Run gunicorn -w 4 'hello:app' to deploy the app with Gunicorn.", "Sessions last a month."],
                     [(1, 2), (2,)])
    assert fit.by_citation[1] == fit.by_citation[2] == fit.best > 0.5
    assert answer_fit(encoder, "Anything?", [], []).best == 0.0


def test_answers_are_shown_beside_support(make_engine, tmp_path) -> None:
    from tests.conftest import write_corpus

    root = write_corpus(tmp_path / "c", {"limits.md": "# Upload limits\n\nThe upload limit is 16 megabytes by default. "
                                                      "Larger uploads are refused with status 413.\n"})
    eng = make_engine()
    eng.ingest([root], "lim")
    a = eng.ask("What is the upload limit by default?", settings=eng.settings.with_(collection="lim", abstain_bar=0.0))
    assert a.status == "ok" and a.citations
    for c in a.citations:
        assert c.support == 1.0 and c.answers is not None and 0.0 < c.answers <= 1.0
    assert a.metadata["answers"]["best"] == max(c.answers for c in a.citations)
    assert a.to_dict()["citations"][0]["answers"] == a.citations[0].answers  # in the JSON contract too


def test_nothing_quotable_that_answers_is_an_abstention(make_engine, tmp_path) -> None:
    """Even with a bar every question clears, the engine declines when what it would quote does
    not answer: support alone said yes to any question."""
    from ragcore.abstain.answer_fit import ANSWERS_FLOOR
    from tests.conftest import write_corpus

    root = write_corpus(tmp_path / "c", {"limits.md": "# Upload limits\n\nThe upload limit is 16 megabytes by default. "
                                                      "Larger uploads are refused with status 413.\n"})
    eng = make_engine()
    eng.ingest([root], "lim")
    s = eng.settings.with_(collection="lim", abstain_bar=0.0)
    a = eng.ask("How large is the Pacific ocean?", settings=s)
    assert a.metadata["support"]["score"] > s.abstain_bar  # the bar alone would have answered
    assert a.status == "abstained" and a.citations == ()
    (action,) = a.validation.guardrail_actions
    assert "nothing the answer would quote answers the question" in action and f"< {ANSWERS_FLOOR:.2f}" in action
    assert eng.ask("How large can an upload be?", settings=s).status == "ok"
