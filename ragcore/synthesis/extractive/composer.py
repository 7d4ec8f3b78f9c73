"""The offline default generator: an answer made only of the evidence's own words, verbatim.

It quotes *units* of the documents' structure (``units.py``): whole sentences, and a
sentence together with the code block, list or table it introduces ("To ingest…, run:" brings
its command). A sentence that introduces a block it cannot bring, a sentence cut off by the
chunk's end, a heading or a table row run into prose is never quoted. For every unit

    score = 0.5·cos(question, unit) + 0.25·lexical + 0.25·cos(question, chunk)

where *lexical* is the share of the question's content words the unit contains and the last
term is the chunk's own retrieval cosine; then the rules of ``rules.py`` apply (meta
sentences about the page are dropped, pointers lose 15%, the question's intent and key terms
add small bonuses). It keeps the best unit and those close to it (≥ 65% of its score),
skipping near duplicates, up to ``max_sentences``; best first, the rest in reading order. The
units come from at most ``max_docs`` documents (setting ``answer_docs``, default 1), those of the
best units; a selection's units are never held back by it. Quoting one page makes the answer cite
the page that answers: on the two test sets a citation into a page other than the best unit's was
rarely to a page the reference answer links (0 of 11 on Django, 5 of 30 on Git), and with one page
and the wider 65% margin citation precision rose (Django 0.481 → 0.596, Git 0.307 → 0.370) while token F1
stayed level (0.188 → 0.189, 0.215 → 0.212; bench/results/eval-*-s7.md). A unit that leans on
the sentence before it ("Note that this…", "However, …") comes with that sentence or not at all
(``context.py``), within the same ``max_sentences``.

Rendering keeps the source's bytes: a sentence is its source text with whitespace across line
breaks folded to one space; a block keeps every line (code without a fence in the source, as
HTML ``<pre>`` or a reST literal block, gets a bare ```` ``` ```` fence around its lines). The
``[n]`` marker follows the sentence, and the block it brings (each list item carries its own).
A definition quoted from its term on ("DEBUG", "before_request(f)", "-F <file>" above the
text that defines it) keeps the term on a line of its own and is a paragraph of its own: run
into one line, "DEBUG Whether debug mode is enabled." read as a fragment.
Whether to answer at all is the engine's call (``answerability.py``); the composer abstains
only when the evidence has nothing it can quote. Deterministic: same evidence, same answer.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, replace
from typing import Generator, Sequence

from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.encoders.sparse import STOPWORDS, tokenize
from ragcore.safety.injection import looks_like_instruction
from ragcore.storage.store import embed_text
from ragcore.citations.markers import markers_in
from ragcore.textutil import Span, content_terms, normalize_ws, sentence_spans
from ragcore.types import Chunk, Confidence, Evidence
from ragcore.synthesis.base import Synthesis, SynthesisJob, word_pieces
from ragcore.abstain.selection_support import SelectionFit, selection_fit
from ragcore.synthesis.extractive import answers, cap
from ragcore.synthesis.extractive.context import Antecedents
from ragcore.synthesis.extractive.reader import ReaderModel, Scored, confidence_features, features, load_model
from ragcore.synthesis.extractive.rules import Intent, adjust, intent_of, is_meta, says_what_to_do, starts_mid_sentence
from ragcore.synthesis.extractive.units import PDF_TABLE, QuoteBlock, Picked, Unit, table_head, units_of

ABSTAIN_TEXT = "The corpus does not contain enough evidence to answer this."
# what an abstention says, by where the answer was to come from
ABSTAIN_TEXTS = {
    "corpus": ABSTAIN_TEXT,
    "selection": "The selection does not contain enough evidence to answer this.",
    "both": "Neither the selection nor the corpus contains enough evidence to answer this.",
}
# an answer the reader is not confident of opens with this line, then quotes the closest passages
UNSURE_LEAD = "This may not answer the question; the closest passages are:"
_UNSURE_DOCS = 3  # an unsure answer quotes the best units of up to this many pages, not one
_RELATIVE_KEEP = 0.65
_DUPLICATE_COS = 0.9
_QUESTION_END = re.compile(r"""\?["'”’)\]]*$""")
_MAX_TABLE_ROWS = 4  # a table on its own: its header and the rows that match best
# a seated chunk (Evidence.seated: retrieval/passage_seats.py) is quoted only when its best unit beats
# the best unit of the document ranking's top-K by this much (held_back). Chosen on the four question
# sets with one seat: 0.1 moved Git's and SQLAlchemy's answers to weaker pages, 0.2 changed no answer
# there and moved one Scrapy answer to its linked page (bench/results/issue28-recall15.md)
SEAT_MARGIN = 0.2


@dataclass(frozen=True)
class ExtractiveResult:
    text: str
    status: str  # "ok" | "abstained"
    best_score: float
    picked: tuple[Picked, ...]
    best_selection: float | None = None  # best score among sentences of the selection, if any
    selection_fit: SelectionFit | None = None  # is the question about the selection? (selection_support.py)
    confidence: float | None = None  # the reader's calibrated chance that the answer holds the answer (reader.py)
    level: str | None = None  # "high" | "medium" | "low"; low: the answer opens with UNSURE_LEAD
    best_probability: float | None = None  # the reader's probability for its best unit (None when it does not rank)
    signals: tuple[float, ...] = ()  # what the confidence reads (reader.CONF_FEATURES)

    @property
    def unsure(self) -> bool:
        return self.text.startswith(UNSURE_LEAD)


def _usable(unit: Unit) -> bool:
    if is_meta(unit) or looks_like_instruction(unit.plain):
        return False  # instruction-like text is never quoted as an answer
    if markers_in(unit.sentence):
        return False  # "markers such as [1] and [2]": quoted, its brackets would read as citations
    if _QUESTION_END.search(unit.sentence):
        return False  # "So how do you register that blueprint?" asks; it answers nothing
    if unit.sentence:
        words = unit.sentence.split()
        letters = sum(ch.isalpha() for ch in unit.sentence)
        # mostly prose, not code or a table run into a line
        return 4 <= len(words) <= 90 and letters >= 0.55 * len(unit.sentence.replace(" ", ""))
    return True


def candidates(evidence: Sequence[Evidence], intent: Intent | None = None, default_q: bool = False) -> list[tuple[Evidence, Unit]]:
    """Every quotable unit of the evidence, in evidence order. A sentence that opens on a plain
    lowercase word that names nothing here is the rest of a sentence begun before it (in a
    block the text lost, or across a chunk boundary): quoted, it reads as a fragment. With the
    question's ``intent``, the commands and default entries that answer it too (``answers.py``)."""
    out = []
    for e in evidence:
        names = source_names(e.chunk)
        extra = answers.extra_units(e.chunk, intent, default_q) if intent is not None else []
        out += [(e, u) for u in [*units_of(e.chunk), *extra]
                if _usable(u) and (not starts_mid_sentence(u, names) or _after_full_stop(e.chunk, u))]
    return out


_FULL_STOP_BEFORE = re.compile(r"""[.!?]["'”’)\]]*[ \t]*\n?[ \t]*$""")


def _after_full_stop(chunk: Chunk, unit: Unit) -> bool:
    """A PDF sentence that opens in lower case right after another sentence's full stop, in the
    same paragraph, is a sentence the document starts on a name ("reprint format mimics…", "letter
    sized paper should be used…"), not a fragment; it is quoted with the sentence before it
    (``context.py``: it still leans back). Other kinds keep the stricter rule."""
    return chunk.kind == "pdf" and unit.start > 0 and bool(_FULL_STOP_BEFORE.search(chunk.text[max(0, unit.start - 8) : unit.start]))


class ExtractiveComposer:
    name = "extractive"

    def __init__(self, encoder: OnnxMiniLM, *, max_sentences: int = 4, max_docs: int = 1,
                 reader: ReaderModel | None | str = "shipped", second_page: float = 0.0) -> None:
        self.encoder = encoder
        self.max_sentences = max_sentences
        self.max_docs = max_docs
        # a page beyond max_docs is quoted too for a unit scoring at least this share of the best (0: never)
        self.second_page = second_page
        # the learned reader ranks the units and says how sure the answer is; None: the hand-made score alone
        self.reader = load_model() if reader == "shipped" else reader
        self.scored: list[Scored] = []
        self.best_p: float | None = None  # the reader's best probability for the last question scored

    def score_sentences(self, question: str, evidence: Sequence[Evidence]) -> list[Picked]:
        intent, default_q, count = intent_of(question), answers.asks_default(question), answers.asks_count(question)
        items = candidates(evidence, intent, default_q)
        self._cos: dict[int, float] = {}
        self._base: dict[int, float] = {}  # the hand-made score: what the abstention rules were set on
        if not items:
            return []
        # a corpus chunk's cosine is already known from retrieval; only selection pieces need one
        unscored = [e for e in evidence if e.dense_score is None]
        vecs = self.encoder.encode([question, *(unit_text_to_embed(u) for _, u in items), *(embed_text(e.chunk) for e in unscored)])
        q = vecs[0]
        unit_cos = vecs[1 : 1 + len(items)] @ q
        chunk_cos = {e.n: float(e.dense_score) for e in evidence if e.dense_score is not None}
        chunk_cos.update({e.n: float(v @ q) for e, v in zip(unscored, vecs[1 + len(items) :])})
        q_terms = content_terms(question)
        scored = []
        for (e, unit), cos in zip(items, unit_cos):
            terms = _asked_of(q_terms, e.chunk)
            tokens = tuple(tokenize(unit.plain))
            lex = len(terms & (set(tokens) - STOPWORDS)) / len(terms) if terms else 0.0
            score = adjust(0.5 * float(cos) + 0.25 * lex + 0.25 * chunk_cos[e.n], unit, intent, e.chunk.section)
            score += answers.bonus(unit, intent, default_q, count)
            if e.origin == "selection":
                score += 0.05  # in "both" mode the selection is the primary source
            scored.append(Scored(e, unit, score, float(cos), lex, chunk_cos[e.n], tokens))
        self.scored = scored
        final = [s.score for s in scored]
        self.best_p = None
        if self.reader is not None and self.reader.rank:  # a model that only says how sure costs no features
            probs = self.reader.probs(features(question, scored))
            self.best_p = float(probs.max())
            b = self.reader.blend  # the reader's probability replaces (or nudges) the hand-made score
            final = [(s.score + b * float(p)) if b else float(p) + 0.05 * (s.evidence.origin == "selection")
                     for p, s in zip(probs, scored)]
        out = []
        for s, score in zip(scored, final):
            unit = s.unit
            span = Span(unit.start, unit.end, unit.sentence or normalize_ws(unit.plain), block=unit.block and unit.block.kind)
            out.append(Picked(s.evidence.n, span, score, _trimmed(unit, q_terms)))
            self._cos[id(out[-1])] = s.cos
            self._base[id(out[-1])] = s.score
        self._vecs = {id(p): v for p, v in zip(out, vecs[1 : 1 + len(items)])}
        return out

    def compose(self, question: str, evidence: Sequence[Evidence]) -> ExtractiveResult:
        scored = held_back(self.score_sentences(question, evidence), evidence)
        selected = {e.n for e in evidence if e.origin == "selection"}
        fit = _fit(question, evidence, [self._cos[id(p)] for p in scored if p.n in selected]) if selected else None
        if not scored:
            return ExtractiveResult(ABSTAIN_TEXT, "abstained", 0.0, (), selection_fit=fit)
        # a selection the question is about leads: its units are ranked (and kept) before the corpus's
        first = selected if fit is not None and fit.on_topic else set()
        ranked = sorted(scored, key=lambda p: (p.n not in first, -p.score, p.n, p.span.start))
        best = max(self._base[id(p)] for p in scored)
        best_selection = max((self._base[id(p)] for p in scored if p.n in selected), default=None)
        follows = {e.n: prev.n for prev, e in zip(evidence, evidence[1:]) if e.origin == prev.origin == "selection"}
        context = Antecedents(scored, {e.n: e.chunk.text for e in evidence}, {e.n: source_names(e.chunk) for e in evidence}, follows)
        best_p = self.best_p
        signals = confidence_features(question, self.scored, evidence)
        confidence, level = self._confidence(signals)
        unsure = level == "low" and self.reader is not None and self.reader.gate
        chosen = self._choose(ranked, evidence, context, first, _UNSURE_DOCS if unsure else self.max_docs)
        # a how-to answer holds the command that does it, one about a default the unit that states it (answers.py)
        if intent_of(question).howto or answers.asks_default(question):
            pages = {e.n: e.chunk.path for e in evidence}
            used = {pages[p.n] for p in chosen}
            chosen = answers.with_command(  # the selection's command when the question is about the selection
                chosen, ranked, lambda p: (p.n in first if first else pages[p.n] in used) and not context.leans(p),
                self.max_sentences, answers.is_command if intent_of(question).howto else answers.states_default)
        # the unit that answers first (a command for a how-to question, the entry that states a
        # default for a question about one: answers.py), else the best unit that stands alone; the
        # rest in reading order (evidence number, then position); for a how-to question the
        # instructions and commands before the explanations; a unit that leans on the one before it
        # follows that one (context.py)
        intent = intent_of(question)
        howto = intent.howto
        pool = [p for p in chosen if p.n in first] or chosen
        lead = answers.lead(pool, intent, answers.asks_default(question), lambda p: not context.leans(p)) \
            or next((p for p in pool if not context.leans(p)), pool[0])
        rest = sorted((p for p in chosen if p is not lead),
                      key=lambda p: (p.n not in first, not (howto and p.unit and says_what_to_do(p.unit)), p.n, p.span.start))
        ordered = context.grouped(lead, rest)
        # the documented limit counts sentences, not units: a list or a definition can bring several (cap.py)
        ordered = cap.fit(ordered, self.max_sentences, content_terms(question),
                          lambda p: context.before(p) if context.leans(p) else None)
        text = render(ordered)
        if unsure:
            text = f"{UNSURE_LEAD}\n\n{text}"
        return ExtractiveResult(text, "ok", best, tuple(ordered), best_selection, fit, confidence, level, best_p, signals)

    def _confidence(self, signals: tuple[float, ...]) -> tuple[float | None, str | None]:
        """The reader's calibrated confidence (reader.CONF_FEATURES) and its level."""
        if self.reader is None:
            return None, None
        c = self.reader.confidence(signals)
        return c, self.reader.level(c)

    def _choose(self, ranked: Sequence[Picked], evidence: Sequence[Evidence], context: Antecedents,
                first: set[int] | frozenset[int] = frozenset(), max_docs: int | None = None) -> list[Picked]:
        """The best units within ``_RELATIVE_KEEP`` of the best, up to ``max_sentences`` sentences
        (``cap.py``: a unit can bring several; a list it brings can be cut to fit): from at most
        ``max_docs`` pages, no near duplicates, each with the units it leans on. When
        no unit can be quoted that way (the best leans on a sentence the chunk does not hold,
        and nothing else is close), the best unit that can, however far below the best.
        ``first``: evidence ranked ahead (a selection the question is about); its units and the
        others' are each kept within ``_RELATIVE_KEEP`` of their own best."""
        best = ranked[0]
        top = {True: next((p.score for p in ranked if p.n in first), 0.0),
               False: next((p.score for p in ranked if p.n not in first), 0.0)}
        page = {e.n: None if e.origin == "selection" else e.chunk.path for e in evidence}
        chosen: list[Picked] = []
        pages: set[str] = set()
        extra: set[str] = set()  # pages beyond max_docs, let in by a unit close to the best (second_page)
        limit = max_docs or self.max_docs
        used = 0  # sentences
        for p in ranked:
            if used >= self.max_sentences:
                break
            if p.score < _RELATIVE_KEEP * top[p.n in first]:
                continue
            beyond = page[p.n] is not None and (page[p.n] in extra or (page[p.n] not in pages and 0 < limit <= len(pages)))
            if beyond and not self._second_page_takes(p.score, top[p.n in first], page[p.n] in extra or not extra):
                continue  # another page: the answer quotes the pages of its best units only
            v = self._vecs[id(p)]
            if any(float(v @ self._vecs[id(c)]) > _DUPLICATE_COS or _overlaps(p, c) for c in chosen):
                continue
            before = context.needs(p, chosen)
            cost = None if before is None else sum(cap.least_sentences(q.unit) for q in [*before, p])
            if cost is None or used + cost > self.max_sentences:
                continue  # a fragment without the sentence it leans on, or no room for that one
            chosen += [*before, p]
            used += cost
            pages |= {page[p.n]} - {None}
            extra |= {page[p.n]} if beyond else set()
        if chosen:
            return chosen
        for p in ranked:
            before = context.needs(p, [])
            if before is not None and sum(cap.least_sentences(q.unit) for q in [*before, p]) <= self.max_sentences:
                return [*before, p]
        return [best]

    def _second_page_takes(self, score: float, top: float, room: bool) -> bool:
        """Whether a unit of a page beyond ``max_docs`` is quoted: one more page at most (``room``: the
        unit's page is that page, or there is none yet), and only its units within ``second_page`` of
        the best (SQLAlchemy's answers on a second page scored 0.9-1.0 of the best; the 65% margin
        would let in the near misses issue 28 kept out for citation precision)."""
        return bool(self.second_page) and room and score >= self.second_page * top


def held_back(scored: list[Picked], evidence: Sequence[Evidence], margin: float | None = None) -> list[Picked]:
    """``scored`` without the units of seated evidence (``Evidence.seated``: the best passage of a
    document the top-K lacked, retrieval/passage_seats.py), unless the best of them beats the best
    of the rest by ``margin`` (None: ``SEAT_MARGIN``). The seat widens the evidence (the page is
    there to see, and for a language model to read); what the answer quotes stays the document
    ranking's top-K unless the seat clearly answers better, because a seated passage's sentence
    often scores a little better without being on the page that answers (git-docs-qa: 19 → 14
    answers citing a linked page with two seats quoted freely, bench/results/issue28-trust.md)."""
    margin = SEAT_MARGIN if margin is None else margin
    held = {e.n for e in evidence if e.seated}
    if not held:
        return scored
    best_held = max((p.score for p in scored if p.n in held), default=None)
    best_rest = max((p.score for p in scored if p.n not in held), default=None)
    if best_rest is None or (best_held is not None and best_held >= best_rest + margin):
        return scored  # nothing else to quote, or the seated page clearly answers better
    return [p for p in scored if p.n not in held]


def _asked_of(q_terms: set[str], chunk: Chunk) -> set[str]:
    """The question's words that tell a PDF's passages apart: without the words of the file's own
    name ("york-thesis" in york-thesis.pdf), which every passage of it is about, so a sentence that
    repeats the name ("The york-thesis class is invoked in the standard fashion.") does not outscore
    the one that answers ("This class file is based on the report class…")."""
    if chunk.kind != "pdf":
        return q_terms
    rest = q_terms - content_terms(chunk.path.rsplit("/", 1)[-1].rsplit(".", 1)[0].replace("_", " "))
    return rest or q_terms


def _fit(question: str, evidence: Sequence[Evidence], cosines: list[float]) -> SelectionFit:
    """The question against the selection: its pieces' text and their units' cosines."""
    text = "\n".join(e.chunk.text for e in evidence if e.origin == "selection")
    return selection_fit(question, text, cosines)


def source_names(chunk: Chunk) -> frozenset[str]:
    """Lowercase words that name things where the chunk comes from: its file name and headings."""
    return frozenset(re.findall(r"[a-z]+", " ".join([chunk.path.rsplit("/", 1)[-1], *chunk.section]).lower()))


def unit_text_to_embed(unit: Unit) -> str:
    """What a unit is embedded as: its sentence, or a table's text (the block's first lines)."""
    return unit.sentence or normalize_ws(unit.plain)[:500]


def _overlaps(a: Picked, b: Picked) -> bool:
    """Two units quoting the same text (a list item's sentence and the list it belongs to)."""
    if a.n != b.n:
        return False
    ra = (a.span.start, a.unit.block.end if a.unit and a.unit.block else a.span.end)
    rb = (b.span.start, b.unit.block.end if b.unit and b.unit.block else b.span.end)
    return ra[0] < rb[1] and rb[0] < ra[1]


def _trimmed(unit: Unit, q_terms: set[str]) -> Unit:
    """A table on its own keeps its header, its delimiter row and the rows that match best."""
    if unit.sentence or unit.block is None or unit.block.kind != "table":
        return unit
    if unit.block.text.startswith(PDF_TABLE):
        return replace(unit, block=replace(unit.block, text=_pdf_rows(unit.block.text, q_terms)))
    lines = unit.block.text.split("\n")
    head, rows = lines[:2], lines[2:]
    if len(rows) <= _MAX_TABLE_ROWS:
        return unit
    ranked = sorted(range(len(rows)), key=lambda i: (-len(q_terms & content_terms(rows[i])), i))[:_MAX_TABLE_ROWS]
    kept = [rows[i] for i in sorted(ranked)]
    return replace(unit, block=replace(unit.block, text="\n".join([*head, *kept])))


def _pdf_rows(fenced: str, q_terms: set[str]) -> str:
    """A PDF table's header and its rows that name the question's words (the first rows when none
    does), up to ``_MAX_TABLE_ROWS``: "Gnu stuffed 92.50" with "Animal Description Price ($)"."""
    lines = fenced.split("\n")[1:-1]
    n = table_head(lines)
    rows = lines[n:]
    hits = [r for r in rows if q_terms & content_terms(r)] or rows
    return "\n".join(["```", *lines[:n], *hits[:_MAX_TABLE_ROWS], "```"])


def render(picked: Sequence[Picked]) -> str:
    """The answer's Markdown: prose units run on in one paragraph; a unit with a block ends it,
    and a definition (a unit that opens on its term) is a paragraph of its own."""
    out: list[str] = []
    para: list[str] = []

    def flush() -> None:
        if para:
            out.append(" ".join(para))
            para.clear()

    for p in picked:
        u = p.unit
        if u is not None and u.term:
            flush()
            para.append(_with_term(u.sentence, u.term, p.n))
        elif u is None or u.block is None:
            para.append(_marked(p.span.text, p.n))
        elif u.sentence:
            para.append(_marked(u.sentence, p.n))
        if u is not None and (u.term or u.block is not None):
            flush()
            if u.block is not None:
                out.append(_block_text(u.block, p.n))
    flush()
    return "\n\n".join(out)


def _with_term(sentence: str, term: int, n: int) -> str:
    """A definition quoted from its term on: the term, a line break, the definition marked."""
    return f"{sentence[:term]}\n{_marked(sentence[term:].lstrip(), n)}"


def _marked(text: str, n: int) -> str:
    """A unit's prose with its marker after each sentence: a definition quoted from its term on,
    or a list item, can hold several, and each is a claim the checker reads on its own."""
    spans = sentence_spans(text)
    if len(spans) <= 1:
        return f"{text} [{n}]"
    for sp in reversed(spans):
        text = f"{text[: sp.end]} [{n}]{text[sp.end :]}"
    return text


def _marked_list(text: str, n: int) -> str:
    """Each sentence of each item is a claim of its own: a marker follows each. Sentences are
    found in the item's text after its bullet or number ("1." is not a sentence)."""
    out = []
    for head, body in cap.list_items(text):
        for sp in reversed(sentence_spans(body)):
            body = f"{body[: sp.end]} [{n}]{body[sp.end :]}"
        out.append(head + body)
    return "\n".join(out)


def _block_text(block: QuoteBlock, n: int) -> str:
    if block.kind == "list":
        return _marked_list(block.text, n)
    if block.text.startswith(PDF_TABLE):  # a PDF table with its intro sentence: untrimmed, plainly fenced
        return f"```{block.text[len(PDF_TABLE):]}\n\n[{n}]"
    return f"{block.text}\n\n[{n}]"


class ExtractiveSynthesizer:
    """The composer behind the synthesizer interface (``composed``: an answer already composed
    for this evidence, e.g. when the selection had to be scored before deciding to answer)."""

    name = "extractive"

    def __init__(self, composer: ExtractiveComposer, composed: ExtractiveResult | None = None) -> None:
        self.composer = composer
        self.composed = composed

    def stream(self, job: SynthesisJob, cancel: threading.Event | None = None) -> Generator[str, None, Synthesis]:
        result = self.composed or self.composer.compose(job.question, job.evidence)
        yield from word_pieces(result.text)
        # the level decides (a low answer partial, the level shown by the CLI and the app) only with a
        # model whose calibration met its target (gate); otherwise it is a hint in the JSON, whatever the level
        gate = self.composer.reader is not None and self.composer.reader.gate
        confidence = (Confidence(round(result.confidence, 4), result.level or "low", decides=gate or result.unsure)
                      if result.confidence is not None else None)
        return Synthesis(result.text, self.name, confidence=confidence)
