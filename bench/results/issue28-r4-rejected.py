"""The rejected signals of issue28-r4.md, offline on DUMP_DIR/features.json (issue28-r4-features.py): each
set's answered A / abstained U when the decision also abstains on the signal (or the bar moves).
Usage: python issue28-r4-rejected.py DUMP_DIR"""
import json
import sys
from pathlib import Path

from ragcore.textutil import content_terms

D = json.load(open(Path(sys.argv[1]) / "features.json"))
FLOOR = 0.35  # answer_fit.ANSWERS_FLOOR
REASONS_BELOW = ("support", "nothing the answer", "the evidence has no")  # what a lower bar or floor recomputes


def answered(r, bar, floor=FLOOR, rule=None):
    if r["score"] < bar or r["unseen"] or not r["claims"] or max(r["claim_scores"]) < floor:
        return False
    if r["reason"] and not r["reason"].startswith(REASONS_BELOW):
        return False
    return not (rule and rule(r))


def rarest_unquoted(r):
    idf = {t: v for t, v in r["idf"].items() if v > 0}
    quoted = set().union(*[content_terms(c) for c in r["claims"]]) if r["claims"] else set()
    return bool(idf) and max(idf, key=idf.get) not in quoted


def report(label, rule=None, position=None, floor=FLOOR):
    cells = []
    for name, d in D.items():
        m = d["means"]
        bar = d["bar"] if position is None else round(m["offtopic"] + position * (m["answerable"] - m["offtopic"]), 4)
        a = [r for r in d["rows"] if r["kind"] == "A"]
        u = [r for r in d["rows"] if r["kind"] == "U"]
        cells.append(f"{name} {sum(answered(r, bar, floor, rule) for r in a)}/{len(a)}, "
                     f"{sum(not answered(r, bar, floor, rule) for r in u)}/{len(u)}")
    print(f"{label}: " + " | ".join(cells))


report("today")
report("rarest question word in no quoted claim", rarest_unquoted)
report("a plain word in no chunk, in any form", lambda r: bool(r["absent"]))
report("answers floor 0.42", floor=0.42)
for pos in (0.615, 0.61, 0.60):
    report(f"bar position {pos}", position=pos)
for name, d in D.items():
    n = sum(1 for r in d["rows"] if r["kind"] == "A" and r["reason"] is None and not all(r["pairs"].values()))
    print(f"{name}: answered answerable questions with a content-word pair no chunk holds together: {n}")
