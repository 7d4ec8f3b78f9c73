"""Issue 28 round 5: how well one chunk holds the question's words: the best chunk's share of the question's
terms, by count and IDF-weighted (c_: content terms, g_: without the generic question words). Usage: as
issue28-r5-dump.py, writing g-NAME.json"""
import json, sys
from pathlib import Path
import numpy as np
from ragcore.engine.engine import Engine
from ragcore.settings.config import RagcoreSettings
from ragcore.abstain.answer_fit import question_terms
from ragcore.textutil import content_terms
name, d, outp = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
eng = Engine(RagcoreSettings.from_env())
idx = eng.retriever.index(name)
rows = [json.loads(l) for f in ("questions.jsonl", "unanswerable.jsonl") if (d / f).exists() for l in open(d / f)]
out = []
for r in rows:
    q = r["question"]
    res = {"id": r["id"]}
    for key, terms in (("c", sorted(content_terms(q))), ("g", sorted(question_terms(q)))):
        idf = {t: idx.idf(t) for t in terms}
        maxidf = np.log(idx.n_docs + 1)  # unseen term: count as rarest
        w = {t: (idf[t] if idf[t] > 0 else maxidf) for t in terms}
        tot = sum(w.values()) or 1
        acc = np.zeros(idx.n_docs); cnt = np.zeros(idx.n_docs)
        for t in terms:
            rws = np.unique(idx.rows_with_any([t]))
            acc[rws] += w[t]; cnt[rws] += 1
        res[key + "_idfcov"] = float(acc.max() / tot) if terms else 1.0
        res[key + "_cntcov"] = float(cnt.max() / len(terms)) if terms else 1.0
        res[key + "_unseen_share"] = sum(w[t] for t in terms if idf[t] == 0) / tot if terms else 0.0
        res[key + "_minidf_present"] = min((idf[t] for t in terms), default=0)
        res[key + "_maxidf"] = max(w.values(), default=0) / maxidf
    out.append(res)
Path(outp).write_text(json.dumps(out)); print(name)
