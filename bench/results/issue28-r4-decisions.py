"""Paired abstain decisions, question by question, from two dumps of issue28-r4-dump.py on the same collection
(BEFORE: main's code; AFTER: this branch's): answered (A) / abstained (U) counts and every flip. The typed-answer
check is re-applied to AFTER's quoted claims with the code on PYTHONPATH, so a dump made before its last change
still shows the final rule. Usage: python issue28-r4-decisions.py DUMP_DIR NAME..."""
import json
import sys
from pathlib import Path

from ragcore.abstain.answer_type import untyped_reason

root = Path(sys.argv[1])
for name in sys.argv[2:]:
    before = {r["id"]: r for r in json.load(open(root / f"dump-{name}.json"))["rows"]}
    after = json.load(open(root / f"dump2-{name}.json"))["rows"]
    for r in after:
        if r["reason"] is None:
            r["reason"] = untyped_reason(r["q"], r["claims"])
    def counts(rows):
        a = [r for r in rows if r["kind"] == "A"]
        u = [r for r in rows if r["kind"] == "U"]
        return f"{sum(r['reason'] is None for r in a)}/{len(a)} answered, {sum(r['reason'] is not None for r in u)}/{len(u)} abstained"
    print(f"{name}: before {counts(before.values())}; after {counts(after)}")
    for r in after:
        b = before[r["id"]]
        if (b["reason"] is None) != (r["reason"] is None):
            print(f"  {r['kind']} {r['id']} {'answered' if r['reason'] is None else 'abstained'} (was "
                  f"{'answered' if b['reason'] is None else 'abstained'}), support {r['score']:.3f}: {r['q']}\n"
                  f"      {r['reason']}")
