"""Guardrails before and after generation: routing, boundary rules, hedge detection.

:func:`route_question` decides, with no model and no retrieval, what a message is:

* ``boundary``: it falls under one of the configured boundary rules ("no legal advice",
  "no medical advice", "no code generation", "no financial advice" or a custom "no <topic>");
  the reply names the rule.
* ``smalltalk``: the whole message is a greeting, thanks or goodbye ("hi", "thanks!").
* ``about_tool``: the message asks what the tool is or how to use it ("help",
  "what can you do?").
* ``corpus``: everything else, i.e. a question for retrieval.

Smalltalk and tool questions must match the *whole* message, so "How do I say hello in a
Django template?" or "Help me configure the cache" stay corpus questions. Boundary detectors
favour precision: technical documentation says "legal values" and "side effects of save()",
which are not legal or medical questions.

:func:`is_hedged` flags sentences that hedge ("might", "I think", "probably", "it seems" …)
without flagging documentation's "you may set X" or "the value may be overridden".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Sequence

RouteKind = Literal["corpus", "smalltalk", "about_tool", "boundary"]


@dataclass(frozen=True)
class Route:
    kind: RouteKind
    reply: str | None = None  # what to answer instead of retrieving (None for corpus)
    rule: str | None = None  # the boundary rule that matched, as configured


ABOUT_TOOL_REPLY = (
    "I answer questions about the documents in the current collection. I retrieve the passages "
    "that match your question, show them with their scores, and write an answer that cites them "
    "as [1], [2] … so you can open the exact source lines.\n\n"
    "Ask a specific question in your own words, e.g. \"How do I configure the cache?\". "
    "To ask about one passage, select it and ask in selected-text mode. Use top-K and the "
    "threshold to widen or narrow the evidence."
)

GREETING_REPLY = (
    "Hello! Ask me a question about the documents in this collection and I will answer with "
    "citations to the sources."
)
THANKS_REPLY = "You're welcome! Ask another question about the documents whenever you like."
BYE_REPLY = "Goodbye! Your notebook keeps the questions and answers from this session."
HOW_ARE_YOU_REPLY = (
    "I'm doing fine, thanks. Ask me a question about the documents in this collection and I "
    "will answer with citations."
)

# --------------------------------------------------------------------------- normalising


def _norm(text: str) -> str:
    text = text.replace("\u2019", "'").replace("\u2018", "'").lower()
    return " ".join(text.split())


def _bare(text: str) -> str:
    """Lower case, words only: punctuation and emoji become spaces."""
    return " ".join(re.sub(r"[^\w' ]+", " ", _norm(text)).split())


# --------------------------------------------------------------------------- smalltalk

_ADDRESS = r"(?:there|all|everyone|everybody|folks|team|friend|bot|assistant|buddy|again)"
_GREETING = (
    r"(?:hi|hello|hey|heya|hiya|howdy|hallo|hullo|yo|greetings|good (?:morning|afternoon|evening|day)"
    r"|hey there|hi there)"
)
_THANKS = (
    r"(?:thanks|thank you|thank u|thx|ty|tysm|cheers|many thanks|thanks a lot|thanks so much"
    r"|thank you so much|thank you very much|thanks very much|much appreciated|appreciated"
    r"|(?:great|perfect|awesome|nice|cool|ok|okay|good|brilliant|excellent|wonderful|super)"
    r"(?: thanks| thank you)?)"
)
_BYE = r"(?:bye|goodbye|good bye|bye bye|see you|see ya|later|good night|farewell|ciao)"
_HOW_ARE_YOU = r"(?:how are you(?: doing)?(?: today)?|how's it going|how are things|what's up|sup)"


def _whole(alt: str) -> re.Pattern[str]:
    part = rf"{alt}(?: {_ADDRESS})*"
    return re.compile(rf"^{part}(?: {part})*$")


_SMALLTALK: tuple[tuple[re.Pattern[str], str], ...] = (
    (_whole(_THANKS), THANKS_REPLY),
    (_whole(_BYE), BYE_REPLY),
    (_whole(_HOW_ARE_YOU), HOW_ARE_YOU_REPLY),
    (_whole(rf"(?:{_GREETING}|{_HOW_ARE_YOU})"), GREETING_REPLY),
    (_whole(rf"(?:{_THANKS}|{_BYE})"), THANKS_REPLY),
)

# --------------------------------------------------------------------------- about the tool

_TOOL = r"(?:tool|app|application|notebook|assistant|bot|chatbot)"
_ABOUT_TOOL = re.compile(
    r"^(?:"
    r"help|help me|help please|please help|i need help|\?+|menu|usage|instructions"
    r"|what can you do|what can i do here|what can i ask(?: you)?|what do you do|what are you"
    r"|who are you|what is this|what's this|what are you for|what are you able to do"
    r"|how can you help(?: me)?|what can you help (?:me )?with|what should i ask(?: you)?"
        rf"|how (?:can|should|do) i use (?:this|you|the {_TOOL})(?: {_TOOL})?"
    rf"|how does (?:this|the) {_TOOL} work|how do you work|how does this work"
    rf"|what (?:is|does) (?:this|the) {_TOOL}(?: do| for)?"
    rf"|what is this {_TOOL} for|what can (?:this|the) {_TOOL} do"
    r"|how do i ask (?:a )?questions?|how (?:do|should) i ask"
    r")(?: please)?$"
)

# --------------------------------------------------------------------------- boundary rules

_LEGAL = re.compile(
    r"\b(?:legal advice|lawsuits?|sue|suing|sued|litigation|litigate|attorneys?|lawyers?"
    r"|solicitors?|contract law|breach of contract|legally|legal (?:action|liabilit\w*|risks?"
    r"|issues?|obligations?|requirements?|consequences?|rights?|counsel|question)"
    r"|(?:is|are|was) (?:it|this|that) (?:il)?legal|illegal to|liabilit(?:y|ies)|liable"
    r"|court(?:s|room)?|plaintiff|defendant|custody|divorce"
    r"|copyright infringement|patent infringement|intellectual property law|tenant rights"
    r"|file a claim|press charges)\b"
)
_MEDICAL = re.compile(
    r"\b(?:medical advice|health advice|medications?|medicines?|dosages?|prescri(?:be|bed|ption|ptions)"
    r"|(?:my|a|your) doctor|physician|diagnos(?:e|is|ed) (?:my|me|a|this) (?:rash|pain|illness|condition|symptoms?|disease)"
    r"|my symptoms|symptoms of (?:a |an )?(?:cold|flu|covid|cancer|diabetes|infection|disease|illness"
    r"|depression|anxiety|stroke|heart attack)|diseases?|illness(?:es)?|pregnan(?:t|cy)|cancer|tumou?r"
    r"|diabetes|covid|vaccin(?:e|es|ation)|blood pressure|headaches?|migraines?|fever|infection"
    r"|antibiotics?|ibuprofen|paracetamol|acetaminophen|aspirin|painkillers?|side effects of (?:this |the |my |a )?"
    r"(?:drug|medication|medicine|pill|vaccine)s?|am i sick|treat (?:my|a|an) (?:cold|flu|fever|rash|infection|injury|wound|burn))\b"
)
_FINANCIAL = re.compile(
    r"\b(?:financial advice|investment advice|tax advice|invest(?:ing)? (?:in|my)|should i (?:buy|sell|invest|short)"
    r"|stocks? (?:price|market|tips?|picks?)|stock market|shares in|which stocks?|crypto(?:currency|currencies)?"
    r"|bitcoin|ethereum|forex|my portfolio|investment portfolio|retirement (?:savings|account|fund|plan)"
    r"|401 ?k|pension|mortgage|index funds?|etfs?|dividends?|hedge fund|day trading|my savings"
    r"|make money (?:fast|quickly)|get rich)\b"
)
_CODE_NOUNS = (
    r"(?:functions?|scripts?|programs?|code|class(?:es)?|snippets?|modules?|apps?|applications?"
    r"|quer(?:y|ies)|regex(?:es)?|regular expressions?|endpoints?|plugins?|views?|models?|forms?"
    r"|serializers?|migrations?|tests?|unit tests?|components?|methods?|implementations?"
    r"|algorithms?|bots?|websites?|web ?apps?|apis?|sql|html|css|dockerfile|makefile)"
)
_CODE_FILLER = (
    r"(?:(?:python|django|javascript|js|typescript|ts|sql|bash|shell|powershell|react|vue|java|go"
    r"|golang|rust|c|c\+\+|c#|ruby|php|kotlin|swift|html|css|flask|fastapi|node|simple|small|basic"
    r"|quick|short|custom|new|complete|full|working|reusable|generic|sample|whole|entire"
    r"|class-based|function-based|async|recursive|helper|utility|command-line|cli|unit|rest|restful"
    r"|crud|web) ){0,4}"
)
_CODE_GEN = re.compile(
    r"(?:^|[.!?;] )(?:ok(?:ay)? |now |so |hey |hi )?(?:please |pls |kindly )?"
    r"(?:can you |could you |would you |will you |i need you to |i want you to |i'd like you to "
    r"|help me |you should )?(?:please )?(?:write|generate|create|code|implement|build|produce|give me)"
    r" (?:me |us )?(?:the |a |an |some |the whole |the full )?"
    + _CODE_FILLER
    + _CODE_NOUNS
    + r"(?![\w-])"
    r"|\b(?:generate|write) (?:the |some |me )?code\b|\bcode (?:it|this|that) (?:for me|up)\b"
    r"|\bcan you code\b|\bwrite (?:it|this|that) (?:in|for me in) (?:python|javascript|java|go|rust|c\+\+|c#|ruby|php|sql)\b"
)

_BUILTIN: dict[str, re.Pattern[str]] = {
    "legal": _LEGAL,
    "medical": _MEDICAL,
    "financial": _FINANCIAL,
    "code": _CODE_GEN,
}
_ALIASES: dict[str, str] = {
    "legal": "legal",
    "legal advice": "legal",
    "legal questions": "legal",
    "law": "legal",
    "laws": "legal",
    "medical": "medical",
    "medical advice": "medical",
    "medical questions": "medical",
    "health": "medical",
    "health advice": "medical",
    "financial": "financial",
    "financial advice": "financial",
    "finance": "financial",
    "investment advice": "financial",
    "investing": "financial",
    "investment": "financial",
    "code generation": "code",
    "code": "code",
    "coding": "code",
    "writing code": "code",
    "code writing": "code",
    "generating code": "code",
}
_RULE_PREFIX = re.compile(r"^(?:no|don't give|do not give|never give|don't|do not|never|avoid)\s+")
_TOPIC_SUFFIX = re.compile(r"\s+(?:advice|questions|topics|discussion|talk|content|help)$")


def _rule_topic(rule: str) -> str:
    r = _norm(rule).strip(" .!;:")
    r = _RULE_PREFIX.sub("", r)
    return r.strip()


def _custom_pattern(topic: str) -> re.Pattern[str] | None:
    topic = topic.strip(" '\"")
    if not topic:
        return None
    alts = {topic}
    core = _TOPIC_SUFFIX.sub("", topic)
    if core and core != topic:
        alts.add(core)
    parts = []
    for alt in sorted(alts, key=len, reverse=True):
        words = [re.escape(w) for w in alt.split()]
        words[-1] = words[-1] + r"(?:s|es)?"  # plural of the last word
        parts.append(r"\s+".join(words))
    return re.compile(r"(?<![\w-])(?:" + "|".join(parts) + r")(?![\w-])")


def boundary_detector(rule: str) -> re.Pattern[str] | None:
    """The regex that decides whether a question falls under ``rule`` (None: empty rule)."""
    topic = _rule_topic(rule)
    if topic in _ALIASES:
        return _BUILTIN[_ALIASES[topic]]
    return _custom_pattern(topic)


def boundary_reply(rule: str) -> str:
    rule = " ".join(rule.split())
    return (
        f"I can't help with that here: this notebook is set up with the rule \u201c{rule}\u201d. "
        "Ask me about the documents in the collection instead, and for this kind of question "
        "please consult a qualified professional or another resource."
        if _ALIASES.get(_rule_topic(rule)) in ("legal", "medical", "financial")
        else f"I can't help with that here: this notebook is set up with the rule \u201c{rule}\u201d. "
        "Ask me about the documents in the collection instead."
    )


# --------------------------------------------------------------------------- routing


def route_question(question: str, boundary_rules: Sequence[str]) -> Route:
    """Decide whether a message needs retrieval, a canned reply, or a boundary refusal."""
    norm = _norm(question)
    bare = _bare(question)
    if not bare:
        if norm.strip("? ") == "" and "?" in norm:
            return Route("about_tool", ABOUT_TOOL_REPLY)
        return Route("smalltalk", GREETING_REPLY)

    for rule in boundary_rules:
        if not rule or not rule.strip():
            continue
        detector = boundary_detector(rule)
        if detector is not None and (detector.search(norm) or detector.search(bare)):
            return Route("boundary", boundary_reply(rule), rule)

    if _ABOUT_TOOL.match(bare):
        return Route("about_tool", ABOUT_TOOL_REPLY)
    for pattern, reply in _SMALLTALK:
        if pattern.match(bare):
            return Route("smalltalk", reply)
    return Route("corpus")


# --------------------------------------------------------------------------- hedges

# Participles after "may be" / "could be" that state documented permission or possibility
# ("the value may be overridden", "it can be found in"), not uncertainty.
_PERMISSION_PARTICIPLES = (
    r"(?:used|set|passed|given|specified|overridden|overriden|provided|omitted|called|changed|configured"
    r"|combined|added|left|supplied|customi[sz]ed|defined|included|disabled|enabled|replaced|accessed"
    r"|found|applied|nested|installed|run|read|written|stored|returned|raised|chained|reused|shared"
    r"|extended|subclassed|registered|imported|loaded|saved|sent|deleted|removed|created|modified"
    r"|updated|declared|assigned|selected|null|blank|empty|none|any|one of|either|an? (?:string|integer"
    r"|list|tuple|dict|dictionary|callable|instance|path|number|boolean))"
)
HEDGE_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bmight\b(?! (?:want|wish|like|prefer|need) to\b)(?! also want\b)",
        rf"\bmay be\b(?! {_PERMISSION_PARTICIPLES}\b)",
        rf"\bcould be\b(?! {_PERMISSION_PARTICIPLES}\b)",
        r"\bmay (?:have been|or may not)\b",
        r"\bmaybe\b",
        r"\bperhaps\b",
        r"\bpossibly\b",
        r"\bprobably\b",
        r"\bpresumably\b",
        r"\bapparently\b",
        r"\bseemingly\b",
        r"\b(?:most |quite |very )?likely\b(?! to be (?:used|called|set)\b)",
        r"\bi (?:think|believe|guess|suspect|assume|suppose|reckon|imagine)\b",
        r"\bwe (?:think|believe|suspect|assume)\b",
        r"\bi'?m not (?:entirely |completely |totally |100% )?(?:sure|certain)\b",
        r"\bnot (?:entirely |completely |totally |quite )?(?:sure|certain)\b",
        r"\bit (?:seems|would seem)\b",
        r"\bit (?:appears|would appear) (?:that|to|as if|as though)\b",
        r"\bseems? to\b",
        r"\bas far as i (?:know|can tell)\b",
        r"\bto (?:the best of )?my knowledge\b",
        r"\bif i (?:recall|remember)(?: correctly)?\b",
        r"\bit is (?:possible|conceivable) that\b",
        r"\bthere is a chance\b",
        r"\bunclear (?:whether|if)\b",
        r"\bi can'?t be (?:sure|certain)\b",
    )
)


def hedges_in(sentence: str) -> list[str]:
    """The hedging phrases found in ``sentence`` (empty when it does not hedge)."""
    s = _norm(sentence)
    return [m.group(0) for p in HEDGE_PATTERNS for m in [p.search(s)] if m]


def is_hedged(sentence: str) -> bool:
    """True when the sentence hedges ("might", "I think", "probably", "it seems" …)."""
    s = _norm(sentence)
    return any(p.search(s) for p in HEDGE_PATTERNS)
