"""Documents a question or its evidence names: where an identifier is defined, not mentioned.

Two kinds of names, both read from the corpus itself (no list of commands or settings):

- **Command pages.** A file name such as ``git-clone`` or ``git-rebase`` names the page that
  documents a command when its first part is a namespace shared by several file names (``git-``
  starts 150 of them; ``new-contributors`` shares its ``new-`` with nothing). Text names such a
  page as ``git-clone`` or ``git clone``; case is kept, so "Django admin" (the site) does not
  name ``django-admin`` (the command). The question and the best evidence passages are read:
  "How to get a Git repository" finds passages saying ``git clone``, and those point at the
  page the user manual links to.
- **Identifier headings.** A heading that is a code identifier (``DJANGO_SETTINGS_MODULE``,
  ``django-users``, ``QuerySet.filter()``) defines it. Only the question is matched against
  these: evidence passages mention identifiers everywhere, and following those mentions promoted
  the wrong page on django-docs-qa (bench/results/eval-signals.md).

A name held by more than ``MAX_DOCS`` documents defines nothing and is dropped.

The index lives in storage because the query snapshot builds it once at publish (names.json), as it
does the topic rows; retrieval (docsignals.py) reads it.
"""

from __future__ import annotations

import posixpath
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ragcore.types import Chunk

# Code identifiers: dotted or underscored names, camelCase / CamelCase with an inner capital,
# ALL_CAPS with an underscore. Plain capitals (HTTP, CSS) are acronyms; hyphenated words are
# English ("auto-escaping"), so hyphens count only in whole-heading names and file names.
IDENT = re.compile(
    r"[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+|[a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*"
)
WORD = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.\-]*[A-Za-z0-9])?")
SPLIT = re.compile(r"[-_]")
NAMESPACE_MIN = 5  # file names sharing a first part before it counts as a command namespace
MAX_DOCS = 3


def command_names(paths: Iterable[str]) -> dict[str, str]:
    """File-name stem → path, for stems in a namespace (see the module docstring)."""
    stems = {p: posixpath.basename(posixpath.splitext(p)[0]) for p in paths}
    parted = {p: s for p, s in stems.items() if SPLIT.search(s) and s == s.lower()}
    prefix = Counter(SPLIT.split(s)[0] for s in parted.values())
    by_name: dict[str, set[str]] = defaultdict(set)
    for p, s in parted.items():
        if prefix[SPLIT.split(s)[0]] >= NAMESPACE_MIN:
            by_name[s].add(p)
    return {n: next(iter(ps)) for n, ps in by_name.items() if len(ps) == 1}


def heading_identifiers(heading: str) -> set[str]:
    """The identifiers a heading defines: its code tokens, or itself when it is one token."""
    text = heading.strip().rstrip("¶").strip()
    found = set(IDENT.findall(text))
    if re.fullmatch(r"[A-Za-z0-9_.\-]+(?:\(\))?", text) and re.search(r"[-_.]|[a-z][A-Z]", text):
        found.add(text.removesuffix("()"))
    return found


def text_names(text: str) -> set[str]:
    """Every spelling in ``text`` that could be a name: identifiers, hyphenated words, and each
    adjacent word pair joined by a hyphen ("git clone" → "git-clone")."""
    words = WORD.findall(text)
    return {*IDENT.findall(text), *(w for w in words if SPLIT.search(w)), *(f"{a}-{b}" for a, b in zip(words, words[1:]))}


def mention_pattern(commands: Iterable[str]) -> re.Pattern[str] | None:
    """One regex for every spelling of a command in running text: its namespace, then a space,
    hyphen or underscore, then the rest ("git clone", "git-cat-file(1)", "git cat-file")."""
    prefixes = sorted({SPLIT.split(n)[0] for n in commands}, key=len, reverse=True)
    if not prefixes:
        return None
    alts = "|".join(map(re.escape, prefixes))
    return re.compile(rf"(?<![A-Za-z0-9_.\-])({alts})[ \-_]([A-Za-z0-9](?:[A-Za-z0-9_\-]*[A-Za-z0-9])?)")


@dataclass(frozen=True)
class NameIndex:
    commands: Mapping[str, str]  # file-name stem → path
    identifiers: Mapping[str, tuple[str, ...]]  # heading identifier → paths that define it
    pattern: re.Pattern[str] | None = None  # mention_pattern(commands): the evidence scan, one pass per passage

    @classmethod
    def build(cls, chunks: Sequence[Chunk]) -> "NameIndex":
        """From the chunks' paths and headings; a snapshot's chunk table (chunk_table.py) carries
        the index computed at publish, so a million-chunk collection is not scanned per process."""
        persisted = getattr(chunks, "persisted_names", None)
        saved = persisted() if callable(persisted) else None
        if saved is not None:
            try:
                return cls.from_json(saved)
            except (KeyError, TypeError, AttributeError):
                pass  # a damaged names.json: scan, as without one
        defined: dict[str, set[str]] = defaultdict(set)
        seen: set[tuple[str, str]] = set()
        for c in chunks:
            for h in c.section:
                if (c.path, h) not in seen:
                    seen.add((c.path, h))
                    for name in heading_identifiers(h):
                        defined[name].add(c.path)
        ids = {n: tuple(sorted(ps)) for n, ps in defined.items() if len(ps) <= MAX_DOCS}
        commands = command_names({c.path for c in chunks})
        return cls(commands, ids, mention_pattern(commands))

    def to_json(self) -> dict[str, Any]:
        return {"commands": dict(self.commands), "identifiers": {n: list(ps) for n, ps in self.identifiers.items()}}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> "NameIndex":
        commands = {str(k): str(v) for k, v in body["commands"].items()}
        ids = {str(k): tuple(str(p) for p in v) for k, v in body["identifiers"].items()}
        return cls(commands, ids, mention_pattern(commands))

    def in_question(self, question: str) -> dict[str, tuple[str, ...]]:
        """Path → the names the question gives it (command pages and identifier headings)."""
        out: dict[str, list[str]] = defaultdict(list)
        for name in sorted(text_names(question)):
            if name in self.commands:
                out[self.commands[name]].append(name)
            for p in self.identifiers.get(name, ()):
                out[p].append(name)
        return {p: tuple(ns) for p, ns in out.items()}

    def in_evidence(self, text: str) -> dict[str, str]:
        """Path → the command name a passage gives it."""
        out: dict[str, str] = {}
        if self.pattern is None:
            return out
        for m in self.pattern.finditer(text):
            for sep in "-_":
                name = f"{m[1]}{sep}{m[2]}"
                if name in self.commands:
                    out.setdefault(self.commands[name], name)
        return out
