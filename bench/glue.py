"""Sentences that glue a heading, a list item or a title onto the prose after it, on real HTML pages.

The HTML reader knows where a block element ends (``</p>``, ``</li>``, ``</h3>``, ``</ul>``…).
Outside a list it writes a paragraph break there; inside a list it writes none (the list is one
block), so before the hard line break (``html_model.LINE_BREAK``) a list item's ``<p>`` title, a
nested list's last item or a heading ran into the item's next line as one "sentence": "The number
of values in an INSERT statement The default setting…". This script reads every page of a set with
a tracing reader that records, after each line, the tag that ended a block there; a sentence
(``textutil.sentence_spans`` over the page's lines) that runs across such a line end is glued.

"before" is the page as the reader wrote it without the hard line breaks (the text the previous
reader produced, byte for byte), "after" as it writes it now; "changed" counts the sentences of
"before" that are no longer sentences of "after". A table row's cells on several source lines are
joined with `` | `` on purpose (a row is read as a row and never quoted as prose), so those joins
are counted apart ("row joins") and not as glue.

    python -m bench.glue [--sample 30] [SET ...]     (sets: django git scrapy sqlalchemy)
"""

from __future__ import annotations

import argparse
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ragcore.ingest.read.html import _Extractor
from ragcore.ingest.read.html_model import _BLOCKS, LINE_BREAK
from ragcore.textutil import sentence_spans

SETS = {
    "django": Path("/work/shared/data/django-docs-qa/corpus"),
    "git": Path("/work/cache-qa/git-docs-qa/corpus"),
    "scrapy": Path("/work/cache-qa/scrapy-docs-qa/corpus"),
    "sqlalchemy": Path("/work/cache-qa/sqlalchemy-docs-qa/corpus"),
}
_BOUNDARY = _BLOCKS | {"td", "th", "br"}
_MARK = re.compile(re.escape(LINE_BREAK) + r"$", re.M)


class _Traced(_Extractor):
    """The reader, noting after each line the first block tag (start or end) that followed it."""

    def __init__(self) -> None:
        super().__init__()
        self.after: dict[int, str] = {}  # id(record) -> the tag that ended a block after it
        self.next_tag: str | None = None  # a boundary after the line being assembled

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._note(tag)
        super().handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        self._note("/" + tag)
        super().handle_endtag(tag)

    def _note(self, tag: str) -> None:
        if tag.lstrip("/") not in _BOUNDARY or self.skip:
            return
        if self.line_no and "".join(self.parts).strip():
            self.next_tag = self.next_tag or tag  # after the line not written yet
        elif self.records and self.records[-1][1] and id(self.records[-1]) not in self.after:
            self.after[id(self.records[-1])] = tag

    def _flush(self) -> None:
        n = len(self.records)
        super()._flush()
        if len(self.records) > n and self.next_tag:
            self.after[id(self.records[-1])] = self.next_tag
        self.next_tag = None

    def traced(self) -> list[tuple[str, str | None]]:
        """The page's lines as ``finish`` writes them, each with the tag that ended a block after it."""
        self.close()
        while self.stack:
            self._pop()
        self._flush()
        keep = {id(r) for r in self.records if r[4] and r[1]}
        lines, _ = self.finish()
        recs = [r for r in self.records if (r[4] if keep else True)]
        by_text = iter(r for r in recs if r[1])
        out: list[tuple[str, str | None]] = []
        for line in lines:
            if not line.text:
                out.append(("", None))
                continue
            rec = next(r for r in by_text if r[1] == line.text)
            out.append((line.text, self.after.get(id(rec))))
        return out


@dataclass
class Counts:
    pages: int = 0
    sentences: int = 0
    glued_before: int = 0
    glued_after: int = 0
    row_joins: int = 0  # a table row's cells: joined with " | " on purpose
    changed: int = 0
    kinds: Counter = field(default_factory=Counter)
    samples: list[tuple[str, str, list[str]]] = field(default_factory=list)  # (page, before, after)


def glued(text: str, ends: dict[int, str]) -> list[tuple[str, str]]:
    """(sentence, tag) of the prose sentences that run across a line end where a block ended."""
    out = []
    for sp in sentence_spans(text):
        if sp.block or sp.heading:
            continue
        tags = [tag for off, tag in ends.items() if sp.start <= off < sp.end]
        if tags:
            out.append((sp.text, tags[0]))
    return out


def page_counts(path: Path, counts: Counts) -> None:
    reader = _Traced()
    reader.feed(path.read_text(encoding="utf-8", errors="replace"))
    lines = reader.traced()
    after = "\n".join(t for t, _ in lines)
    before = _MARK.sub("", after)
    old = _real(glued(before, _ends(lines, strip=True)), counts)
    new = _real(glued(after, _ends(lines, strip=False)), None)
    counts.pages += 1
    old_sents = [sp.text for sp in sentence_spans(before) if not sp.block]
    new_sents = [sp.text for sp in sentence_spans(after) if not sp.block]
    counts.sentences += len(old_sents)
    counts.changed += sum((Counter(old_sents) - Counter(new_sents)).values())
    counts.glued_before += len(old)
    counts.glued_after += len(new)
    still = Counter(s for s, _ in new)
    for s, tag in old:
        counts.kinds[tag] += 1
        if not still[s]:
            counts.samples.append((path.name, s, [x for x in new_sents if x and x in s][:3]))


def _ends(lines: list[tuple[str, str | None]], strip: bool) -> dict[int, str]:
    """Offsets in the page's text of the line ends where a block ended (without the hard line
    breaks when ``strip``: the text "before")."""
    ends, pos = {}, 0
    for t, tag in lines:
        t = t.removesuffix(LINE_BREAK) if strip else t
        if tag:
            ends[pos + len(t)] = tag
        pos += len(t) + 1
    return ends


def _real(found: list[tuple[str, str]], counts: Counts | None) -> list[tuple[str, str]]:
    """Without a table row's cells joined with " | " (counted as row joins)."""
    real = [(s, tag) for s, tag in found if not (tag.lstrip("/") in ("td", "th") and " | " in s)]
    if counts is not None:
        counts.row_joins += len(found) - len(real)
    return real


def run(name: str, root: Path) -> Counts:
    counts = Counts()
    for path in sorted(root.rglob("*.htm*")):
        page_counts(path, counts)
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sets", nargs="*", help=f"of {sorted(SETS)} (all when none)")
    ap.add_argument("--sample", type=int, default=0, help="print N glued sentences (before → after) to check by hand")
    args = ap.parse_args(argv)
    print("| set | pages | sentences | glued before | glued after | changed | row joins (kept) | by tag |")
    print("|---|---|---|---|---|---|---|---|")
    pool = []
    for name in args.sets or sorted(SETS):
        c = run(name, SETS[name])
        kinds = ", ".join(f"{k} {v}" for k, v in c.kinds.most_common(6))
        print(f"| {name} | {c.pages} | {c.sentences} | {c.glued_before} | {c.glued_after} | {c.changed} | {c.row_joins} | {kinds} |")
        pool += [(name, *s) for s in c.samples]
    for name, page, before, after in random.Random(42).sample(pool, min(args.sample, len(pool))):
        print(f"\n{name}/{page}\n  before: {before}\n  after:  " + "\n          ".join(after))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
