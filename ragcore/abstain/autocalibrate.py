"""Calibrate a collection's abstain bar without labels.

The support score (``answerability.py``) ranks questions alike on every corpus, but its level
does not transfer (cosines run lower on a small, terse corpus), so a fixed bar makes a folder
of notes abstain on everything. Labelled calibration (``eval/calibration.py``) fixes that where
a labelled set exists; analysts do not bring one. This module sets the bar from two sets of
questions it can make for any corpus:

* **answerable**: up to 400 questions generated from the corpus itself, from a seeded sample
  of chunks spread over its documents: a chunk's heading ("What is X?", "How do I …?"), a
  definition sentence ("X is a …" → "What is X?") or a few key words of a prose sentence. They
  are lightly paraphrased (a heading word dropped, a sentence cut to 3-4 of its words): a
  question made of a chunk's own words would score higher than real questions do and push the
  bar up.
* **off-topic**: a bundled list of general questions from many domains
  (``data/offtopic_questions.txt``). A corpus may happen to cover one of them (a cookbook, a
  Rust manual), so off-topic questions that score as high outliers are dropped: above the
  off-topic median + 3 robust standard deviations (1.4826 × MAD), the usual robust outlier rule.

The bar sits ``BAR_POSITION`` (0.635) of the way from the mean off-topic score to the mean
generated-question score: past the middle, because the unanswerable questions users really ask
are nearer the corpus's domain than the bundled ones (``choose_bar`` says why the best
separating point of the two sets, ``recommend_bar_for_scores``, sits too low). With it go the
expected answer and abstain rates on the two sets. It is stored in the collection's metadata
under ``auto_calibration`` (the labelled bar lives under ``calibration`` and wins:
``bar_info``), recomputed when an ingest changes the corpus version: about 480 support scores,
~5 s on the bundled guide, 12 s on the Git docs, 17-24 s on the 7,000-chunk Django docs (index
load included, 2 busy cores).
Measured against labelled sets, 8 sampling seeds each: ``bench/labelfree.py``.
"""

from __future__ import annotations

import random
import re
import statistics
import time
from dataclasses import asdict, dataclass, fields
from importlib import resources
from typing import Any, Callable, Literal, Mapping, Protocol, Sequence

from ragcore.abstain.answerability import Support
from ragcore.settings.config import RagcoreSettings
from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.retrieval import HybridSearch
from ragcore.storage.store import Store, utc_now
from ragcore.textutil import sentence_spans
from ragcore.types import Chunk

AUTO_KEY = "auto_calibration"  # the labelled bar is meta["calibration"]
SEED = 1729
# 400, not 100: the bar moves with the sample of chunks, and on django-docs-qa the bars that
# answer and abstain on >= 80 % lie in a 0.013-wide window; over 8 seeds the bar spread 0.018 with
# 100 questions and 0.008 with 400 (bench/results/labelfree.md). Scoring is ~10-30 ms a question.
N_ANSWERABLE = 400
MIN_ANSWERABLE = 6  # fewer generated questions than this: not enough to set a bar on
OUTLIER_MADS = 3.0
# Where the bar sits between the mean off-topic score (0) and the mean generated-question score
# (1). Past the middle because the unanswerable questions users ask are nearer the corpus than
# the bundled off-topic ones (see choose_bar). Chosen on the three labelled sets there are, with
# 400 generated questions over 8 sampling seeds each: >= 80 % answered and abstained for every
# seed needs 0.56-1.0 on git-docs-qa, 0.62-0.71 on the bundled guide and 0.628-0.640 on
# django-docs-qa (whose answerable and unanswerable questions overlap most); 0.635 is the middle
# of the range all three share. Django alone sets it: a corpus whose questions overlap as much
# may need its own labelled calibration (`ragcore eval --calibrate`).
BAR_POSITION = 0.635
MIN_SEPARATION = 0.05  # means closer than this: the generated questions tell nothing, keep the settings' bar
# renamed when the rule or its constants change, so a stored bar of an older rule is recomputed
# at the next ingest (ensure_auto_calibration)
METHOD = "generated-vs-offtopic/2"

# Headings that name no subject a user would ask about.
_GENERIC = {
    "introduction", "overview", "example", "examples", "notes", "note", "see also", "summary", "contents",
    "table of contents", "index", "references", "footnotes", "changelog", "changes", "license", "todo",
    "versions affected", "backwards incompatible changes", "bugfixes", "features", "minor features",
    "what's new", "whats new", "usage", "details", "background", "related", "appendix", "faq",
}
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_\-']*")
_STOP = frozenset(
    """a an and are as at be but by can do does for from has have how i if in into is it its me my no not of on
    or our so such that the their then there these they this to was we what when where which who why will with
    you your also may must should would could one two more most other some any all each than very only just
    used using use here see following example""".split()
)
_DEFINITION = re.compile(
    r"^(?:The |An? )?([A-Za-z`][\w.`()\-]*(?: [\w.`()\-]+){0,4}?) (?:is|are) (?:a|an|the|used|one|what|how)\b"
)

Kind = Literal["heading", "definition", "keywords"]


@dataclass(frozen=True)
class GeneratedQuestion:
    question: str
    kind: Kind
    path: str  # the chunk it was made from
    start_line: int


# --------------------------------------------------------------------------- generating questions


def clean_heading(text: str) -> str:
    """A heading without markup, pilcrows, numbering or a trailing colon."""
    t = re.sub(r"[`*¶#]+", "", text).strip()  # not "_": AUTH_USER_MODEL is a heading too
    t = re.sub(r"^\d+(\.\d+)*\.?\s+", "", t)
    return t.rstrip(":.").strip()


def _heading_question(heading: str, rng: random.Random) -> str | None:
    h = clean_heading(heading)
    words = h.split()
    if not 1 <= len(words) <= 10 or h.lower() in _GENERIC or h.endswith("?") or not _WORD.search(h):
        return None
    if re.match(r"(?i)how (to|do i|can i)\b", h):
        return "How do I " + re.sub(r"(?i)^how (to|do i|can i)\s+", "", h) + "?"
    if len(words) == 1 and re.search(r"[._()]", h):  # an identifier: QuerySet.filter(), AUTH_USER_MODEL
        return f"What does {h} do?"
    # paraphrase: drop an inner content word, so the question is not the heading verbatim (the
    # first and last words carry the subject: "Installing … with pip")
    inner = [i for i, w in enumerate(words[1:-1], 1) if w.lower() not in _STOP]
    if len(words) >= 4 and inner:
        del words[rng.choice(inner)]
    phrase = " ".join(words)
    if words[0].lower().endswith("ing") and len(words[0]) > 4:
        return f"What should I know about {phrase}?"
    return rng.choice(("What is {}?", "How does {} work?", "Tell me about {}.")).format(phrase)


def _prose_sentences(text: str) -> list[str]:
    out = []
    for sp in sentence_spans(text):
        words = sp.text.split()
        letters = sum(ch.isalpha() for ch in sp.text)
        if not sp.heading and 6 <= len(words) <= 45 and letters >= 0.7 * len(sp.text.replace(" ", "")):
            out.append(sp.text)
    return out


def _definition_question(sentences: Sequence[str]) -> str | None:
    for s in sentences:
        m = _DEFINITION.match(s)
        if m and m.group(1).lower() not in _STOP and m.group(1).split()[0].lower() not in ("it", "this", "there"):
            return f"What is {m.group(1).strip('`')}?"
    return None


def _keywords_question(sentences: Sequence[str], rng: random.Random) -> str | None:
    """3-4 of a sentence's content words, in order: a search-box query, not the sentence itself."""
    for s in rng.sample(list(sentences), len(sentences)):
        words = list(dict.fromkeys(w for w in _WORD.findall(s) if w.lower() not in _STOP and len(w) > 3))
        if len(words) < 4:
            continue
        keep = sorted(rng.sample(range(len(words)), min(len(words), rng.choice((3, 4)))))
        phrase = " ".join(words[i] for i in keep)
        return rng.choice(("{}?", "How does {} work?", "What about {}?")).format(phrase)
    return None


def question_from_chunk(chunk: Chunk, rng: random.Random, prefer: int) -> GeneratedQuestion | None:
    """One question from ``chunk``: heading, definition or key words, starting with kind ``prefer``
    (0, 1, 2) so the sample mixes them, falling back to the others."""
    sentences = _prose_sentences(chunk.text)
    heading = next((h for h in (*reversed(chunk.section), chunk.title or "") if h.strip()), "")
    makers: list[tuple[Kind, Callable[[], str | None]]] = [
        ("heading", lambda: _heading_question(heading, rng) if heading else None),
        ("definition", lambda: _definition_question(sentences)),
        ("keywords", lambda: _keywords_question(sentences, rng)),
    ]
    for kind, make in makers[prefer:] + makers[:prefer]:
        q = make()
        if q:
            return GeneratedQuestion(q, kind, chunk.path, chunk.start_line)
    return None


def generate_questions(chunks: Sequence[Chunk], n: int = N_ANSWERABLE, seed: int = SEED) -> list[GeneratedQuestion]:
    """Up to ``n`` distinct questions from a seeded sample of chunks, spread over documents
    (round-robin over shuffled documents, so one long file cannot supply them all). A small
    corpus is walked up to three times, each pass starting from another kind of question."""
    rng = random.Random(seed)
    by_doc: dict[str, list[Chunk]] = {}
    for c in sorted(chunks, key=lambda c: (c.path, c.page or 0, c.start_line, c.ordinal)):
        by_doc.setdefault(c.path, []).append(c)
    docs = sorted(by_doc)
    rng.shuffle(docs)
    for d in docs:
        rng.shuffle(by_doc[d])
    order = [(by_doc[d][i], p) for p in range(3) for i in range(max(map(len, by_doc.values()), default=0))
             for d in docs if i < len(by_doc[d])]
    out: list[GeneratedQuestion] = []
    seen: set[str] = set()
    for k, (chunk, p) in enumerate(order):
        if len(out) >= n:
            break
        q = question_from_chunk(chunk, rng, (k + p) % 3)
        if q and q.question.lower() not in seen:
            seen.add(q.question.lower())
            out.append(q)
    return out


def offtopic_questions() -> list[str]:
    """The bundled off-topic questions."""
    text = resources.files("ragcore").joinpath("data/offtopic_questions.txt").read_text(encoding="utf-8")
    return [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


# --------------------------------------------------------------------------- choosing the bar


@dataclass(frozen=True)
class BarDecision:
    bar: float | None  # None: the two sets do not separate, keep the settings' bar
    answerable_mean: float
    offtopic_mean: float
    kept_offtopic: tuple[float, ...]  # off-topic scores after dropping high outliers
    note: str = ""


def drop_high_outliers(scores: Sequence[float], mads: float = OUTLIER_MADS) -> list[float]:
    """Scores above median + ``mads`` robust standard deviations (1.4826 × MAD) removed: the
    off-topic questions this corpus happens to cover (a Django manual answers the git question)."""
    if not scores:
        return []
    med = statistics.median(scores)
    sigma = 1.4826 * statistics.median(abs(x - med) for x in scores)
    return [x for x in scores if x <= med + mads * max(sigma, 1e-6)]


def choose_bar(answerable: Sequence[float], offtopic: Sequence[float], position: float = BAR_POSITION) -> BarDecision:
    """The bar ``position`` of the way from the mean off-topic score (high outliers dropped) to the
    mean generated-question score.

    Why not the point that best separates the two sets (``recommend_bar_for_scores``): they
    usually separate completely, and the bundled off-topic questions are far from any corpus,
    while the unanswerable questions users ask sit near its domain ("Why are Python strings
    immutable?" on the Django docs) and score well above them; the gap's middle then sits too
    low. Generated questions, made of the corpus's words, score a little above real ones too.
    Means, not medians or quantiles: the mean moves least from one sample of chunks to another
    (on the three labelled sets, 400 questions, 8 seeds: the range of positions that meets
    80/80 for every seed is widest with means; bench/labelfree.py keeps the scores to redo this).
    """
    kept = drop_high_outliers(offtopic)
    if not answerable or not kept:
        return BarDecision(None, float("nan"), float("nan"), tuple(kept), "no questions to calibrate on")
    a_mean, o_mean = statistics.fmean(answerable), statistics.fmean(kept)
    if a_mean - o_mean < MIN_SEPARATION:
        note = f"generated questions (mean {a_mean:.2f}) do not score above off-topic ones (mean {o_mean:.2f})"
        return BarDecision(None, a_mean, o_mean, tuple(kept), note)
    return BarDecision(round(o_mean + position * (a_mean - o_mean), 4), a_mean, o_mean, tuple(kept))


# --------------------------------------------------------------------------- running it on a collection


@dataclass(frozen=True)
class AutoCalibration:
    """What ``meta["auto_calibration"]`` holds."""

    bar: float | None  # None: no bar could be set (see ``note``); the settings' bar applies
    method: str
    expected_answer_rate: float | None  # share of the generated questions at or above the bar
    expected_abstain_rate: float | None  # share of the kept off-topic questions below it
    n_answerable: int  # generated questions scored
    n_offtopic: int  # off-topic questions kept
    n_offtopic_dropped: int  # off-topic questions dropped as high outliers (the corpus covers them)
    answerable_mean: float | None
    offtopic_mean: float | None
    corpus_version: str | None
    when: str
    seconds: float
    note: str = ""

    def as_meta(self) -> dict[str, Any]:
        return asdict(self)


class CalibrationHost(Protocol):
    """What auto-calibration needs of an Engine (a Protocol: ``engine.py`` imports this module).
    ``support`` is ``answerability.question_support``, the function answers are judged by, so the
    bar is set on the very score a question is later compared with."""

    store: Store
    encoder: OnnxMiniLM
    hybrid_search: HybridSearch

    def support(self, question: str, settings: RagcoreSettings | None = None, collection: str | None = None) -> Support: ...


def corpus_chunks(host: CalibrationHost, collection: str, max_docs: int = 60) -> Sequence[Chunk]:
    """The chunks to generate questions from: the in-process index's (loaded anyway for
    scoring) on the embedded store; on a server, those of a seeded sample of documents."""
    if host.store.is_embedded:
        return host.hybrid_search.index(collection).chunks
    paths = sorted({ref.path for ref in host.store.point_refs(collection)})
    sample = random.Random(SEED).sample(paths, min(max_docs, len(paths)))
    return [c for p in sample for c in host.store.chunks_of(collection, p)]


@dataclass(frozen=True)
class CalibrationScores:
    """The two question sets of one calibration and their support scores."""

    generated: tuple[GeneratedQuestion, ...]  # empty when the corpus gave fewer than MIN_ANSWERABLE
    answerable: tuple[float, ...]  # support of each generated question
    offtopic: tuple[float, ...]  # support of each bundled off-topic question (before dropping outliers)


def calibration_scores(
    host: CalibrationHost, collection: str, settings: RagcoreSettings, *, seed: int = SEED, n: int = N_ANSWERABLE,
) -> CalibrationScores:
    """Generate ``n`` questions (sampling seeded by ``seed``) and score both sets on ``collection``."""
    # the whole collection: a path filter of the moment must not shape the collection's bar
    s = settings.with_(collection=collection, path_filter=None)
    generated = generate_questions(corpus_chunks(host, collection), n, seed)
    if len(generated) < MIN_ANSWERABLE:
        generated = []  # too few to say where the corpus's questions score
    offtopic = offtopic_questions()
    # one batch in the collection's own model; support() finds them cached
    host.hybrid_search.encoder_for(collection).encode_queries([g.question for g in generated] + offtopic)
    a = tuple(host.support(g.question, s, collection).score for g in generated)
    o = tuple(host.support(q, s, collection).score for q in offtopic)
    return CalibrationScores(tuple(generated), a, o)


def auto_calibrate(
    host: CalibrationHost, collection: str, settings: RagcoreSettings, *, save: bool = True, seed: int = SEED,
) -> AutoCalibration:
    """Generate and score the questions, choose the bar, and (``save``) store it with the collection."""
    t0 = time.perf_counter()
    sc = calibration_scores(host, collection, settings, seed=seed)
    a, o = sc.answerable, sc.offtopic
    d = choose_bar(a, o)
    kept = d.kept_offtopic
    cal = AutoCalibration(
        bar=d.bar, method=METHOD,
        expected_answer_rate=round(sum(x >= d.bar for x in a) / len(a), 4) if d.bar is not None else None,
        expected_abstain_rate=round(sum(x < d.bar for x in kept) / len(kept), 4) if d.bar is not None else None,
        n_answerable=len(a), n_offtopic=len(kept), n_offtopic_dropped=len(o) - len(kept),
        answerable_mean=_r(d.answerable_mean), offtopic_mean=_r(d.offtopic_mean),
        corpus_version=host.store.read_meta(collection).get("corpus_version"), when=utc_now(),
        seconds=round(time.perf_counter() - t0, 2),
        note=d.note or ("" if sc.generated else "the corpus gave too few questions to calibrate on"),
    )
    if save:
        host.store.write_meta(collection, {AUTO_KEY: cal.as_meta()})
    return cal


def ensure_auto_calibration(host: CalibrationHost, collection: str, settings: RagcoreSettings) -> AutoCalibration | None:
    """Calibrate unless the stored auto-calibration is of the current corpus version (an
    ingest that changed nothing costs nothing). None for an empty collection."""
    if host.store.count(collection) == 0:
        return None
    meta = host.store.read_meta(collection)
    have = meta.get(AUTO_KEY) or {}
    # a record of another method or of an older shape of this one is recomputed, not trusted
    if have.get("corpus_version") == meta.get("corpus_version") and have.get("method") == METHOD \
            and set(have) == {f.name for f in fields(AutoCalibration)}:
        return AutoCalibration(**have)
    return auto_calibrate(host, collection, settings)


def _r(x: float) -> float | None:
    return None if x != x else round(x, 4)  # NaN: no mean


# --------------------------------------------------------------------------- which bar is in force


BarSource = Literal["labelled", "auto", "settings"]


@dataclass(frozen=True)
class AbstainBarInfo:
    """The abstain bar in force for a collection, where it comes from and what it is expected to do."""

    value: float
    source: BarSource
    description: str  # "calibrated on guide-qa" | "calibrated without labels on this corpus (…)" | "settings"
    method: str | None = None  # "labelled" or METHOD
    expected_answer_rate: float | None = None  # on the calibration's answerable (or generated) questions
    expected_abstain_rate: float | None = None  # on its unanswerable (or off-topic) questions
    n_answerable: int | None = None
    n_offtopic: int | None = None  # unanswerable questions for a labelled calibration
    when: str | None = None
    dataset: str | None = None  # the labelled set's name
    stale: bool = False  # calibrated on another corpus version than the current one

    def summary(self) -> str:
        """One line for the CLI and the app: "0.43 — calibrated on guide-qa (expected: answers 86 %, abstains 89 %)"."""
        rates = ""
        if self.expected_answer_rate is not None and self.expected_abstain_rate is not None:
            rates = f" (expected: answers {self.expected_answer_rate:.0%}, abstains {self.expected_abstain_rate:.0%})"
        return f"{self.value:.2f} — {self.description}{rates}{' [older corpus version]' if self.stale else ''}"


def bar_info(meta: Mapping[str, Any], settings: RagcoreSettings) -> AbstainBarInfo:
    """Labelled calibration first, then the label-free one, then the settings' bar.
    ``settings.calibrated_bar`` off means the settings' bar, always."""
    if settings.calibrated_bar:
        version = meta.get("corpus_version")
        cal = meta.get("calibration") or {}
        if isinstance(cal.get("bar"), (int, float)):
            dataset = cal.get("dataset", "a data set")
            return AbstainBarInfo(
                float(cal["bar"]), "labelled", f"calibrated on {dataset}", "labelled", cal.get("answer_rate"),
                cal.get("abstain_rate"), cal.get("answerable"), cal.get("unanswerable"), cal.get("when"), dataset,
                _stale(cal, version),
            )
        auto = meta.get(AUTO_KEY) or {}
        if isinstance(auto.get("bar"), (int, float)):
            desc = (f"calibrated without labels on this corpus ({auto.get('n_answerable')} generated / "
                    f"{auto.get('n_offtopic')} off-topic questions)")
            return AbstainBarInfo(
                float(auto["bar"]), "auto", desc, auto.get("method"), auto.get("expected_answer_rate"),
                auto.get("expected_abstain_rate"), auto.get("n_answerable"), auto.get("n_offtopic"), auto.get("when"),
                None, _stale(auto, version),
            )
    return AbstainBarInfo(settings.abstain_bar, "settings", "settings")


def _stale(cal: Mapping[str, Any], version: str | None) -> bool:
    return bool(cal.get("corpus_version") and version and cal["corpus_version"] != version)
