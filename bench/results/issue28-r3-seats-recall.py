"""Evidence doc recall of the hybrid under seats=0..4 (one retrieval per question, cuts re-applied), vs BM25's. Usage: sim.py NAME DATASET"""
import json, sys
from pathlib import Path
from ragcore.engine.engine import Engine
from ragcore.settings.config import RagcoreSettings
from ragcore.retrieval.cutrules import apply_cuts
from ragcore.eval.runner import infer_prefix
from ragcore.eval.paired import sign_test_p
name, d = sys.argv[1], Path(sys.argv[2])
eng = Engine(RagcoreSettings.from_env()); s = eng.settings; view = eng.view(name)
rows = [json.loads(l) for l in open(d / "questions.jsonl")]
rows = [r for r in rows if r.get("relevant_docs")]
pools, bm = [], []
for r in rows:
    res = view.retrieve(r["question"], s); pools.append(res.candidates)
    bm.append([c.chunk.path for c in view.retrieve(r["question"], s.with_(retrieval_mode="sparse")).candidates if c.kept])
pre = infer_prefix([c.chunk.path for p in pools for c in p], [x for r in rows for x in r["relevant_docs"]]) or ""
def rec(paths, R): return sum(1 for x in R if (pre + x) in set(paths)) / len(R)
out = {}
for seats in (0, 1, 2, 3, 4):
    per = []
    for r, p in zip(rows, pools):
        cut = apply_cuts(p, top_k=s.top_k, threshold=s.threshold, dedupe=s.dedupe, per_doc=s.evidence_per_doc, rerank_threshold=s.rerank_threshold, seats=seats)
        per.append(rec([c.chunk.path for c in cut if c.kept], r["relevant_docs"]))
    out[seats] = per
b = [rec(x, r["relevant_docs"]) for r, x in zip(rows, bm)]
n = len(rows)
print(name, "n", n, "bm25", round(sum(b)/n, 3))
for k, per in out.items():
    bt = sum(1 for x, y in zip(per, out[0]) if x > y + 1e-9); wt = sum(1 for x, y in zip(per, out[0]) if x < y - 1e-9)
    vb = sum(1 for x, y in zip(per, b) if x > y + 1e-9); vw = sum(1 for x, y in zip(per, b) if x < y - 1e-9)
    print(f"  seats={k}: {sum(per)/n:.3f}  vs seats0 {bt}/{wt} p={sign_test_p(bt, wt)}  vs bm25 {vb}/{wt and vw or vw}")
    if k:
        print("     moved:", [(r["id"], round(y, 2), round(x, 2)) for r, x, y in zip(rows, per, out[0]) if abs(x - y) > 1e-9])
eng.close()
