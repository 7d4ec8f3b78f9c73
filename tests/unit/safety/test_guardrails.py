"""Routing (smalltalk / tool questions / boundary rules / corpus) and hedge detection."""

from __future__ import annotations

import pytest

from ragcore.safety.guardrails import (
    ABOUT_TOOL_REPLY,
    HEDGE_PATTERNS,
    Route,
    boundary_detector,
    hedges_in,
    is_hedged,
    route_question,
)

RULES = ("no legal advice", "no medical advice", "no code generation", "no financial advice", "No politics.")

ROUTES = [
    # smalltalk: the whole message is a greeting / thanks / goodbye
    ("hi", "smalltalk", None),
    ("Hello there!", "smalltalk", None),
    ("thanks!", "smalltalk", None),
    ("Thank you so much :)", "smalltalk", None),
    ("ok, thanks", "smalltalk", None),
    ("bye 👋", "smalltalk", None),
    # about the tool
    ("help", "about_tool", None),
    ("What can you do?", "about_tool", None),
    ("How do I use this tool?", "about_tool", None),
    ("what is this app for", "about_tool", None),
    # boundary rules, named in the route
    ("Can I sue my employer over this?", "boundary", "no legal advice"),
    ("Is it legal to scrape a website?", "boundary", "no legal advice"),
    ("What dosage of ibuprofen should I take for a headache?", "boundary", "no medical advice"),
    ("Write me a Python script that renames files", "boundary", "no code generation"),
    ("Can you generate code for a REST API?", "boundary", "no code generation"),
    ("Should I buy Bitcoin now?", "boundary", "no financial advice"),
    ("What do you think about politics?", "boundary", "No politics."),
    # real questions that look like the above but are corpus questions
    ("How do I say hello in a Django template?", "corpus", None),
    ("Help me configure the cache backend", "corpus", None),
    ("Thanks to which setting are sessions stored in the database?", "corpus", None),
    ("What are the legal values for on_delete?", "corpus", None),
    ("What are the side effects of calling save() twice?", "corpus", None),
    ("How do I write a function-based view?", "corpus", None),
    ("How do I create a model with a foreign key?", "corpus", None),
    ("Give me an overview of the stock Django admin", "corpus", None),
    ("How do I diagnose a slow query?", "corpus", None),
    ("What is this setting for?", "corpus", None),
    ("How do I use it?", "corpus", None),
    ("Where is the code that handles CSRF?", "corpus", None),
]


@pytest.mark.parametrize(("question", "kind", "rule"), ROUTES)
def test_routing_table(question: str, kind: str, rule: str | None) -> None:
    route = route_question(question, RULES)
    assert (route.kind, route.rule) == (kind, rule)
    if kind == "corpus":
        assert route.reply is None
    else:
        assert route.reply


def test_boundary_reply_names_the_rule() -> None:
    route = route_question("Can I sue them?", ["no legal advice"])
    assert route == Route("boundary", route.reply, "no legal advice")
    assert "\u201cno legal advice\u201d" in route.reply and "documents" in route.reply


def test_rules_only_apply_when_configured() -> None:
    assert route_question("Can I sue my employer?", []).kind == "corpus"
    assert route_question("Write me a python function", ["no legal advice"]).kind == "corpus"


def test_custom_rules() -> None:
    assert route_question("Which competitor products are better?", ["no competitor products"]).rule == "no competitor products"
    assert route_question("Tell me about the weather in Paris", ["no weather"]).kind == "boundary"
    assert route_question("Is tax deductible here?", ["no tax advice"]).kind == "boundary"
    assert route_question("How does the taxonomy app work?", ["no tax advice"]).kind == "corpus"
    assert boundary_detector("   ") is None
    assert route_question("hello", ["", "  "]).kind == "smalltalk"


def test_boundary_wins_over_smalltalk_framing() -> None:
    assert route_question("Hi! Write me a bash script to back up my disk", RULES).kind == "boundary"


def test_about_tool_reply_explains_how_to_ask() -> None:
    reply = route_question("what can you do?", ()).reply
    assert reply == ABOUT_TOOL_REPLY and "[1]" in reply and "question" in reply


HEDGED = [
    "This might be caused by the cache.",
    "The value may be wrong in older versions.",
    "I think the default is 1209600 seconds.",
    "Sessions are probably stored in the database.",
    "It seems the setting was removed.",
    "I'm not sure this applies to Django 5.",
    "Possibly the middleware order matters.",
    "I believe this is configurable.",
    "Maybe use the cache backend.",
    "It could be a permissions problem.",
    "This is most likely a bug.",
]
NOT_HEDGED = [
    "You may set SESSION_ENGINE to use the cache [1].",
    "The value may be overridden in settings [2].",
    "This field may be blank [1].",
    "Additional options may be passed as keyword arguments [3].",
    "You might want to read the deployment checklist [1].",
    "Sessions are stored in the database by default [1].",
    "Make sure the middleware is enabled [2].",
    "The cache can be shared between processes [1].",
    "It may not be used with the signed cookie backend [4].",
    "Users may log in with their e-mail address [2].",
    "Certain backends are not supported [1].",
    "The result may be None if no row matches [3].",
    "It appears in the admin change list [2].",
]


@pytest.mark.parametrize("sentence", HEDGED)
def test_hedges_are_flagged(sentence: str) -> None:
    assert is_hedged(sentence), sentence
    assert hedges_in(sentence)


@pytest.mark.parametrize("sentence", NOT_HEDGED)
def test_documentation_modals_are_not_hedges(sentence: str) -> None:
    assert not is_hedged(sentence), (sentence, hedges_in(sentence))


def test_hedge_patterns_use_word_boundaries() -> None:
    assert all(p.pattern.startswith(r"\b") for p in HEDGE_PATTERNS)
    assert not is_hedged("The mighty framework provides a mayor model.")
