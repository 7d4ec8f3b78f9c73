"""Paired, question by question: the base run (this branch's defaults, evidence_seats=1) against the
`evidence_seats=0` sweep (main's behaviour) and BM25 alone, from one `ragcore eval --out` JSON each.
Usage: issue28-recall15-paired.py RESULTS.json..."""
import json, sys
from ragcore.eval.paired import sign_test_p


def ev_recall(q):
    rel = set(q["relevant_docs"])
    return len(rel & set(q.get("evidence_docs") or [])) / len(rel) if rel else None


def cite_prec(q):
    c = q.get("cited_docs") or []
    return sum(1 for x in c if x in set(q["relevant_docs"])) / len(c) if c and q["status"] == "ok" else None


def paired(a, b, f):
    better = worse = 0
    for x, y in zip(a, b):
        u, v = f(x), f(y)
        if u is None or v is None:
            continue
        better += u > v + 1e-9
        worse += u < v - 1e-9
    return better, worse, sign_test_p(better, worse)


for path in sys.argv[1:]:
    d = json.load(open(path))
    runs = {r["label"]: r for r in d["runs"]}
    base = runs["ragcore hybrid (base)"]
    qs = {q["id"]: q for q in base["questions"]}
    for label in ("evidence_seats=0", "BM25 alone"):
        if label not in runs:
            continue
        other = {q["id"]: q for q in runs[label]["questions"]}
        ids = [i for i in qs if i in other and qs[i]["answerable"] and qs[i]["relevant_docs"]]
        a, b = [qs[i] for i in ids], [other[i] for i in ids]
        m, n = base["metrics"], runs[label]["metrics"]
        changed = [i for i in ids if qs[i]["answer"] != other[i]["answer"]]
        print(f"{d['dataset']}: base vs {label}: evidence recall {m['evidence_recall']:.3f} vs {n['evidence_recall']:.3f} "
              f"(better/worse {paired(a, b, ev_recall)}); cite prec {m['citation_precision']:.3f} vs {n['citation_precision']:.3f} "
              f"(per answer {paired(a, b, cite_prec)}); nDCG@10 {m['ndcg_at_10']:.3f} vs {n['ndcg_at_10']:.3f}; "
              f"answered {m['answer_rate']:.3f} vs {n['answer_rate']:.3f}; abstained(U) {m['abstain_rate']:.3f} vs {n['abstain_rate']:.3f}; "
              f"answers that differ: {len(changed)} {changed[:8]}")
