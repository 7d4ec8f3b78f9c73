"""Issue 28 round 5: how well each candidate signal ranks answerable above unanswerable questions (AUC,
0.5 = chance), per set, from the dumps of issue28-r5-dump.py (base-NAME.json), issue28-r5-dense-profile.py
(f-NAME.json) and issue28-r5-term-coverage.py (g-NAME.json). Usage: python issue28-r5-auc.py DUMP_DIR"""
import json
import sys
from pathlib import Path

root = Path(sys.argv[1])
SETS = ["django", "git", "scrapy", "sqlalchemy", "pdfqa", "guide"]
SIGNALS = {
    "support (today)": lambda f, g, b: b["score"],
    "best cosine": lambda f, g, b: f["top1"],
    "mean of 5 best": lambda f, g, b: f["top5"],
    "centroid cosine": lambda f, g, b: f["cen"],
    "best - centroid": lambda f, g, b: f["top1"] - f["cen"],
    "mean5 - centroid": lambda f, g, b: f["top5"] - f["cen"],
    "best z-score": lambda f, g, b: (f["top1"] - f["mean"]) / f["std"],
    "best - p99": lambda f, g, b: f["top1"] - f["p99"],
    "best - p90": lambda f, g, b: f["top1"] - f["p90"],
    "best - mean": lambda f, g, b: f["top1"] - f["mean"],
    "doc1 - doc5": lambda f, g, b: f["doc1"] - f["doc5"],
    "one chunk idf share": lambda f, g, b: g["g_idfcov"],
    "one chunk word share": lambda f, g, b: g["g_cntcov"],
    "support + 0.1 idf share": lambda f, g, b: b["score"] + 0.1 * g["g_idfcov"],
    "support + 0.2 idf share": lambda f, g, b: b["score"] + 0.2 * g["g_idfcov"],
}


def auc(pos, neg):
    return sum((p > q) + 0.5 * (p == q) for p in pos for q in neg) / (len(pos) * len(neg))


print("signal".ljust(26), " ".join(s[:10].rjust(10) for s in SETS))
for label, fn in SIGNALS.items():
    row = []
    for s in SETS:
        f = {r["id"]: r for r in json.load(open(root / f"f-{s}.json"))}
        g = {r["id"]: r for r in json.load(open(root / f"g-{s}.json"))}
        b = {r["id"]: r for r in json.load(open(root / f"base-{s}.json"))["rows"]}
        vals = {i: fn(f[i], g[i], b[i]) for i in b}
        row.append(auc([v for i, v in vals.items() if b[i]["kind"] == "A"], [v for i, v in vals.items() if b[i]["kind"] == "U"]))
    print(label.ljust(26), " ".join(f"{a:10.3f}" for a in row))
