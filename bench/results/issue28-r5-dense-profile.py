"""Issue 28 round 5: the question's dense profile over every chunk of the collection (best, mean of 5, mean, spread,
quantiles, cosine to the corpus centroid, best per document). Usage: as issue28-r5-dump.py, writing f-NAME.json"""
import json, sys
from pathlib import Path
import numpy as np
from ragcore.engine.engine import Engine
from ragcore.settings.config import RagcoreSettings
name, d, outp = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
eng = Engine(RagcoreSettings.from_env())
idx = eng.retriever.index(name)
D = np.asarray(idx.dense, dtype=np.float32)
D = D / np.linalg.norm(D, axis=1, keepdims=True)
cen = D.mean(0); cn = cen / np.linalg.norm(cen)
paths, doc_of = idx.documents()
rows = [json.loads(l) for f in ("questions.jsonl", "unanswerable.jsonl") if (d / f).exists() for l in open(d / f)]
qs = [r["question"] for r in rows]
Q = np.asarray(eng.encoder.encode(qs), dtype=np.float32)
# generic-question centroid: bundled off-topic questions
out = []
for r, q in zip(rows, Q):
    c = D @ q
    s = np.sort(c)[::-1]
    # per-document best
    best_doc = np.full(len(paths), -1.0); np.maximum.at(best_doc, doc_of, c); bd = np.sort(best_doc)[::-1]
    out.append({"id": r["id"], "kind": "A" if r["answerable"] else "U", "top1": float(s[0]), "top5": float(s[:5].mean()),
                "mean": float(c.mean()), "std": float(c.std()), "p99": float(np.quantile(c, 0.99)), "p90": float(np.quantile(c, 0.9)),
                "cen": float(q @ cn), "doc1": float(bd[0]), "doc2": float(bd[1]), "doc5": float(bd[4]), "n": len(c)})
Path(outp).write_text(json.dumps(out))
print(name, len(out))
