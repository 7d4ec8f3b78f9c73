"""BM25 sparse vectors: the tokeniser (identifiers whole and split, stopwords, light stemming),
document term weights (sorted indices, tf saturation, length normalisation) and query weights."""

from __future__ import annotations

import pytest

from ragcore.encoders.sparse import B, K1, STOPWORDS, Bm25Encoder, SparseVec, term_index, tokenize


# --------------------------------------------------------------------------- tokenize


@pytest.mark.parametrize(
    "text, expected",
    [
        ("AUTH_USER_MODEL", ["auth_user_model", "auth", "user", "model"]),
        ("django.contrib.auth", ["django.contrib.auth", "django", "contrib", "auth"]),
        ("getUserName", ["getusername", "get", "user", "nam"]),  # parts stemmed like words: "name"/"names" -> "nam"
        ("utf-8", ["utf-8", "utf", "8"]),
    ],
)
def test_identifiers_kept_whole_and_split(text: str, expected: list[str]) -> None:
    assert tokenize(text) == expected


def test_identifier_inside_prose() -> None:
    toks = tokenize("Set AUTH_USER_MODEL in settings.py before the first migration.")
    assert "auth_user_model" in toks
    assert {"auth", "user", "model"} <= set(toks)
    assert "settings.py" in toks
    assert "migration" in toks


def test_identifiers_are_case_insensitive() -> None:
    assert tokenize("UTF-8") == tokenize("utf-8")
    assert tokenize("Auth_User_Model")[0] == "auth_user_model"


def test_camel_case_with_acronyms() -> None:
    assert tokenize("XMLHttpRequest") == ["xmlhttprequest", "xml", "http", "request"]


def test_stopwords_dropped() -> None:
    assert tokenize("What is the a of it") == []
    toks = tokenize("How do I configure the cache for my site?")
    assert not set(toks) & STOPWORDS
    assert "configure" in toks or "configur" in toks
    assert tokenize("site")[0] in toks


def test_single_letters_dropped_digits_kept() -> None:
    assert tokenize("x y z") == []
    assert tokenize("version 3") == ["version", "3"]


@pytest.mark.parametrize(
    "plural, singular",
    [
        ("models", "model"),
        ("queries", "query"),
        ("classes", "class"),
        ("fields", "field"),
        # words ending in "e": the plural must meet the singular too
        ("files", "file"),
        ("caches", "cache"),
        ("templates", "template"),
        ("databases", "database"),
        ("pages", "page"),
        ("types", "type"),
        ("settings", "setting"),
    ],
)
def test_light_stemming_joins_plural_and_singular(plural: str, singular: str) -> None:
    assert tokenize(plural) == tokenize(singular), (plural, tokenize(plural), singular, tokenize(singular))


def test_light_stemming_models() -> None:
    assert tokenize("models") == ["model"]
    assert tokenize("Models") == ["model"]


def test_caching_meets_cache() -> None:
    """The module promises: "models"/"model" and "caching"/"cache" meet."""
    assert set(tokenize("caching")) & set(tokenize("cache"))


def test_identifiers_are_not_stemmed() -> None:
    toks = tokenize("django.db.models")
    assert toks[0] == "django.db.models"  # the whole identifier keeps its "s"
    assert "model" in toks  # the plain part is stemmed


# --------------------------------------------------------------------------- documents


def weight_of(vec: SparseVec, term: str) -> float:
    (token,) = tokenize(term)  # the indexed form of the word (stemmed)
    i = term_index(token)
    assert i in vec.indices, term
    return vec.values[vec.indices.index(i)]


def test_term_index_is_stable_31_bit() -> None:
    assert term_index("model") == term_index("model")
    assert term_index("model") != term_index("models")
    for t in ("model", "auth_user_model", "ü", ""):
        assert 0 <= term_index(t) < 2**31


def test_document_vector_sorted_unique() -> None:
    enc = Bm25Encoder()
    v = enc.encode_document(
        "The AUTH_USER_MODEL setting names the user model. The user model must exist. Models models models."
    )
    assert list(v.indices) == sorted(set(v.indices))
    assert len(v.indices) == len(v.values)
    assert all(x > 0 for x in v.values)
    assert set(v.indices) == {term_index(t) for t in tokenize(
        "The AUTH_USER_MODEL setting names the user model. The user model must exist. Models models models."
    )}


def test_empty_document() -> None:
    v = Bm25Encoder().encode_document("the of and")
    assert v.indices == () and v.values == ()


def test_bm25_tf_formula_by_hand() -> None:
    enc = Bm25Encoder(avgdl=10.0)
    text = "alpha alpha alpha beta gamma"  # dl = 5
    v = enc.encode_document(text)
    norm = K1 * (1 - B + B * 5 / 10.0)
    assert weight_of(v, "alpha") == pytest.approx(3 * (K1 + 1) / (3 + norm))
    assert weight_of(v, "beta") == pytest.approx(1 * (K1 + 1) / (1 + norm))


def test_tf_saturates() -> None:
    """More occurrences weigh more, with diminishing returns, never above k1 + 1."""
    enc = Bm25Encoder()
    filler = " ".join(f"word{i}" for i in range(30))
    ws = []
    for tf in (1, 2, 4, 8, 32, 200):
        # keep the document length fixed so only tf moves
        words = ["frobnicate"] * tf + [f"pad{i}" for i in range(200 - tf)]
        ws.append(weight_of(enc.encode_document(" ".join(words) + " " + filler), "frobnicate"))
    assert all(a < b for a, b in zip(ws, ws[1:])), ws
    gains = [b - a for a, b in zip(ws, ws[1:])]
    assert gains[0] > gains[-1]
    assert ws[-1] < K1 + 1
    assert ws[-1] / ws[0] < 10  # 200 occurrences are not worth 200 single ones


def test_longer_document_lowers_weight() -> None:
    enc = Bm25Encoder()
    short = enc.encode_document("frobnicate the widget")
    long = enc.encode_document("frobnicate the widget " + " ".join(f"pad{i}" for i in range(300)))
    assert weight_of(long, "frobnicate") < weight_of(short, "frobnicate")


def test_document_vector_independent_of_other_documents() -> None:
    enc = Bm25Encoder()
    a = enc.encode_document("retrieval with thresholds")
    enc.encode_documents(["something else entirely " * 50, "more text"])
    assert enc.encode_document("retrieval with thresholds") == a
    assert enc.encode_documents(["retrieval with thresholds"]) == [a]


# --------------------------------------------------------------------------- queries


def test_query_weights_are_one() -> None:
    v = Bm25Encoder().encode_query("What is AUTH_USER_MODEL? models models user")
    assert list(v.indices) == sorted(set(v.indices))
    assert set(v.values) == {1.0}
    assert set(v.indices) == {term_index(t) for t in ("auth_user_model", "auth", "user", "model")}


def test_empty_query() -> None:
    v = Bm25Encoder().encode_query("what is the?")
    assert v.indices == () and v.values == ()
