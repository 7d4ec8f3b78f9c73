"""Does a question lean on the previous turn? (followup.py then carries the previous subject over.)

A question leans on the previous turn when it opens as a continuation ("What about …", "And how …")
or when its first pronoun has nothing in the question to point back to. The rules below are the
ones a reader applies without thinking, written out because each mistake costs an answer: read as a
follow-up, "What is WAL mode and what are its disadvantages?" inherited the previous question's
join terms and was answered about CROSS JOIN. Every question of the six evaluation sets, asked back
to back, is self-contained and must stay so (tests/unit/engine/test_followup_sets.py).
"""

from __future__ import annotations

import re

from ragcore.abstain.coverage import subjects
from ragcore.encoders.sparse import STOPWORDS

MAX_FOLLOWUP_WORDS = 10
# continuations that always lean on what was said ("What about the default?")
_ALWAYS = re.compile(r"^\s*(?:and\s+)?(?:what about|how about|same for|what if)\b", re.I)
# continuations that lean unless the rest names its own subject ("But why does flush() …?" does)
_OPENER = re.compile(r"^\s*(?:and|or|but|also|so|then)\b", re.I)
_PRONOUN = re.compile(r"\b(?:it|its|it's|this|that|these|those|they|them|their|there|ones?|he|she|such|same)\b", re.I)
# uses of those words that point at nothing before: existential "there" ("Is there a …?"),
# "it" standing for what follows ("Is it reasonable to …?"), "the same as", "such as", a plain "one"
_NOT_ANAPHORIC = (
    re.compile(r"(?:\b(?:is|are|was|were|be|been)\s+there\b|\bthere(?:\s+|')(?:is|are|was|were|s|be)\b)", re.I),
    re.compile(r"\bit(?:\s+is|'s|\s+was)?(?:\s+[\w-]+){1,3}?\s+(?:to|that|whether|if)\b", re.I),
    re.compile(r"\b(?:same|such)\s+as\b", re.I),
    re.compile(r"\bones?\b", re.I),
)
_ONE_ANAPHORIC = re.compile(r"\b(?:which|this|that|another|other|new|old|first|last|right)\s+ones?\b(?!\s+of)", re.I)
# where a question starts a new clause: a pronoun after one can point back to the clause before
_CLAUSE_BREAK = re.compile(
    r"[,;:]|\b(?:and|or|but|then|so|to|when|if|while|because|since|after|before|until|unless|whereas)\b", re.I
)
_DEMONSTRATIVE = re.compile(r"\b(?:this|that|these|those)\b", re.I)
_WORD = re.compile(r"[A-Za-z_][\w.\-]*")
# words that ask rather than name: carried, they would steer retrieval towards any how-to page
QUESTION_WORDS = frozenset("""
    can could should would may might must shall does did doing done get gets got use used using make makes
    want need needs work works way ways possible happen happens set sets change changes find tell know
    there here why how what which who when where whom whose also else other another thing things
""".split())


def is_followup(question: str) -> bool:
    """Short, and leaning on something said before (see the module docstring)."""
    words = question.split()
    if not words or len(words) > MAX_FOLLOWUP_WORDS:
        return False
    if _ALWAYS.search(question):
        return True
    if _OPENER.search(question):
        return not subjects(question)
    pronoun = first_pronoun(question)
    if pronoun is None:
        return False
    return not points_inside(question, pronoun)


def first_pronoun(question: str) -> re.Match | None:
    """The first word that may point outside the question, skipping the uses that cannot."""
    excluded = [(m.start(), m.end()) for rule in _NOT_ANAPHORIC for m in rule.finditer(question)]
    for m in _PRONOUN.finditer(question):
        word = m.group(0).lower()
        if word in ("one", "ones") and _ONE_ANAPHORIC.search(question[: m.end()]):
            return m
        if any(start <= m.start() < end for start, end in excluded):
            continue
        if word in ("one", "ones"):
            continue
        return m
    return None


def points_inside(question: str, pronoun: re.Match) -> bool:
    """The pronoun refers to something the question itself names:
    - an earlier clause named a subject that does not ask ("What is WAL mode and what are its
      disadvantages?", "Can I call pdb.set_trace() from my spiders to debug them?");
    - a specific subject (name, identifier, quoted term) comes before it in its own clause;
    - a demonstrative introduces the subject itself ("What's this huge cryptic __VIEWSTATE parameter?");
    - "like this" closes a question that named two things that do not ask ("Why are the
      parentheses rules like this?").
    Within one clause a plain pronoun leans on the previous turn ("Which environment variable sets
    it?", "What are the disadvantages of it?")."""
    before = question[: pronoun.start()]
    clauses = _CLAUSE_BREAK.split(before)
    earlier = " ".join(clauses[:-1])
    if earlier and (subjects(earlier) or any(w.lower() not in QUESTION_WORDS for w in key_terms(earlier))):
        return True
    if subjects(before):
        return True
    if _DEMONSTRATIVE.fullmatch(pronoun.group(0)) and subjects(" ".join(question[pronoun.end():].split()[:4])):
        return True
    named = [w for w in key_terms(before) if w.lower() not in QUESTION_WORDS]
    return before.rstrip().lower().endswith("like") and len(named) >= 2


def key_terms(text: str) -> list[str]:
    """Content words of ``text`` in their own spelling, in order, without stopwords."""
    out: list[str] = []
    for w in _WORD.findall(text):
        lw = w.lower().strip(".-")
        if len(lw) > 2 and lw not in STOPWORDS and lw not in {x.lower() for x in out}:
            out.append(w.strip(".-"))
    return out
