"""Lead with what answers (synthesis/extractive/answers.py): the command of a how-to answer, the
"Default: …" line of a setting with its name, through the real composer and the real MiniLM model.

The texts are as the HTML reader writes Flask 2.2's quickstart.html, deploying/gunicorn.html and
config.html (Debian's python-flask-doc): a <pre> block as plain lines, a <dl> entry as its name
on a line, what it does, then "Default: …"."""

from __future__ import annotations

import re

from ragcore.synthesis.extractive.answers import asks_default, command_units, default_entries, default_units
from ragcore.synthesis.extractive.composer import ExtractiveComposer
from ragcore.synthesis.extractive.units import units_of
from ragcore.types import Chunk, Evidence

QUICKSTART = """Debug Mode

The flask run command can do more than just start the development
server. By enabling debug mode, the server will automatically reload if
code changes, and will show an interactive debugger in the browser if an
error occurs during a request.

Warning

The debugger allows executing arbitrary Python code from the
browser. It is protected by a pin, but still represents a major
security risk. Do not run the development server or debugger in a
production environment.

To enable debug mode, use the --debug option.

$ flask --app hello --debug run
 * Serving Flask app 'hello'
 * Debug mode: on
 * Debugger is active!

See also:
"""
GUNICORN = """Running

The only required argument to Gunicorn tells it how to load your Flask
application. The syntax is {module_import}:{app_variable}.

# equivalent to 'from hello import app'
$ gunicorn -w 4 'hello:app'

# equivalent to 'from hello import create_app; create_app()'
$ gunicorn -w 4 'hello:create_app()'

The -w option specifies the number of processes to run; a starting
value could be CPU * 2. The default is only 1 worker, which is
probably not what you want for the default worker type.
"""
CONFIG = """PREFERRED_URL_SCHEME
Use this scheme for generating external URLs when not in a request context.

Default: 'http'

MAX_CONTENT_LENGTH
Don’t read more than this many bytes from the incoming request data. If not
set and the request does not specify a CONTENT_LENGTH, no data will be
read for security.

Default: None

JSON_AS_ASCII
Serialize objects to ASCII-encoded JSON. If this is disabled, the
JSON returned from jsonify will contain Unicode characters.

Default: True
"""


def _ev(text: str, path: str = "quickstart.html", section: tuple[str, ...] = ("Quickstart",)) -> list[Evidence]:
    chunk = Chunk(chunk_id="c1", text=text, path=path, doc_hash="h", kind="html", start_line=1,
                  end_line=text.count("\n") + 1, section=section)
    return [Evidence(n=1, chunk=chunk, origin="corpus", score=0.5, score_kind="rrf", dense_score=0.55)]


def _plain(answer: str) -> str:
    return " ".join(re.sub(r"\s*\[\d+\]", "", answer).split())


def test_a_how_to_answer_leads_with_the_command(encoder) -> None:
    a = ExtractiveComposer(encoder).compose("How do I run the development server with the debugger?", _ev(QUICKSTART))
    assert "$ flask --app hello --debug run" in a.text, a.text
    # the instruction that introduces the command opens the answer, the command right after it
    assert a.text.startswith("To enable debug mode, use the --debug option. [1]\n\n```\n$ flask --app hello --debug run"), a.text


def test_a_command_no_sentence_introduces_is_quoted_whole(encoder) -> None:
    a = ExtractiveComposer(encoder).compose("How do I deploy with Gunicorn?", _ev(GUNICORN, "deploying/gunicorn.html", ("Gunicorn",)))
    assert a.text.startswith("```\n# equivalent to 'from hello import app'\n$ gunicorn -w 4 'hello:app'\n"), a.text
    assert "$ gunicorn -w 4 'hello:create_app()'\n```" in a.text  # the block whole, not one line of it


def test_commands_are_units_for_how_to_questions_only(encoder) -> None:
    chunk = _ev(GUNICORN)[0].chunk
    (cmd,) = command_units(chunk)
    assert cmd.sentence == "" and cmd.block is not None and cmd.block.text.count("$ gunicorn") == 2
    assert all(u.block is None or u.block.kind != "code" for u in units_of(chunk))  # not a plain unit
    a = ExtractiveComposer(encoder).compose("What does the -w option specify?", _ev(GUNICORN))
    assert "```" not in a.text and "The -w option specifies the number of processes to run" in a.text, a.text


def test_a_default_is_quoted_with_its_name(encoder) -> None:
    a = ExtractiveComposer(encoder).compose("What is the default value of MAX_CONTENT_LENGTH?", _ev(CONFIG, "config.html"))
    assert a.text.startswith("MAX_CONTENT_LENGTH\n"), a.text
    assert "Default: None [1]" in a.text and "'http'" not in a.text and "Default: True" not in a.text, a.text
    # without the rule the value was never quoted: "Default: None" is not a sentence
    plain = ExtractiveComposer(encoder).compose("What does MAX_CONTENT_LENGTH do?", _ev(CONFIG, "config.html"))
    assert "Default:" not in plain.text and "Don’t read more than this many bytes" in _plain(plain.text), plain.text


def test_default_entries_run_from_the_name_to_the_default_line() -> None:
    entries = [CONFIG[a:b] for a, b in default_entries(CONFIG)]
    assert [e.split("\n")[0] for e in entries] == ["PREFERRED_URL_SCHEME", "MAX_CONTENT_LENGTH", "JSON_AS_ASCII"]
    assert all(e.rstrip().split("\n")[-1].startswith("Default: ") for e in entries)
    units = default_units(_ev(CONFIG, "config.html")[0].chunk)
    assert [u.sentence[: u.term] for u in units] == ["PREFERRED_URL_SCHEME", "MAX_CONTENT_LENGTH", "JSON_AS_ASCII"]
    # an admonition's title or a plain word above a default is not a name
    assert default_entries("Note\nThis one is special.\n\nDefault: None\n") == []


def test_which_questions_ask_for_a_default() -> None:
    for q in ("What is the default value of this setting?", "What is MAX_CONTENT_LENGTH's default?",
              "What happens if this is not set?", "How many chunks does it keep if I change nothing?"):
        assert asks_default(q), q
    for q in ("How do I deploy with Gunicorn?", "What does MAX_CONTENT_LENGTH do?"):
        assert not asks_default(q), q


def test_a_prose_paragraph_on_one_line_is_not_code() -> None:
    """Pasted from a browser, a paragraph is one line; a ";" in it made it read as code."""
    one_line = ("The -w option specifies the number of processes to run; a starting value could be CPU * 2. "
                "The default is only 1 worker, which is probably not what you want for the default worker type.")
    units = units_of(_ev(one_line)[0].chunk)
    assert [u.sentence for u in units] == [
        "The -w option specifies the number of processes to run; a starting value could be CPU * 2.",
        "The default is only 1 worker, which is probably not what you want for the default worker type."]
    assert units_of(_ev("$ gunicorn -w 4 'hello:app'; echo started and then waited for it.")[0].chunk) == []
