"""The best any rule on the support score's three parts could do, per set, with labels (an oracle):
every weighting of evidence / topic / lexical in steps of 0.05 and every bar, the checks after the bar
kept as today. Prints, per set, today's answered/abstained at its label-free bar and the weighting+bar
that maximises min(answered share, abstained share). Usage: python issue28-r5-oracle.py DUMP_DIR"""
import json
import sys
from pathlib import Path

root = Path(sys.argv[1])
for name in ["django", "git", "scrapy", "sqlalchemy", "pdfqa", "guide"]:
    d = json.load(open(root / f"base-{name}.json"))
    rows = d["rows"]
    A = [r for r in rows if r["kind"] == "A"]
    U = [r for r in rows if r["kind"] == "U"]
    today = (sum(r["reason"] is None for r in A), sum(r["reason"] is not None for r in U))
    best = (0.0, None)
    for i in range(21):
        for j in range(21 - i):
            w = (i / 20, j / 20, 1 - i / 20 - j / 20)
            sc = [(w[0] * (r["ev"] or 0) + w[1] * (r["topic"] or 0) + w[2] * (r["lex"] or 0), r) for r in rows]
            for t in sorted({s for s, _ in sc}):
                a = sum(1 for s, r in sc if r["kind"] == "A" and s >= t and r["reason_if_above"] is None)
                u = sum(1 for s, r in sc if r["kind"] == "U" and not (s >= t and r["reason_if_above"] is None))
                v = min(a / len(A), u / len(U))
                if v > best[0]:
                    best = (v, (w, round(t, 4), a, u))
    v, (w, t, a, u) = best
    print(f"{name}: today {today[0]}/{len(A)} answered, {today[1]}/{len(U)} abstained (bar {d['bar']:.3f}); "
          f"oracle best {a}/{len(A)} ({a/len(A):.1%}), {u}/{len(U)} ({u/len(U):.1%}) at weights "
          f"{tuple(round(x, 2) for x in w)} (evidence, topic, lexical), bar {t}")
