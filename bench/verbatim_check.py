"""Are extractive answers quotes of the RAW HTML lines their citations name?

For every citation of every answer over a question set, the cited source file's lines
[start_line..end_line] (tags stripped, entities decoded, whitespace folded: what a reader sees
opening those lines, independent of the loader) must contain each piece quoted there (code: its
lines in order), and a quoted sentence must not run across the edge of a ``<pre>`` (code
flattened into prose). Misses are counted and listed with the lines where the text really is.
The check itself lives in bench/support/verbatim.py (``check_raw``); tests/integration/test_verbatim.py runs it on subsets.

Corpora (a fresh temporary collection, ingested with the current code):
- ``git``: Git's HTML documentation (git-docs-qa, ../data/git-docs-qa next to the repository),
  the pages the questions link to (``--pages N``: the first N questions' pages), every question;
- ``django``: the Django subset and questions of tests/integration/test_verbatim.py (bench/support/verbatim.py).

Usage::

    nice -n 19 .venv/bin/python bench/verbatim_check.py [git|django ...] [--pages N] [--json OUT]
    .venv/bin/python bench/verbatim_check.py git django --recheck OUT   # the raw check again, on a dump
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from ragcore.settings.config import RagcoreSettings
from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.engine.engine import Engine
from bench.support.verbatim import (
    DJANGO_LIST_QUESTIONS,
    DJANGO_PAGES,
    DJANGO_QUESTIONS,
    GIT_QA,
    Cited,
    RawTally,
    check_raw,
    pieces,
)

DJANGO_CORPUS = REPO.parent / "shared" / "data" / "django-docs-qa" / "corpus"


def git_set(limit: int | None) -> tuple[Path, list[str], list[str]]:
    rows = [json.loads(x) for x in (GIT_QA / "questions.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    rows = rows[:limit] if limit else rows
    pages = sorted({d for r in rows for d in r["relevant_docs"]})
    return GIT_QA / "corpus", pages, [r["question"] for r in rows]


def run(name: str, corpus: Path, pages: list[str], questions: list[str], encoder: OnnxMiniLM) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"verbatim-{name}-") as tmp:
        root = Path(tmp) / "corpus"
        for rel in pages:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(corpus / rel, root / rel)
        engine = Engine(RagcoreSettings(data_dir=Path(tmp) / "data"), encoder=encoder)
        try:
            t0 = time.perf_counter()
            engine.ingest([root], name)
            t1 = time.perf_counter()
            answers = [engine.ask(q, collection=name) for q in questions]
            t2 = time.perf_counter()
        finally:
            engine.close()
        tally = RawTally()
        check_raw(root, [Cited.of(a) for a in answers if a.status != "abstained"], tally)
    answered = sum(a.status != "abstained" for a in answers)
    print(f"\n{name}: {len(pages)} pages, {len(questions)} questions, {answered} answered, "
          f"{tally.citations} HTML citations, {tally.pieces} (piece, citation) pairs, "
          f"{len(tally.missed_citations)} citations with a miss, {len(tally.misses)} misses "
          f"(ingest {t1 - t0:.0f} s, ask {t2 - t1:.0f} s)")
    for m in tally.misses:
        print("  ", m)
    blocks = [p.block for a in answers for p in pieces(a.answer)]
    print(f"   quoted pieces: {blocks.count(None)} prose, {blocks.count('code')} code, {blocks.count('table')} tables")
    return {"corpus": name, "pages": len(pages), "questions": len(questions), "answered": answered,
            "citations": tally.citations, "pairs": tally.pieces, "missed_citations": len(tally.missed_citations),
            "misses": tally.misses,
            "answers": [{"question": a.question, "status": a.status, "answer": a.answer,
                         "citations": {c.n: [c.path, c.start_line, c.end_line] for c in a.citations}}
                        for a in answers]}


def recheck(dump: Path, root: Path, corpus: str) -> RawTally:
    """The raw check over answers saved by ``--json`` (no ingest, no model)."""
    tally = RawTally()
    for r in json.loads(dump.read_text(encoding="utf-8")):
        if r["corpus"] != corpus:
            continue
        cited = [Cited(a["question"], a["answer"], {int(n): tuple(c) for n, c in a["citations"].items()})
                 for a in r["answers"] if a["status"] != "abstained"]
        check_raw(root, cited, tally)
    return tally


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("corpora", nargs="*", default=["git", "django"], choices=["git", "django"])
    ap.add_argument("--pages", type=int, default=None, help="Git: only the first N questions")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--recheck", type=Path, default=None, help="check the answers of a --json dump again, no ingest")
    args = ap.parse_args(argv)
    if args.recheck:
        roots = {"git": GIT_QA / "corpus", "django": DJANGO_CORPUS}
        tally = RawTally()
        for name in args.corpora:
            tally = recheck(args.recheck, roots[name], name)
            print(f"{name}: {tally.citations} HTML citations, {len(tally.missed_citations)} with a miss")
            for m in tally.misses:
                print("  ", m)
        return 1 if tally.misses else 0
    encoder = OnnxMiniLM()
    results = []
    for name in args.corpora:
        if name == "git":
            corpus, pages, questions = git_set(args.pages)
        else:
            corpus, pages, questions = DJANGO_CORPUS, DJANGO_PAGES, DJANGO_QUESTIONS + DJANGO_LIST_QUESTIONS
        results.append(run(name, corpus, pages, questions, encoder))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False), encoding="utf-8")
    return 1 if any(r["misses"] for r in results) else 0


if __name__ == "__main__":
    raise SystemExit(main())
