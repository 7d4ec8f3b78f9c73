"""Each candidate signal mixed into the support score, (1-w)*score + w*signal, the bar chosen without labels
(choose_bar on the generated/off-topic questions) on each set; answered % (A) / abstained % (U) and flips vs today."""
import json, sys
from ragcore.abstain.autocalibrate import choose_bar
sets = [json.load(open(f)) for f in sys.argv[1:]]
def run(key):
    out = []
    for D in sets:
        R = D["rows"]
        g = [key(r) for r in R if r["kind"] == "G"]; o = [key(r) for r in R if r["kind"] == "O"]
        bar = choose_bar(g, o).bar
        gb = choose_bar([r["score"] for r in R if r["kind"] == "G"], [r["score"] for r in R if r["kind"] == "O"]).bar
        A = [r for r in R if r["kind"] == "A"]; U = [r for r in R if r["kind"] == "U"]
        ans = lambda r, k, b: k(r) >= b and not r["unseen"]
        base = lambda r: r["score"]
        a = sum(ans(r, key, bar) for r in A); u = sum(not ans(r, key, bar) for r in U)
        a0 = sum(ans(r, base, gb) for r in A); u0 = sum(not ans(r, base, gb) for r in U)
        out.append(f"{D['set'][:6]} {100*a/len(A):5.1f}/{100*u/len(U):5.1f} ({a-a0:+d},{u-u0:+d})")
    return " | ".join(out)
print("base".ljust(22), run(lambda r: r["score"]))
for feat in ("margin", "agree5", "agree_top", "idf_lex", "idf_lex3", "rare_top3", "top1"):
    for w in (0.05, 0.1, 0.15, 0.2, 0.25):
        print(f"{feat} w={w}".ljust(22), run(lambda r, f=feat, w=w: (1 - w) * r["score"] + w * (r[f] or 0.0)))
for w1 in (0.1, 0.15, 0.2):
    for w2 in (0.05, 0.1):
        print(f"margin {w1}+agree5 {w2}".ljust(22), run(lambda r, w1=w1, w2=w2: (1 - w1 - w2) * r["score"] + w1 * r["margin"] + w2 * r["agree5"]))
