"""Selected-text mode answers from the selection (engine/selection.py, abstain/selection_support.py):
the analyst chose the passage, so the question is about it unless it clearly is not.

Real parts: an Engine over embedded Qdrant in a temp folder and the real MiniLM model; selection
mode retrieves nothing, so no collection is needed; "both" mode asks a small ingested one."""

from __future__ import annotations

import re

import pytest

from ragcore.abstain.selection_support import question_names, selection_fit
from ragcore.engine.engine import SelectionInput
from ragcore.engine.selection import selection_kind, selection_lines, selection_pieces, source_line

PASTED = ("Don’t read more than this many bytes from the incoming request data. If not set and the request does not "
          "specify a CONTENT_LENGTH, no data will be read for security.")
# config.html as the HTML reader numbers it: a paragraph's closing blank line shares its last line's number
CONFIG_LINES = [(323, "MAX_CONTENT_LENGTH"),
                (324, "Don’t read more than this many bytes from the incoming request data. If not"),
                (325, "set and the request does not specify a CONTENT_LENGTH, no data will be"),
                (326, "read for security."), (326, ""), (327, "Default: None"), (327, ""),
                (332, "JSON_AS_ASCII")]


def _plain(answer: str) -> str:
    return " ".join(re.sub(r"\s*\[\d+\]", "", answer).split())


@pytest.fixture
def engine(make_engine):
    return make_engine()


def test_a_pasted_paragraph_answers_a_question_that_says_this(engine) -> None:
    """Issue 28: abstained, support 0.36 < 0.50, although the passage says exactly that."""
    a = engine.ask("What happens if this is not set?", context="selection", selection=PASTED)
    assert a.status == "ok", a.validation.guardrail_actions
    assert _plain(a.answer).startswith("If not set and the request does not specify a CONTENT_LENGTH, no data will be "
                                       "read for security."), a.answer  # the sentence that answers, first
    assert a.metadata["support"]["selection_fit"]["on_topic"] is True
    assert all(c.origin == "selection" for c in a.citations)


def test_selected_lines_answer_with_their_default(engine) -> None:
    """Issue 28: lines 323–327 of config.html selected, "What is the default value of this setting?"."""
    text, numbers = selection_lines(CONFIG_LINES, 323, 327)
    assert "read for security.\n\nDefault: None" in text and numbers == (323, 324, 325, 326, 326, 327, 327)
    a = engine.ask("What is the default value of this setting?", context="selection",
                   selection=SelectionInput(text, "config.html", 323, line_numbers=numbers))
    assert a.status == "ok" and a.answer.startswith("MAX_CONTENT_LENGTH\n") and "Default: None [1]" in a.answer, a.answer
    (c,) = a.citations
    assert (c.path, c.start_line, c.end_line) == ("config.html", 323, 327)
    # what the viewer highlights: the selection and the lines the answer quotes
    assert a.metadata["selection"]["quoted"] == [[323, 327]]
    assert (a.metadata["selection"]["start_line"], a.metadata["selection"]["end_line"]) == (323, 327)


@pytest.mark.parametrize("question, says", [
    ("How do I bake sourdough bread?", "shares no word with the question"),
    ("What is the default value of PERMANENT_SESSION_LIFETIME?", "never mentions “PERMANENT_SESSION_LIFETIME”"),
])
def test_a_selection_about_something_else_is_declined_saying_so(engine, question, says) -> None:
    a = engine.ask(question, context="selection", selection=PASTED)
    assert a.status == "abstained" and a.citations == ()
    (action,) = a.validation.guardrail_actions
    assert "the selection is about something else" in action and says in action, action


def test_the_verdict_on_a_selection() -> None:
    sel = PASTED
    assert selection_fit("How do I turn this on?", sel, [0.1]).on_topic  # points at it: about it
    assert selection_fit("Summarise the passage.", sel, [0.2]).on_topic
    assert selection_fit("Why is no data read?", sel, [0.1]).on_topic  # a word in common
    off = selection_fit("How do I configure logging to a file?", sel, [0.11])
    assert not off.on_topic and off.shared == ()
    named = selection_fit("Does it apply to SECRET_KEY?", sel, [0.4])  # "it": the analyst means the passage
    assert named.on_topic and named.deictic
    assert not selection_fit("Is SECRET_KEY required?", sel, [0.4]).on_topic
    assert question_names("What is the default of `top_k` and MAX_CONTENT_LENGTH in JSON or --debug?") == (
        "top_k", "MAX_CONTENT_LENGTH", "JSON", "--debug")
    assert question_names("What does Flask do?") == ()  # a plain capitalised word is not a name


def test_selection_pieces_keep_code_and_default_entries_whole() -> None:
    text = ("To change the chunk size, set the variable before you ingest:\n\n```bash\nexport RAGCORE_CHUNK_SIZE=120\n```\n"
            "It applies to the next ingest. Another sentence here.")
    pieces = [text[a:b] for a, b in selection_pieces(text, "markdown")]
    assert pieces[0].startswith("To change the chunk size") and pieces[0].endswith("```")
    assert pieces[1:] == ["It applies to the next ingest.", "Another sentence here."]
    html = "To enable debug mode, use the --debug option.\n\n$ flask --app hello --debug run\n * Serving Flask app 'hello'\n * Debug mode: on"
    pieces = [html[a:b] for a, b in selection_pieces(html, "html")]
    assert pieces == ["To enable debug mode, use the --debug option.", html[html.index("$"):]]
    text, _ = selection_lines(CONFIG_LINES, 323, 332)
    pieces = [text[a:b] for a, b in selection_pieces(text, "html")]
    assert pieces[0].startswith("MAX_CONTENT_LENGTH\n") and pieces[0].endswith("Default: None")
    assert selection_kind("config.html") == "html" and selection_kind("notes.md") == "markdown"
    assert selection_kind(None) == "html"  # pasted: the text a browser shows


def test_source_lines_follow_the_line_numbers() -> None:
    text, numbers = selection_lines(CONFIG_LINES, 323, 332)
    sel = SelectionInput(text, "config.html", 323, line_numbers=numbers)
    assert source_line(sel, text.index("Default")) == 327 and source_line(sel, text.index("JSON_AS")) == 332
    assert source_line(SelectionInput("a\nb\nc", "x.md", 10), 4) == 12  # consecutive lines by default


def test_both_mode_puts_the_selection_first(make_engine, tmp_path) -> None:
    from tests.conftest import write_corpus

    root = write_corpus(tmp_path / "corpus", {
        "limits.md": "# Request limits\n\nThe request size limit protects the server. Large uploads are refused with "
                     "status 413 when the limit is exceeded.\n",
        "other.md": "# Sessions\n\nSessions expire after thirty-one days unless they are made permanent.\n"})
    eng = make_engine()
    eng.ingest([root], "limits")
    a = eng.ask("What happens if this is not set?", context="both", selection=PASTED,
                settings=eng.settings.with_(collection="limits"))
    assert a.status in ("ok", "partial"), a.validation.guardrail_actions
    origin = {e.n: e.origin for e in a.evidence}
    order = [origin[int(n)] for n in re.findall(r"\[(\d+)\]", a.answer)]
    assert order and order[0] == "selection", a.answer
    assert order == sorted(order, key=lambda o: o != "selection"), a.answer  # no corpus sentence before a selected one
    assert a.metadata["support"]["basis"] == "selection"
