"""Extractive answers in their documented form, on the six labelled sets: how many sentences each
answer quotes (docs/07: at most ``max_answer_sentences``, 4), and how many quote a title, a term,
a heading or a list item run into the prose below it.

Every question of a set is re-composed from the evidence the engine retrieved for it (the dumps of
``bench/reader_data.py``: ``python -m bench.reader_data django git scrapy sqlalchemy guide pdfqa``),
twice: "before" on the chunks' text as the previous HTML reader wrote it, "after" on the text the
reader writes now (the same lines, list items' and definition terms' lines ending in a hard line
break where a block ended: ``ingest/read/html.py``). The two texts differ only by those breaks, so
one structural check serves both: a quoted sentence that runs across a hard line break (the answer
holds fewer sentences than the source's text it quotes, after the term a definition is quoted from,
which is shown on a line of its own), is glued.

A sentence of an answer is what carries its own ``[n]`` marker: each prose sentence, each
sentence of a list item, and a code block or table as one. Token F1 (SQuAD's, ``eval/metrics.py``)
is against the set's reference answers, over its answerable questions the composer answered.

    python -m bench.answer_form [SET ...] [--cache DIR] [--show N]
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from bench.reader_data import DEFAULT_CACHE, DictEncoder, load_dump, set_dirs
from ragcore.eval.metrics import token_f1
from ragcore.synthesis.extractive.units import fold
from ragcore.textutil import LINE_BREAK, sentence_spans

SETS = ("django", "git", "scrapy", "sqlalchemy", "guide", "pdfqa")
MARKER = re.compile(r"\[\d+\]")
_HARD = re.compile(r"(?<=\S)" + re.escape(LINE_BREAK) + r" *\n")
_ROOTS = {"django": Path("/work/shared/data/django-docs-qa/corpus")}


def corpus_root(name: str) -> Path:
    return _ROOTS.get(name) or set_dirs()[name] / "corpus"


@lru_cache(maxsize=64)
def _lines(root: Path, rel: str) -> tuple[tuple[int, str], ...]:
    from ragcore.ingest.read.loaders import load_file

    try:
        doc = load_file(root / rel, root, max_bytes=50_000_000)
    except (OSError, ValueError):
        return ()
    return tuple((line.no, line.text) for line in doc.lines)


def marked(chunk, root: Path) -> str:
    """The chunk's text as the reader writes it now: its lines, with the hard line breaks."""
    if chunk.kind != "html":
        return chunk.text
    want = chunk.text.split("\n")
    lines = _lines(root, chunk.path)
    for i, (no, _) in enumerate(lines):
        if no < chunk.start_line:
            continue
        got = [t for _, t in lines[i : i + len(want)]]
        if [t.removesuffix(LINE_BREAK) for t in got] == want:
            return "\n".join(got)
        if no > chunk.start_line:
            break
    return chunk.text


@dataclass
class Tally:
    questions: int = 0
    answered: int = 0
    over_cap: int = 0
    glued: int = 0  # answers quoting at least one glued sentence
    glued_sentences: int = 0
    f1: list[float] = field(default_factory=list)  # token F1 against the reference, answerable questions
    sizes: Counter = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)


def literal_markers(result) -> int:
    """Bracketed numbers the quoted text itself holds ("such as [7] when there are five")."""
    return sum(len(MARKER.findall(p.unit.sentence + (p.unit.block.text if p.unit.block else "")))
               for p in result.picked if p.unit is not None)


def glued_units(result, texts: dict[int, str], shifts: dict[int, list[int]]) -> list[str]:
    """The quoted sentences of ``result`` that run across a hard line break after their term."""
    out = []
    for p in result.picked:
        u = p.unit
        if u is None or not u.sentence:
            continue
        text, marks = texts[p.n], shifts[p.n]
        a, b = _new_offset(u.start, marks), _new_offset(u.end, marks)
        raw = text[_term_end(text, a, u.term) if u.term else a : b]
        # the answer shows the unit's text folded onto one line, its sentences found again there: a
        # sentence it holds across a structural break is one the source's text splits in two
        if len(sentence_spans(raw)) > len(sentence_spans(fold(raw))):
            out.append(u.sentence)
    return out


def _term_end(text: str, a: int, term: int) -> int:
    """Where the first ``term`` characters (folded) of the sentence at ``a`` end in ``text``."""
    seen, pos = 0, a
    for line in text[a:].split("\n"):
        seen += len(" ".join(line.split())) + (1 if seen else 0)
        pos += len(line) + 1
        if seen >= term:
            return pos - 1
    return pos


def _new_offset(old: int, marks: list[int]) -> int:
    """An offset of the text without hard line breaks, in the text with them (``marks``: where each
    break stands in the text without them); the identity when ``marks`` is empty."""
    return old + len(LINE_BREAK) * sum(1 for m in marks if m < old)


def run_set(name: str, cache: Path, composer, show: int) -> tuple[Tally, Tally]:
    dump = load_dump(name, cache)
    root = corpus_root(name)
    composer.encoder = DictEncoder(dump["vectors"], fallback=composer.encoder.fallback)
    tallies = (Tally(), Tally())
    for rec in dump["records"]:
        if not rec.evidence:
            continue
        new = {e.n: marked(e.chunk, root) for e in rec.evidence}
        old = {n: _HARD.sub("\n", t) for n, t in new.items()}
        marks = {n: [m.start() - i * len(LINE_BREAK) for i, m in enumerate(_HARD.finditer(t))] for n, t in new.items()}
        for tally, texts, shifts in ((tallies[0], old, marks), (tallies[1], new, {n: [] for n in new})):
            evidence = [replace(e, chunk=replace(e.chunk, text=texts[e.n])) for e in rec.evidence]
            result = composer.compose(rec.question, evidence)
            tally.questions += 1
            if result.status != "ok":
                continue
            tally.answered += 1
            n = len(MARKER.findall(result.text)) - literal_markers(result)
            tally.sizes[n] += 1
            tally.over_cap += n > composer.max_sentences
            bad = glued_units(result, new, shifts)
            tally.glued += bool(bad)
            tally.glued_sentences += len(bad)
            if rec.answerable and rec.reference:
                tally.f1.append(token_f1(result.text, rec.reference))
            if bad and len(tally.examples) < show:
                tally.examples.append(f"{rec.id}: {bad[0][:200]}")
            if n > composer.max_sentences and len(tally.examples) < show:
                tally.examples.append(f"{rec.id}: {n} sentences: {result.text[:300]!r}")
    return tallies


def _f1(t: Tally) -> str:
    return f"{sum(t.f1) / len(t.f1):.3f}" if t.f1 else "-"


def _mean(t: Tally) -> str:
    n = sum(t.sizes.values())
    return f"{sum(k * v for k, v in t.sizes.items()) / n:.1f}" if n else "-"


def main(argv: Sequence[str] | None = None) -> int:
    from ragcore.encoders.minilm import OnnxMiniLM
    from ragcore.settings.config import RagcoreSettings
    from ragcore.synthesis.extractive.composer import ExtractiveComposer

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sets", nargs="*", help=f"of {list(SETS)} (all when none)")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where the dumps are")
    ap.add_argument("--show", type=int, default=0, help="print N offending answers per set")
    args = ap.parse_args(argv)
    s = RagcoreSettings.from_env()
    composer = ExtractiveComposer(DictEncoder({}, fallback=OnnxMiniLM()), max_sentences=s.max_answer_sentences,
                                  max_docs=s.answer_docs, second_page=s.answer_second_page)
    print(f"max_answer_sentences = {s.max_answer_sentences}")
    print("| set | questions | answered | over the cap before → after | most (mean) sentences before → after "
          "| answers with a glued sentence before → after | glued sentences before → after | token F1 before → after |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.sets or SETS:
        before, after = run_set(name, args.cache, composer, args.show)
        most = f"{max(before.sizes, default=0)} → {max(after.sizes, default=0)} ({_mean(before)} → {_mean(after)})"
        print(f"| {name} | {after.questions} | {after.answered} | {before.over_cap} → {after.over_cap} | {most} "
              f"| {before.glued} → {after.glued} | {before.glued_sentences} → {after.glued_sentences} "
              f"| {_f1(before)} → {_f1(after)} |", flush=True)
        for line in before.examples + ["-- after --"] * bool(after.examples) + after.examples:
            print("    " + line, file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
