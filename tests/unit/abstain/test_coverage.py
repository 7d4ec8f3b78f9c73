"""Named subjects and plain words the corpus never mentions (abstain/coverage.py): found, looked up, judged."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragcore.abstain.answerability import Support, describe
from ragcore.abstain.coverage import (
    HEDGE_MARGIN, absent_words, judge_coverage, name_runs, phrase_covered, subjects, uncovered_subjects,
)
from ragcore.encoders.sparse import tokenize
from ragcore.engine.engine import Engine
from tests.conftest import write_corpus

FLASK_LIKE = {
    "tutorial/database.md": "# Define and Access the Database\n\nThe application will use a SQLite database to store "
    "users and posts. Python comes with built-in support for SQLite in the sqlite3 module. Flask connects to the "
    "database with get_db, which opens a connection the first time it is called in a request and reuses it.\n",
    "config.md": "# Configuration Handling\n\nMAX_CONTENT_LENGTH: if set to a value in bytes, Flask will reject "
    "incoming requests with a content length greater than this by returning a 413 status code. Default: None.\n\n"
    "SECRET_KEY: a secret key that will be used for securely signing the session cookie. Default: None.\n",
    "deploying.md": "# Deploying to Production\n\nGunicorn is a WSGI server for UNIX. Run it with "
    "gunicorn -w 4 'hello:create_app()' to start four worker processes.\n",
}


def _has(text: str):
    vocab = set(tokenize(text))
    return lambda terms: any(t in vocab for t in terms)


def test_subjects_are_names_quoted_terms_identifiers_and_versions() -> None:
    got = {(s.text, s.kind) for s in subjects('How does Flask read "secret key" and MAX_CONTENT_LENGTH in 2.2.1 with GraphQL?')}
    assert got == {("Flask", "name"), ("secret key", "quoted"), ("MAX_CONTENT_LENGTH", "identifier"),
                   ("2.2.1", "version"), ("GraphQL", "name")}
    # a sentence's first word is not a name; "I" is not one either
    assert subjects("Why does my app crash? Sometimes I see errors.") == ()
    assert [s.text for s in subjects("Can ragcore translate my documents into French?")] == ["French"]


def test_uncovered_subjects_are_the_ones_no_chunk_mentions() -> None:
    has = _has(" ".join(FLASK_LIKE.values()))
    assert uncovered_subjects("How do I connect Flask to an Oracle database?", has_term=has) == ("Oracle",)
    # another form of the word counts ("Gunicorn's" → gunicorn), an identifier is looked up whole
    assert uncovered_subjects("How many workers does Gunicorn's default start with MAX_CONTENT_LENGTH?", has_term=has) == ()
    assert uncovered_subjects("What does MAX_UPLOAD_SIZE default to?", has_term=has) == ("MAX_UPLOAD_SIZE",)
    # words already reported by unseen_words are not named twice
    assert uncovered_subjects("Does Flask support GraphQL?", has_term=has, skip=("graphql",)) == ()


def test_a_quoted_phrase_is_judged_on_its_rare_words() -> None:
    has = _has("the session cookie is signed")
    common = {"session", "cookie", "signed", "bearer", "token"}.__contains__
    assert uncovered_subjects('What is a "session cookie"?', has_term=has, is_common=common) == ()
    assert uncovered_subjects('What is a "bearer token"?', has_term=has, is_common=common) == ("bearer token",)
    assert uncovered_subjects('Why do I get "ValueError: bad jwt"?', has_term=has, is_common=common) == ("ValueError: bad jwt",)


def test_a_plain_word_no_chunk_uses_is_named_once_with_the_subjects() -> None:
    has = _has("Supported files: Markdown and PDF documents. The French example is an injection test. Upload limits.")
    vocab = {"translate", "documents", "french", "explain", "work", "upload", "uploading", "limits"}.__contains__
    is_common = lambda w: vocab(w.lower())  # noqa: E731 - the model's vocabulary, for these words
    q = "Can ragcore translate my documents into French?"
    assert absent_words(q, has_term=has, is_common=is_common) == ("translate",)
    assert uncovered_subjects(q, has_term=has, is_common=is_common) == ("translate",)
    # another form counts ("uploading" → upload); generic question words and rare words are not judged here
    assert absent_words("Does uploading explain how limits work?", has_term=has, is_common=is_common) == ()
    assert absent_words("Can it frobnicate?", has_term=has, is_common=is_common) == ()  # unseen_words' job
    # without a vocabulary to tell common from rare words, only subjects are judged
    assert uncovered_subjects(q, has_term=has) == ()


def test_judged_against_the_bar_abstain_near_it_hedge_above() -> None:
    near = judge_coverage(Support(0.52, "corpus", uncovered=("Oracle",)), bar=0.5, margin=HEDGE_MARGIN)
    assert near.unseen == ("Oracle",) and near.uncovered == ()  # abstains: stages.abstain_reason reads unseen
    above = judge_coverage(Support(0.5 + HEDGE_MARGIN + 0.01, "corpus", uncovered=("Oracle",)), bar=0.5, margin=HEDGE_MARGIN)
    assert above.unseen == () and above.uncovered == ("Oracle",)
    assert judge_coverage(Support(0.52, "corpus", uncovered=("Oracle",)), bar=0.5).uncovered == ("Oracle",)  # default: no margin
    assert judge_coverage(Support(0.48, "corpus", uncovered=("Oracle",)), bar=0.5).unseen == ("Oracle",)  # below the bar: named
    assert judge_coverage(Support(0.3, "corpus"), bar=0.5) == Support(0.3, "corpus")


@pytest.fixture(scope="module")
def flask_like(tmp_path_factory: pytest.TempPathFactory, encoder) -> Engine:
    from ragcore.settings.config import RagcoreSettings

    root = tmp_path_factory.mktemp("flasklike")
    corpus = write_corpus(root / "corpus", FLASK_LIKE)
    e = Engine(RagcoreSettings(data_dir=root / "data", collection="flask", calibrated_bar=False), encoder=encoder)
    e.ingest([corpus], collection="flask")
    yield e
    e.close()


def test_the_engine_abstains_on_a_subject_the_corpus_never_mentions(flask_like: Engine) -> None:
    q = "How do I connect Flask to an Oracle database?"
    base = flask_like.settings.with_(abstain_bar=0.05, uncovered_margin=HEDGE_MARGIN)
    score = flask_like.ask(q, settings=base.with_(abstain_uncovered=False)).metadata["support"]["score"]
    near = flask_like.ask(q, settings=base.with_(abstain_bar=max(score - HEDGE_MARGIN / 2, 0.0)))
    assert near.status == "abstained" and near.citations == ()
    assert list(near.metadata["support"]["unseen"]) == ["Oracle"]
    assert "the corpus never mentions “Oracle”" in near.validation.guardrail_actions[0]
    # far above the bar: answered, with a hedge that names what the corpus never mentions
    hedged = flask_like.ask(q, settings=base.with_(abstain_bar=max(score - HEDGE_MARGIN - 0.05, 0.0)))
    assert hedged.status in ("ok", "partial"), hedged.validation.guardrail_actions
    assert list(hedged.metadata["support"]["uncovered"]) == ["Oracle"]
    assert any(a.startswith("hedged: the corpus never mentions “Oracle”") for a in hedged.validation.guardrail_actions)
    assert "answered with a hedge: the corpus never mentions “Oracle”" in describe(hedged.metadata["support"], 0.5)
    covered = flask_like.ask("How does Flask connect to the SQLite database?", settings=base)
    assert covered.status == "ok" and not covered.metadata["support"]["unseen"] and not covered.metadata["support"]["uncovered"]


def test_the_engine_hedges_on_a_plain_word_no_chunk_uses(flask_like: Engine) -> None:
    # the real model's vocabulary and the collection's term columns: "translate" is a whole word of
    # the vocabulary that no chunk of the Flask-like corpus uses
    answer = flask_like.ask("How do I translate the SQLite database?", settings=flask_like.settings.with_(abstain_bar=0.05))
    assert answer.status in ("ok", "partial"), answer.validation.guardrail_actions
    assert list(answer.metadata["support"]["uncovered"]) == ["translate"]
    assert any(a.startswith("hedged: the corpus never mentions “translate”") for a in answer.validation.guardrail_actions)


def test_runs_of_capitalised_words_are_one_name() -> None:
    assert name_runs("How do I export an Asymptote drawing to a Microsoft Word document?") == ("Microsoft Word",)
    assert name_runs("What is the submission deadline for theses at York University?") == ("York University",)
    # a sentence's (or a quote's) first word is no part of a name; SQL keywords are code; titles are no names
    assert name_runs("Does Flask support GraphQL subscriptions?") == ()
    assert name_runs("“This Session’s transaction has been rolled back”") == ()
    assert name_runs("how do I use ON DELETE CASCADE with the ORM?") == ()
    assert name_runs("Rendering Bound Parameters Inline") == ()


ASY_LIKE = {
    "install.md": "# Microsoft Windows\n\nUsers of the Microsoft Windows operating system can install the "
    "self-extracting Asymptote executable. Each word of a label is typeset by TeX.\n",
    "auth.md": "# Authentication\n\nSpiders can use HTTP basic authentication with the http_user attribute.\n",
}


def _phrase_lookup(files: dict[str, str]):
    texts = list(files.values())

    def rows_with(terms):
        return [i for i, t in enumerate(texts) if set(terms) & set(tokenize(t))]

    return lambda name: phrase_covered(name, rows_with=rows_with, text_of=texts.__getitem__)


def test_a_name_whose_candidates_pass_the_read_cap_is_not_declared_uncovered(monkeypatch) -> None:
    """The cap bounds the cost of reading candidate chunks; a name it leaves unread is not judged
    absent (only the unread chunks might hold it together)."""
    import ragcore.abstain.coverage as coverage

    files = {f"n{i}.md": "Microsoft ships Windows. A word of thanks." for i in range(3)}
    files["z.md"] = "Export to Microsoft Word."
    apart = {k: v for k, v in files.items() if k != "z.md"}
    monkeypatch.setattr(coverage, "MAX_CANDIDATE_ROWS", 2)
    assert _phrase_lookup(files)("Microsoft Word")  # z.md is past the cap, unread
    assert _phrase_lookup(apart)("Microsoft Word")  # three candidates, two read: no verdict of absence
    monkeypatch.setattr(coverage, "MAX_CANDIDATE_ROWS", 3)
    assert not _phrase_lookup(apart)("Microsoft Word")  # every candidate read: the words only apart


def test_a_name_is_covered_only_when_a_chunk_holds_its_words_together() -> None:
    covers = _phrase_lookup(ASY_LIKE)
    assert not covers("Microsoft Word")  # "Microsoft Windows" and "word" apart
    assert covers("Microsoft Windows")
    assert covers("Basic HTTP Authentication")  # the same words in another order
    has = _has(" ".join(ASY_LIKE.values()))
    q = "How do I export an Asymptote drawing to a Microsoft Word document?"
    assert uncovered_subjects(q, has_term=has) == ()  # word by word every name is covered
    assert uncovered_subjects(q, has_term=has, covers_name=covers) == ("Microsoft Word",)
    assert uncovered_subjects("Can I use Basic HTTP Authentication in my spiders?", has_term=has, covers_name=covers) == ()


def test_a_name_of_several_words_abstains_above_the_bar_a_word_is_hedged() -> None:
    judged = judge_coverage(Support(0.9, "corpus", uncovered=("Microsoft Word", "English")), bar=0.4)
    assert judged.unseen == ("Microsoft Word",) and judged.uncovered == ("English",)
    assert "the corpus never mentions “Microsoft Word”" in describe(judged.as_dict(), 0.4)


def test_the_engine_abstains_on_a_name_its_corpus_holds_only_apart(past_the_bar) -> None:
    ask = past_the_bar(ASY_LIKE, "asy")
    a = ask("How do I export an Asymptote drawing to a Microsoft Word document?")
    assert a.status == "abstained" and list(a.metadata["support"]["unseen"]) == ["Microsoft Word"]
    assert "the corpus never mentions “Microsoft Word”" in a.validation.guardrail_actions[0]
    assert ask("How do I install Asymptote on Microsoft Windows?").status == "ok"
