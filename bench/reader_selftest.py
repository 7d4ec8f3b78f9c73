"""A label-free self-test of a collection (issue 38's idea for a per-corpus calibration), as tried.

Questions are the corpus's own section headings (15, drawn with seed 38 from the headings of the
evidence a set's dump holds, none equal to a set question); an answer passes when it is not an
abstention and cites the heading's page. The pass rate per corpus was meant to carry the base rate
the global confidence lacks (bench/results/reader.md: it did not; leave one corpus out it made the
calibration worse, mean ECE 0.153 -> 0.173).

    RAGCORE_DATA_DIR=… python -m bench.reader_selftest django      # prints each question and the rate
"""

from __future__ import annotations

import random
import sys
from typing import Sequence

from bench.reader_data import DEFAULT_CACHE, load_dump

QUESTIONS = 15


def headings(name: str) -> list[tuple[str, str]]:
    """(heading, its page) of the dumped evidence, 2–10 words, none a question of the set."""
    d = load_dump(name, DEFAULT_CACHE)
    asked = {r.question for r in d["records"]}
    found: dict[str, str] = {}
    for r in d["records"]:
        for e in r.evidence:
            h = e.chunk.section[-1].strip() if e.chunk.section else ""
            if 2 <= len(h.split()) <= 10 and h not in asked:
                found.setdefault(h, e.chunk.path)
    items = sorted(found.items())
    return random.Random(38).sample(items, min(QUESTIONS, len(items)))


def self_test(name: str) -> float:
    from ragcore.engine.engine import Engine
    from ragcore.settings.config import RagcoreSettings

    s = RagcoreSettings.from_env().with_(collection=name)
    engine = Engine(s)
    passed = 0
    items = headings(name)
    for heading, page in items:
        a = engine.ask(heading, collection=name, settings=s)
        ok = a.status != "abstained" and any(c.path == page for c in a.citations)
        passed += ok
        print(f"{name}\t{heading}\t{a.status}\t{ok}", flush=True)
    engine.close()
    return passed / max(1, len(items))


def main(argv: Sequence[str] | None = None) -> int:
    for name in (argv if argv is not None else sys.argv[1:]):
        print(f"{name}: self-test pass rate {self_test(name):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
