"""Does the corpus cover what the question is about? Named subjects the corpus never mentions.

``unseen_words`` (answerability.py) catches rare words no chunk contains ("websockets" on docs that
never say it), but leaves alone whole words of the model's vocabulary, which may be paraphrases.
A question's *specific subject* is different: "How do I connect Flask to an Oracle database?" is
about Oracle, and docs that never say "Oracle" cannot answer it however well their SQLite
passages score; "Can ragcore translate my documents into French?" likewise. Such a subject is
written the way names are written:

* a **name**: a capitalised word inside a sentence (not its first word), CamelCase or ALL-CAPS
  ("Oracle", "GraphQL", "French", "CORS");
* a **quoted** term: "…", “…”, `…` (up to four words);
* an **identifier**: ``snake_case``, ``dotted.name``, ``CamelCase`` (kept whole by BM25);
* a **version**: ``3.12``, ``1.4.2``.

A plain word of the model's vocabulary that no chunk uses in any form ("translate" asked of docs
that never say it; ``absent_words``) is reported with them: it may be a paraphrase, so like a
single-word name it is hedged, not abstained on.

A subject is covered when some chunk of the collection contains it: the word or another form of
its root (``word_forms``: "Windows" is covered by "window"), an identifier as the whole token.
Common words inside a quoted phrase are not judged (a quoted error message names its subject in
its rarer words). Subjects are looked up in the collection's term columns (``has_any_term``), a
binary search each: nothing is scanned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Callable, Literal, Sequence

from ragcore.abstain.answer_fit import GENERIC
from ragcore.abstain.answerability import Support, absent_in_corpus, word_forms
from ragcore.encoders.sparse import STOPWORDS, tokenize

Kind = Literal["name", "quoted", "identifier", "version"]

# a word as written: letters/digits with inner ' _ . - + # (Flask's, auth_user, django.db, C++)
_TOKEN = re.compile(r"[A-Za-z0-9][\w'’.+#-]*[\w+#]|[A-Za-z]")
_QUOTED = re.compile(r"\"([^\"]{2,60})\"|“([^”]{2,60})”|`([^`]{2,60})`")
_SENTENCE_END = re.compile(r"[.?!:;]\s*$")
_VERSION = re.compile(r"^\d+(?:\.\d+)+$")
_IDENT = re.compile(r"^[A-Za-z_]\w*(?:[._]\w+)+$|^[a-z]+[A-Z]\w*$")
# words a question uses for its own shape, not its subject: never reported as absent
_PLAIN_SKIP = STOPWORDS | GENERIC
# capitalised words that are not names: question and sentence openers that follow a clause
_NOT_NAMES = frozenset("i i'm i've i'd i'll ok yes no".split())
MAX_QUOTED_WORDS = 4
# a margin above the bar within which an uncovered subject abstains (settings.uncovered_margin's
# suggested value, off by default: see judge_coverage)
HEDGE_MARGIN = 0.05


@dataclass(frozen=True)
class Subject:
    """A specific thing the question names, as it wrote it, and the BM25 terms that find it."""

    text: str
    kind: Kind
    terms: tuple[str, ...]


def _strip_possessive(word: str) -> str:
    return re.sub(r"['’]s$", "", word).strip("'’.-")


def _kind_of(word: str, first: bool) -> Kind | None:
    """What makes ``word`` a subject, if anything (``first``: it opens a sentence)."""
    if _VERSION.match(word):
        return "version"
    if _IDENT.match(word):
        return "identifier"
    if not word[:1].isalpha() or word.lower() in _NOT_NAMES:
        return None
    inner_caps = any(ch.isupper() for ch in word[1:])
    if inner_caps and len(word) >= 2:  # GraphQL, WebSockets, CORS, iOS: a name wherever it stands
        return "name"
    if word[0].isupper() and not first and len(word) >= 3:
        return "name"
    return None


def _terms(word: str, kind: Kind) -> tuple[str, ...]:
    if kind in ("identifier", "version"):
        whole = tokenize(word)[:1]  # the whole identifier or version, as BM25 keeps it
        return tuple(whole)
    return word_forms(word)


def _quoted(question: str) -> tuple[list[Subject], str]:
    """Quoted terms, and the question with them blanked (so their words are not judged twice)."""
    out: list[Subject] = []
    for m in _QUOTED.finditer(question):
        phrase = next(g for g in m.groups() if g is not None).strip()
        words = [w for w in _TOKEN.findall(phrase) if w.lower() not in STOPWORDS]
        if not words or len(phrase.split()) > MAX_QUOTED_WORDS:
            continue
        terms = tuple(t for w in words for t in (_terms(w, _kind_of(w, False) or "name")))
        if terms:
            out.append(Subject(phrase, "quoted", terms))
    return out, _QUOTED.sub(lambda m: " " * len(m.group(0)), question)


def subjects(question: str) -> tuple[Subject, ...]:
    """The specific subjects ``question`` names, in order, each once (see the module docstring)."""
    found, rest = _quoted(question)
    first = True
    for m in _TOKEN.finditer(rest):
        word = _strip_possessive(m.group(0))
        before = rest[: m.start()]
        first = not before.strip() or bool(_SENTENCE_END.search(before)) or before.rstrip().endswith(("(", "—", "-"))
        kind = _kind_of(word, first) if word else None
        if kind is None:
            continue
        terms = _terms(word, kind)
        if terms:
            found.append(Subject(word, kind, terms))
    seen: set[str] = set()
    out = []
    for s in found:
        if s.text.lower() not in seen:
            seen.add(s.text.lower())
            out.append(s)
    return tuple(out)


# a run of two or more capitalised words is one name ("Microsoft Word", "York University"): judged
# word by word, "Microsoft" (Windows) and "Word" (any sentence) are covered when the name is not
_NAME_RUN = re.compile(r"(?<![\w.])(?:[A-Z][\w'’+#-]*\s+)+[A-Z][\w'’+#-]*")
_OPENERS = ("(", "—", "-", "\"", "“", "‘", "'", "`", "[")
# a question written as a title ("Result Fetching Slowness", "Rendering Bound Parameters Inline")
# capitalises its words: its runs are no names
TITLE_SHARE = 0.75
NAME_WINDOW = 1  # other words allowed between a name's words in a chunk ("HTTP basic authentication")
MAX_CANDIDATE_ROWS = 2000  # chunks holding every word of a name, read for the phrase (a bound on the cost; more: covered)


def _title_case(question: str) -> bool:
    words = [w for w in re.findall(r"[A-Za-z]{4,}", question)]
    return bool(words) and sum(w[0].isupper() for w in words) / len(words) >= TITLE_SHARE


def name_runs(question: str) -> tuple[str, ...]:
    """Runs of two or more capitalised words ("Microsoft Word"), each once, as written. Left out:
    a sentence's first word ("Does Flask …"), words of one letter, runs all in capitals (SQL's
    "CREATE TABLE" is code, not a name) and every run of a question written in title case."""
    if _title_case(question):
        return ()
    out: dict[str, str] = {}
    for m in _NAME_RUN.finditer(question):
        words = [_strip_possessive(w) for w in m.group(0).split()]
        before = question[: m.start()].rstrip()
        if not before or _SENTENCE_END.search(before) or before.endswith(_OPENERS):
            words = words[1:]
        words = [w for w in words if w]
        if len(words) < 2 or any(len(w) < 2 or w.lower() in _NOT_NAMES for w in words):
            continue
        if all(w.isupper() for w in words):
            continue
        out.setdefault(" ".join(words).lower(), " ".join(words))
    return tuple(out.values())


def _word_terms(word: str) -> tuple[str, ...]:
    return word_forms(word) or tuple(tokenize(word)[:1])


def phrase_covered(name: str, *, rows_with: Callable[[tuple[str, ...]], Sequence[int]],
                   text_of: Callable[[int], str]) -> bool:
    """Whether some chunk holds the words of ``name`` together: all of them within a window of
    their number plus ``NAME_WINDOW`` words, in any order ("HTTP basic authentication" covers
    "Basic HTTP Authentication"). ``rows_with(terms)``: the chunks holding any of the terms (one
    word's forms); the candidates hold every word, then their text is read."""
    words = name.split()
    rows: set[int] | None = None
    for w in words:
        terms = _word_terms(w)
        if not terms:  # a stopword ("of"): found by the window below, not by the term columns
            continue
        found = set(rows_with(terms))
        rows = found if rows is None else rows & found
        if not rows:
            return False
    wanted = [set(_word_terms(w)) or {w.lower()} for w in words]
    candidates = sorted(rows or ())
    if any(_within_window(text_of(r), wanted) for r in candidates[:MAX_CANDIDATE_ROWS]):
        return True
    # past the cap the unread chunks may hold the name: the bound on the cost must not decline
    return len(candidates) > MAX_CANDIDATE_ROWS


def _within_window(text: str, wanted: Sequence[set[str]]) -> bool:
    toks = [(tokenize(t)[:1] or [t.lower()])[0] for t in _TOKEN.findall(text)]
    span = len(wanted) + NAME_WINDOW
    for i, t in enumerate(toks):
        if t in wanted[0] and all(any(x in ws for x in toks[max(0, i - span + 1): i + span]) for ws in wanted[1:]):
            return True
    return False


def uncovered_subjects(
    question: str, *, has_term: Callable[[tuple[str, ...]], bool], is_common: Callable[[str], bool] | None = None,
    skip: Sequence[str] = (), covers_name: Callable[[str], bool] | None = None,
) -> tuple[str, ...]:
    """The question's subjects no chunk of the corpus mentions, as the question wrote them.

    A quoted phrase is uncovered when one of its rarer words (not a whole word of the model's
    vocabulary, ``is_common``) is absent, or, when all its words are common, when none is present.
    ``skip``: words already reported (``unseen_words``), lower case, not named twice.
    ``covers_name(name)``: whether some chunk holds a name of several words together
    (``phrase_covered``); without it such names are judged word by word only."""
    done = {w.lower() for w in skip}
    out: list[str] = []
    for s in subjects(question):
        if s.text.lower() in done:
            continue
        if s.kind == "quoted":
            if _quoted_uncovered(s, has_term, is_common):
                out.append(s.text)
        elif not has_term(s.terms):
            out.append(s.text)
    if is_common is not None:  # a plain word of the vocabulary no chunk uses in any form ("translate")
        told = {w.lower() for s in out for w in s.split()} | done  # a quoted phrase's words are told with it
        out += [w for w in absent_words(question, has_term=has_term, is_common=is_common) if w.lower() not in told]
    if covers_name is not None:
        told = {w.lower() for w in out} | done
        out += [n for n in name_runs(question)
                if not any(w.lower() in told for w in n.split()) and not covers_name(n)]
    return tuple(out)


def absent_words(question: str, *, has_term: Callable[[tuple[str, ...]], bool],
                 is_common: Callable[[str], bool]) -> tuple[str, ...]:
    """The question's common plain words that no chunk uses in any form ("translate" in "Can ragcore
    translate my documents into French?" asked of docs that never say it), stopwords and generic
    question words ("explain", "work": ``answer_fit.GENERIC``) left out. Rare words are
    ``unseen_words``' (they abstain); a common word may be a paraphrase, so it is hedged, as a
    single-word name is (``judge_coverage``)."""
    return absent_in_corpus(question, has_term, lambda w: w.lower() not in _PLAIN_SKIP and is_common(w))


def is_name_run(subject: str) -> bool:
    """Whether an uncovered subject is a name of several capitalised words (``name_runs``)."""
    words = subject.split()
    return len(words) >= 2 and all(w[:1].isupper() for w in words)


def _quoted_uncovered(s: Subject, has_term: Callable[[tuple[str, ...]], bool],
                      is_common: Callable[[str], bool] | None) -> bool:
    words = [w for w in _TOKEN.findall(s.text) if w.lower() not in STOPWORDS]
    rare = [w for w in words if is_common is None or not is_common(w)]
    present = []
    for w in rare or words:
        terms = _terms(w, _kind_of(w, False) or "name")
        present.append(bool(terms) and has_term(terms))
    return not all(present) if rare else not any(present)


def judge_coverage(support: Support, bar: float, margin: float = 0.0) -> Support:
    """What the uncovered subjects (``support.uncovered``, found by question_support) do to an
    answer: with support below ``bar + margin`` the question abstains and the reason names them
    (they move to ``unseen``); above it the rest of the question may well be answered, so it is,
    with a hedge naming them (they stay in ``uncovered``; answerability.hedge_note).

    A name of several words the corpus never holds together ("Microsoft Word", ``is_name_run``)
    abstains at any score: it names one specific thing (a product, a place, an institution), and
    passages holding its words apart ("Microsoft Windows", "word") are about something else. A
    single word may be a paraphrase or a language ("English"), so it keeps the hedge. On the six
    question sets of bench/results/issue28-r4.md the several-word rule fires on one question, the
    unanswerable "How do I export an Asymptote drawing to a Microsoft Word document?".

    ``margin`` (settings.uncovered_margin) is 0 by default: on the Scrapy, Git and Django sets a margin of
    0.05 changed no decision, so by the keep rule of bench/results/issue28-trust.md it is not on;
    the subjects are then named when the score abstains and hedged when it answers."""
    if not support.uncovered:
        return support
    if support.score < bar + margin:
        return replace(support, unseen=support.unseen + support.uncovered, uncovered=())
    names = tuple(u for u in support.uncovered if is_name_run(u))
    if not names:
        return support
    return replace(support, unseen=support.unseen + names, uncovered=tuple(u for u in support.uncovered if u not in names))
