"""The offline extractive composer end to end through ``Engine.ask``/``Engine.stream`` on the
bundled guide: grounded answers made of verbatim evidence sentences, abstaining off-corpus,
determinism, selection and "both" modes, input errors, the event stream and cancelling."""

from __future__ import annotations

import re
import threading

import pytest

from ragcore.ingest.chunking import text_of_lines
from ragcore.ingest.read.loaders import load_file
from ragcore.engine.engine import Engine, SelectionInput
from ragcore.synthesis.extractive.composer import ABSTAIN_TEXT
from ragcore.textutil import normalize_ws
from ragcore.types import Answer, Event
from tests.conftest import DOCS

THRESHOLD_PAGE = "05-scores-top-k-and-threshold.md"
GUIDE_QUESTIONS = [
    "What does the threshold apply to?",
    "What is the default top-K?",
    "How are identifiers like AUTH_USER_MODEL tokenized?",
]
OFF_CORPUS = ["What is the boiling point of tungsten?", "Who won the 1998 World Cup?"]
SELECTION = (
    "The extractive composer never invents a sentence.\n"
    "It picks sentences from the evidence and cites each one with its number.\n"
    "When even the best sentence scores under the abstain bar,\n"
    "the composer abstains instead of answering.\n"
)
SELECTION_START = 10


def unmarked(sentence: str) -> str:
    """An answer sentence without its [n] markers, whitespace-normalised."""
    return normalize_ws(re.sub(r"\s+([.,;:!?])", r"\1", re.sub(r"\s*\[[^\]]*\]", "", sentence)))


def assert_verbatim(answer: Answer) -> None:
    """Every answer sentence is a sentence of the evidence it cites (up to its end punctuation)."""
    by_n = {e.n: e for e in answer.evidence}
    assert answer.validation.sentences
    for s in answer.validation.sentences:
        assert s.citations, s
        text = unmarked(s.text).rstrip(".!?:;")
        sources = [normalize_ws(by_n[n].chunk.text) for n in s.citations]
        assert any(text in src for src in sources), (s.text, [by_n[n].chunk.locator for n in s.citations])


def events(engine: Engine, question: str, **kwargs) -> list[Event]:
    return list(engine.stream(question, **kwargs))


@pytest.fixture(scope="module")
def answers(guide_engine: Engine) -> dict[str, Answer]:
    """Each corpus-mode question asked once (answering costs seconds on 2 busy cores)."""
    return {q: guide_engine.ask(q) for q in [*GUIDE_QUESTIONS, *OFF_CORPUS]}


# --------------------------------------------------------------------------- grounded answers


def test_threshold_question_is_answered_from_the_threshold_page(answers: dict[str, Answer]) -> None:
    a = answers["What does the threshold apply to?"]
    print(a.answer)
    for c in a.citations:
        print(" ", c.n, c.path, c.start_line, c.end_line, c.support)
    assert a.status == "ok"
    assert a.error_message is None
    assert a.citations
    assert any(c.path.endswith(THRESHOLD_PAGE) for c in a.citations)
    assert "cosine" in a.answer
    assert re.search(r"\[\d+\]", a.answer)
    assert_verbatim(a)
    assert not a.validation.unsupported and not a.validation.uncited
    assert a.metadata["generator"] == "extractive"
    assert a.metadata["chunks_used"] == len(a.evidence) > 0
    assert {c.n for c in a.citations} <= {e.n for e in a.evidence}


@pytest.mark.parametrize("question", GUIDE_QUESTIONS[1:])
def test_answers_are_verbatim_evidence(answers: dict[str, Answer], question: str) -> None:
    a = answers[question]
    print(question, "->", a.answer)
    assert a.status == "ok"
    assert a.citations
    assert_verbatim(a)
    for c in a.citations:
        ev = next(e for e in a.evidence if e.n == c.n)
        assert ev.chunk.start_line <= c.start_line <= c.end_line <= ev.chunk.end_line
        assert c.path == ev.chunk.path and c.chunk_id == ev.chunk.chunk_id


@pytest.mark.parametrize("question", GUIDE_QUESTIONS)
def test_citation_lines_contain_every_sentence_citing_them(answers: dict[str, Answer], question: str) -> None:
    """Open the cited path at the cited lines: every answer sentence carrying [n] is there."""
    a = answers[question]
    problems = []
    for c in a.citations:
        doc = load_file(DOCS / c.path, DOCS, max_bytes=10_000_000)
        source = normalize_ws(text_of_lines(doc, c.start_line, c.end_line, c.page))
        for s in a.validation.sentences:
            if c.n in s.citations and unmarked(s.text).rstrip(".!?:;") not in source:
                problems.append(f"[{c.n}] {c.path}:{c.start_line}-{c.end_line} lacks {unmarked(s.text)!r}")
    assert not problems, "\n".join(problems) + "\n" + a.answer


@pytest.mark.parametrize("question", OFF_CORPUS)
def test_off_corpus_question_abstains(guide_engine: Engine, answers: dict[str, Answer], question: str) -> None:
    a = answers[question]
    assert a.status == "abstained", (a.answer, a.metadata.get("best_support"))
    assert a.citations == ()
    assert a.answer == ABSTAIN_TEXT
    assert a.metadata["best_support"] < guide_engine.settings.abstain_bar
    assert any(act.startswith("abstained") for act in a.validation.guardrail_actions)
    assert a.evidence  # the evidence is still shown, just not cited


def test_deterministic(guide_engine: Engine, answers: dict[str, Answer]) -> None:
    q = "What does the threshold apply to?"
    a, b = answers[q], guide_engine.ask(q)
    assert a.answer == b.answer
    assert [(c.n, c.chunk_id, c.start_line, c.end_line) for c in a.citations] == [
        (c.n, c.chunk_id, c.start_line, c.end_line) for c in b.citations
    ]
    assert a.metadata["request_id"] != b.metadata["request_id"]


def test_answer_is_json_serialisable(answers: dict[str, Answer]) -> None:
    import json

    a = answers["What does the threshold apply to?"]
    d = json.loads(a.to_json())
    assert d["status"] == "ok" and d["citations"] and d["evidence"]
    assert set(d["validation"]) >= {"stripped", "sentences", "unsupported", "uncited", "hedged"}


@pytest.mark.parametrize("question", GUIDE_QUESTIONS)
def test_answer_sentences_are_whole_sentences(answers: dict[str, Answer], question: str) -> None:
    """No fragment cut out of the middle of an inline code span (an odd number of backticks)."""
    a = answers[question]
    for s in a.validation.sentences:
        assert s.text.count("`") % 2 == 0, (s.text, a.answer)
        assert not s.text.startswith(("-", ",", ";", ")")), (s.text, a.answer)


@pytest.mark.parametrize(
    "text, n",
    [
        ('Set top-K with `ragcore ask "..." --top-k 10`, or by default with `RAGCORE_TOP_K`. Then ask.', 2),
        ('Run `ragcore ask "What is it?" --json` to get JSON. Then read it.', 2),
        ("Set it in settings.py. Then run e.g. the server. Version 3.2 is out!", 3),
        # reST literals: two of them in one paragraph are two code spans, not one from the first
        # literal's closing to the second one's opening with the sentences between them inside
        ("Reports go to the ``reports/`` folder as CSV. A report lists every reading. Use the ``widget report`` "
         "command. Then read it.", 4),
        ("Run ``ragcore ask \"Why?\" --json``. Then read it.", 2),
    ],
)
def test_sentence_spans_do_not_split_inside_inline_code(text: str, n: int) -> None:
    from ragcore.textutil import sentence_spans

    spans = sentence_spans(text)
    assert len(spans) == n, [s.text for s in spans]
    assert all(s.text.count("`") % 2 == 0 for s in spans), [s.text for s in spans]


# --------------------------------------------------------------------------- selection modes


def test_selection_mode_cites_only_the_selection(guide_engine: Engine) -> None:
    sel = SelectionInput(SELECTION, "notes.md", SELECTION_START)
    a = guide_engine.ask("What does the extractive composer do?", context="selection", selection=sel)
    print(a.answer, [(c.n, c.start_line, c.end_line) for c in a.citations])
    assert a.status == "ok"
    assert a.citations
    last_line = SELECTION_START + SELECTION.count("\n") - 1
    assert all(e.origin == "selection" and e.chunk.path == "notes.md" for e in a.evidence)
    assert a.candidates == ()
    for c in a.citations:
        assert c.origin == "selection"
        assert c.path == "notes.md"
        assert SELECTION_START <= c.start_line <= c.end_line <= last_line
    assert_verbatim(a)
    assert a.metadata["context"] == "selection"


def test_selection_lines_follow_the_source(guide_engine: Engine) -> None:
    sel = SelectionInput(SELECTION, "notes.md", SELECTION_START)
    a = guide_engine.ask("When does the composer abstain?", context="selection", selection=sel)
    ev = {e.chunk.text.split("\n")[0][:20]: (e.chunk.start_line, e.chunk.end_line) for e in a.evidence}
    assert ev["The extractive compo"] == (10, 10)
    assert ev["It picks sentences f"] == (11, 11)
    assert ev["When even the best s"] == (12, 13)  # one sentence over two lines


def test_selection_too_short_is_an_error(guide_engine: Engine) -> None:
    short = "Too short to ask about."
    assert len(short) < guide_engine.settings.min_selection_chars
    a = guide_engine.ask("What is this?", context="selection", selection=SelectionInput(short, "notes.md", 1))
    assert a.status == "error"
    assert a.error_message and str(guide_engine.settings.min_selection_chars) in a.error_message
    assert "at least" in a.error_message
    assert a.citations == () and a.answer == ""
    # no selection at all in selection mode: the same error
    a = guide_engine.ask("What is this?", context="selection")
    assert a.status == "error" and str(guide_engine.settings.min_selection_chars) in a.error_message


def test_both_mode_numbers_selection_first(guide_engine: Engine) -> None:
    sel = SelectionInput(SELECTION, "notes.md", SELECTION_START)
    a = guide_engine.ask("What does the extractive composer do?", context="both", selection=sel)
    assert a.status == "ok"
    origins = [e.origin for e in a.evidence]
    k = origins.count("selection")
    assert k >= 3 and origins.count("corpus") >= 1
    assert origins == ["selection"] * k + ["corpus"] * (len(origins) - k)
    assert [e.n for e in a.evidence] == list(range(1, len(a.evidence) + 1))
    assert all(e.chunk.path == "notes.md" for e in a.evidence[:k])
    assert all(e.chunk.path != "notes.md" for e in a.evidence[k:])
    for c in a.citations:
        assert c.origin == ("selection" if c.n <= k else "corpus")
    assert a.metadata["context"] == "both"


def test_selection_in_corpus_mode_switches_to_both(guide_engine: Engine) -> None:
    a = guide_engine.ask("What does the extractive composer do?", selection=SELECTION, selection_source="notes.md")
    assert a.metadata["context"] == "both"
    assert a.evidence[0].origin == "selection" and a.evidence[0].chunk.path == "notes.md"


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("question", ["", "   ", "\n\t"])
def test_empty_question_is_an_error(guide_engine: Engine, question: str) -> None:
    evs = events(guide_engine, question)
    assert [e.type for e in evs] == ["started", "error", "done"]
    a = evs[-1].data["answer"]
    assert a.status == "error" and evs[-1].data["status"] == "error"
    assert a.error_message and "empty" in a.error_message


def test_unknown_collection_is_an_error(guide_engine: Engine) -> None:
    a = guide_engine.ask("What does the threshold apply to?", collection="no-such-collection")
    assert a.status == "error"
    assert "no-such-collection" in (a.error_message or "")


# --------------------------------------------------------------------------- events


def test_event_stream_order(guide_engine: Engine) -> None:
    evs = events(guide_engine, "What does the threshold apply to?")
    types = [e.type for e in evs]
    assert types[0] == "started" and types[1] == "sources"
    assert types[-2:] == ["message", "done"]
    middle = types[2:-2]
    assert middle and set(middle) == {"token"}
    assert [e.seq for e in evs] == sorted({e.seq for e in evs})  # strictly increasing
    assert len({e.request_id for e in evs}) == 1
    assert all(a.ts <= b.ts for a, b in zip(evs, evs[1:]))
    done = evs[-1]
    assert done.data["status"] == "ok"
    answer = done.data["answer"]
    assert answer.metadata["request_id"] == evs[0].request_id
    assert "".join(e.data["text"] for e in evs if e.type == "token") == evs[-2].data["text"] == answer.answer
    sources = evs[1].data
    assert tuple(sources["evidence"]) == answer.evidence


def test_cancel_before_streaming(guide_engine: Engine) -> None:
    cancel = threading.Event()
    cancel.set()
    evs = events(guide_engine, "What does the threshold apply to?", cancel=cancel)
    types = [e.type for e in evs]
    assert types[0] == "started" and types[-1] == "done"
    assert "token" not in types and "message" not in types
    assert evs[-1].data["status"] == "cancelled"
    assert evs[-1].data["answer"].status == "partial"


def test_cancel_mid_stream(guide_engine: Engine) -> None:
    cancel = threading.Event()
    seen: list[Event] = []
    for ev in guide_engine.stream("What does the threshold apply to?", cancel=cancel):
        seen.append(ev)
        if ev.type == "token" and sum(e.type == "token" for e in seen) == 3:
            cancel.set()
    assert [e.type for e in seen].count("token") == 3
    assert seen[-1].type == "done" and seen[-1].data["status"] == "cancelled"
    a = seen[-1].data["answer"]
    assert a.answer == "".join(e.data["text"] for e in seen if e.type == "token")
    assert a.status == "partial"


def test_closing_the_generator_stops_it(guide_engine: Engine) -> None:
    gen = guide_engine.stream("What does the threshold apply to?")
    first = [next(gen) for _ in range(3)]
    gen.close()
    assert [e.type for e in first] == ["started", "sources", "token"]
    with pytest.raises(StopIteration):
        next(gen)


def test_a_numbered_list_keeps_its_numbers_and_marks_each_items_sentences() -> None:
    """"1." is the item's number, not a sentence: the marker follows the item's sentences."""
    from ragcore.synthesis.extractive.composer import _marked_list

    text = ("1. **filter**: the path does not match.\n2. **threshold**: too far. Cut first.\n"
            "- **dense**: the cosine, with its rank in the\n  dense branch.")
    assert _marked_list(text, 3) == (
        "1. **filter**: the path does not match. [3]\n2. **threshold**: too far. [3] Cut first. [3]\n"
        "- **dense**: the cosine, with its rank in the\n  dense branch. [3]"
    )


LEANING = (
    "Django lets you replace its built-in user model with a model of your own.\n"
    "You should also define a custom manager for your custom user model.\n"
    "The manager creates users and superusers for the custom user model.\n"
)


def test_the_answer_opens_on_a_sentence_that_stands_alone(guide_engine: Engine) -> None:
    """The best-scoring sentence here says "also": it still is quoted, but not as the first line."""
    from ragcore.synthesis.extractive.rules import leans_back
    from ragcore.synthesis.extractive.units import Unit

    sel = SelectionInput(LEANING, "notes.md", 1)
    a = guide_engine.ask("How do I define a custom manager for a custom user model?", context="selection", selection=sel)
    assert a.status == "ok"
    lines = [normalize_ws(unmarked(s)) for s in re.split(r"(?<=\]) ", a.answer) if s.strip()]
    assert any("You should also define" in s for s in lines), a.answer  # quoted…
    assert "also" not in lines[0] and not lines[0].startswith(("This", "It ")), a.answer  # …not first
    assert_verbatim(a)
    for text, leans in (("You should also define a manager.", True), ("This method returns a queryset.", True),
                        ("Same as for login_required().", True), ("However, the default is kept.", True),
                        ("Set AUTH_USER_MODEL to your model.", False), ("Themes change the colours.", False),
                        ("Its default is 0.", True), ("Usually the default is kept.", False),
                        ("creates a new tag foo, leaving HEAD detached.", True), ("login_required() takes a url.", False),
                        ("Note that this is different than null.", True), ("What this means is that it is signed.", True),
                        ("When set to False, the field is optional.", True), ("The reason for this is caching.", True),
                        ("Has four optional arguments:", True), ("What is a session?", False),
                        ("If the form is bound, it validates.", False)):
        assert leans_back(Unit(0, len(text), text)) is leans, text
    # a lowercase word that names where the sentence comes from is a name, not a sentence's rest
    git = "git revert records new commits that reverse the effect of earlier ones."
    assert leans_back(Unit(0, len(git), git)) and not leans_back(Unit(0, len(git), git), frozenset({"git", "revert"}))


def test_the_rest_of_a_sentence_begun_in_a_block_is_not_quoted() -> None:
    """"creates a new tag foo, …" continues a command the page showed above it (in a block the
    chunk does not hold): on its own it is a fragment. A lowercase word that names the file or a
    heading ("git …" in git-tag.html) is a name, and its sentence is kept; so is a list item."""
    from ragcore.synthesis.extractive.composer import candidates
    from ragcore.types import Chunk, Evidence

    text = ("A new tag refers to the commit it was created on.\n\n"
            "creates a new tag foo, which refers to the commit, leaving the tag in place.\n\n"
            "git tag lists the tags when it is given no name.\n\n"
            "- names a commit for later.\n")
    chunk = Chunk(chunk_id="c1", text=text, path="docs/git-tag.html", doc_hash="h", kind="html", start_line=1,
                  end_line=7, section=("git-tag(1) Manual Page", "DESCRIPTION"))
    quoted = [u.plain for _, u in candidates([Evidence(n=1, chunk=chunk, origin="corpus", score=0.5, score_kind="cosine")])]
    assert any(q.startswith("A new tag refers") for q in quoted) and any(q.startswith("git tag lists") for q in quoted), quoted
    assert not any(q.startswith("creates a new tag") for q in quoted), quoted
    assert any("names a commit for later" in q for q in quoted), quoted


def test_a_definition_is_quoted_with_its_term() -> None:
    """A <dl> entry as the HTML loader writes it ("- term" then its indented definition): a sentence
    of the definition is quoted from the term on, so it says what it defines; an item that opens
    on a sentence, and prose after the list, are quoted as they are."""
    from ragcore.synthesis.extractive.units import units_of
    from ragcore.types import Chunk

    text = ("The options are:\n\n- http.maxRequests\n  How many HTTP requests to launch in parallel. Can be overridden by the\n"
            "  GIT_HTTP_MAX_REQUESTS environment variable.\n- A full sentence item. It has two sentences.\n\nAfter the list.\n")
    chunk = Chunk(chunk_id="x", text=text, path="git-config.html", doc_hash="h", kind="html", start_line=1, end_line=8,
                  section=("CONFIGURATION",))
    units = {u.sentence: u for u in units_of(chunk)}
    override = next(s for s in units if "GIT_HTTP_MAX_REQUESTS" in s)
    assert override.startswith("http.maxRequests How many") and units[override].item, override
    assert normalize_ws(text[units[override].start : units[override].end]) == override  # verbatim, from the term on
    assert "It has two sentences." in units and "After the list." in units


def test_each_sentence_of_a_multi_sentence_unit_carries_its_marker() -> None:
    """A definition quoted from its term on, or a list item, can hold several sentences; the checker
    reads each as a claim, so each is followed by the evidence number."""
    from ragcore.synthesis.extractive.composer import _marked

    assert _marked("core.editor Commands use this editor. It wins over VISUAL.", 2) == \
        "core.editor Commands use this editor. [2] It wins over VISUAL. [2]"
    assert _marked("Set the threshold to e.g. 0.3 in the lab.", 1) == "Set the threshold to e.g. 0.3 in the lab. [1]"


def test_an_answer_quotes_the_page_of_its_best_unit(guide_engine: Engine, answers: dict[str, Answer]) -> None:
    """answer_docs=1 (the default): every citation points into one page, the best unit's; the
    evidence and the leading unit are the same as with answer_docs=0 (which may quote several
    pages: the next test shows it on evidence built for that)."""
    answered = {q: a for q, a in answers.items() if a.status == "ok"}
    assert len(answered) >= 2
    assert all(len({c.path for c in a.citations}) == 1 for a in answered.values()), \
        {q: sorted({c.path for c in a.citations}) for q, a in answered.items()}
    anywhere = {q: guide_engine.ask(q, settings=guide_engine.settings.with_(answer_docs=0)) for q in answered}
    for q, a in anywhere.items():
        assert [e.chunk.chunk_id for e in a.evidence] == [e.chunk.chunk_id for e in answered[q].evidence]
        assert a.answer.split("[")[0] == answered[q].answer.split("[")[0]  # the same best unit leads


def test_a_selection_is_quoted_beside_the_one_corpus_page(encoder) -> None:
    """In "both" mode the selection's units are never held back by answer_docs; the corpus
    units still come from one page."""
    from ragcore.synthesis.extractive.composer import ExtractiveComposer
    from ragcore.types import Chunk, Evidence

    def ev(n: int, path: str, text: str, origin: str = "corpus") -> Evidence:
        chunk = Chunk(chunk_id=f"c{n}", text=text, path=path, doc_hash="h", kind="md", start_line=1, end_line=1)
        return Evidence(n=n, chunk=chunk, origin=origin, score=0.5, score_kind="rrf", dense_score=0.6)

    evs = [ev(1, "(selection)", "Prune the roses in late winter, before their buds swell.", "selection"),
           ev(2, "a.md", "Roses are pruned in late winter with clean, sharp shears."),
           ev(3, "b.md", "Prune roses in late winter when the plants are dormant."),
           ev(4, "c.md", "Late winter is when roses should be pruned back hard.")]
    q = "When should roses be pruned?"
    one = ExtractiveComposer(encoder, max_docs=1).compose(q, evs)
    picked = {e.n: e.chunk.path for e in evs}
    quoted = [picked[p.n] for p in one.picked]
    assert "(selection)" in quoted
    assert len({p for p in quoted if p != "(selection)"}) == 1, quoted
    anywhere = ExtractiveComposer(encoder, max_docs=0).compose(q, evs)
    assert len({picked[p.n] for p in anywhere.picked if picked[p.n] != "(selection)"}) > 1


def _one_chunk(text: str, path: str = "fields.md", section: tuple[str, ...] = ("Field options",)):
    from ragcore.types import Chunk, Evidence

    chunk = Chunk(chunk_id="c1", text=text, path=path, doc_hash="h", kind="md", start_line=1,
                  end_line=text.count("\n") + 1, section=section)
    return [Evidence(n=1, chunk=chunk, origin="corpus", score=0.5, score_kind="rrf", dense_score=0.6)]


def test_a_sentence_that_leans_back_is_quoted_right_after_its_antecedent(encoder) -> None:
    """"Note that this is different than null." alone would make "this" point at whatever the
    answer quoted before it: it comes with the sentence before it in its chunk, right after it."""
    from ragcore.synthesis.extractive.composer import ExtractiveComposer

    text = ("Blank fields are allowed in forms when blank is True.\n"
            "Note that this is different than null, which only affects how the database stores empty fields.\n\n"
            "Null fields store empty values as NULL in the database.\n")
    out = ExtractiveComposer(encoder, max_sentences=4).compose("How is blank different than null for fields?", _one_chunk(text))
    quoted = [p.span.text for p in out.picked]
    lean = next(i for i, s in enumerate(quoted) if s.startswith("Note that this"))
    assert lean > 0 and quoted[lean - 1].startswith("Blank fields are allowed"), quoted
    assert_verbatim_units(out, text)


def test_a_sentence_whose_antecedent_the_chunk_lacks_is_not_quoted(encoder) -> None:
    """The chunk opens on "However, …" (its antecedent is in the chunk before) and a heading
    separates "This setting…" from the prose above it: neither is quoted, however well it scores."""
    from ragcore.synthesis.extractive.composer import ExtractiveComposer

    text = ("However, the cache timeout can be set per view with the cache_page decorator.\n\n"
            "# CACHE_TIMEOUT\n\n"
            "This setting gives the default cache timeout in seconds for every cached view.\n\n"
            "The cache timeout of a view is how long its cached response is served.\n")
    out = ExtractiveComposer(encoder, max_sentences=4).compose("What is the cache timeout of a view?", _one_chunk(text))
    quoted = [p.span.text for p in out.picked]
    assert quoted and quoted[0].startswith("The cache timeout of a view"), quoted
    assert not any(s.startswith(("However", "This setting")) for s in quoted), quoted


def test_antecedents_count_towards_the_sentence_budget(encoder) -> None:
    from ragcore.synthesis.extractive.composer import ExtractiveComposer

    text = ("Sessions are stored in the database by default.\n"
            "They expire after two weeks unless the session cookie age is changed.\n"
            "It can be changed with the SESSION_COOKIE_AGE setting.\n"
            "Sessions can also be stored in the cache or in signed cookies.\n")
    for budget in (1, 2, 3):
        out = ExtractiveComposer(encoder, max_sentences=budget).compose("How long do sessions last before they expire?", _one_chunk(text))
        assert 1 <= len(out.picked) <= budget, [p.span.text for p in out.picked]
        first = out.picked[0].span.text
        assert not first.startswith(("They", "It ")), first


def assert_verbatim_units(out, text: str) -> None:
    for p in out.picked:
        assert normalize_ws(text[p.span.start : p.span.end]) == normalize_ws(p.span.text)


def test_a_definition_keeps_its_term_on_a_line_of_its_own() -> None:
    """An API or settings entry ("DEBUG", "before_request(f)", "-S[<keyid>]" + "--no-gpg-sign")
    is rendered term first, then the definition: run into one line it read as a fragment
    ("DEBUG Whether debug mode is enabled."). Wrapped prose is never taken for a term: a line
    of several words, or one that starts mid-line."""
    from ragcore.synthesis.extractive.units import Picked, units_of
    from ragcore.synthesis.extractive.composer import render
    from ragcore.textutil import Span
    from ragcore.types import Chunk

    text = ("DEBUG\nWhether debug mode is enabled. Do not enable it in production.\n\n"
            "-S[<keyid>]\n--no-gpg-sign\nGPG-sign commits.\n\n"
            "The application reads its configuration at start. Debug\nmode reloads the code.\n\n"
            "- git log and friends look at the\n  encoding header of a commit. You can set the encoding.\n\n"
            "Flask provides test_cli_runner() to create a\nFlaskCliRunner, which runs CLI commands.\n\n"
            "Fixed a bug that prevented FLASK_APP=foobar/__init__.py from\nworking.\n")
    chunk = Chunk(chunk_id="c", text=text, path="config.html", doc_hash="h", kind="html", start_line=1, end_line=12,
                  section=("Configuration",))
    units = {u.sentence: u for u in units_of(chunk)}
    terms = {s: s[: u.term] for s, u in units.items() if u.term}
    assert terms == {"DEBUG Whether debug mode is enabled.": "DEBUG",
                     "-S[<keyid>] --no-gpg-sign GPG-sign commits.": "-S[<keyid>] --no-gpg-sign"}, terms
    picked = [Picked(1, Span(u.start, u.end, s), 1.0, u) for s, u in units.items()
              if s.startswith(("DEBUG", "-S", "Debug", "The application"))]
    out = render(picked)
    assert "DEBUG\nWhether debug mode is enabled. [1]" in out, out
    assert "-S[<keyid>] --no-gpg-sign\nGPG-sign commits. [1]" in out, out
    assert "Debug mode reloads the code. [1]" in out, out  # prose: folded, no term
    for u in units.values():  # whitespace aside, every unit is its source
        assert normalize_ws(text[u.start : u.end]) == u.sentence


def test_a_two_column_tables_description_is_quoted_with_its_name() -> None:
    """Sphinx writes each <td><p> of a name/description table as a paragraph: the description
    is quoted with the name above it ("loop.previtem" / "The item from the previous…"). An
    admonition's title ("Note"), a heading and a line of code are not names."""
    from ragcore.synthesis.extractive.units import units_of
    from ragcore.types import Chunk

    text = ("loop.previtem\n\nThe item from the previous iteration of the loop.\n\n"
            "Note\n\nDjango is, and will continue to be, a database-agnostic web framework.\n\n"
            "For loops\n\nA for loop iterates over each item in a sequence.\n\n"
            "Entry.objects.filter(id__gt=4)\n\nThat query returns every entry after the fourth.\n")
    chunk = Chunk(chunk_id="c", text=text, path="templates.html", doc_hash="h", kind="html", start_line=1, end_line=15,
                  section=("Templates", "For loops"))
    units = {u.sentence: u for u in units_of(chunk)}
    named = units["loop.previtem The item from the previous iteration of the loop."]
    assert named.term == len("loop.previtem") and normalize_ws(text[named.start : named.end]) == named.sentence
    for plain in ("Django is, and will continue to be, a database-agnostic web framework.",
                  "A for loop iterates over each item in a sequence.", "That query returns every entry after the fourth."):
        assert plain in units and not units[plain].term, sorted(units)
