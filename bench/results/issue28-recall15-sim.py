"""Offline: evidence doc recall (hybrid and BM25 under the same rule) and the extractive answer's cited
pages, under seat rules x the composer's seat margin, one retrieval per question (cuts and the composer
re-run). Usage: issue28-recall15-sim.py NAME DATASET OUT.json (RAGCORE_DATA_DIR set; PYTHONPATH at a
checkout of branch recall15). Answered = support >= bar as retrieved without seats (the eval's answered
set can differ by the answers floor). Rules (CONF: seats, rule):
  last     = round 3's rule: the `seats` best passages take the places of the last chunks in document order
  crowded1 = the best passage of a page the top-K lacks (among the top-K passages) takes the place of the
             last chunk of the page with most chunks in the evidence
  add1     = the same passage added after the top-K (what ships: passage_seats.py)
  add      = the `seats` best passages added after the top-K, whatever their page"""
import json, sys
from pathlib import Path
from ragcore.engine.engine import Engine
from ragcore.settings.config import RagcoreSettings
from ragcore.retrieval.cutrules import apply_cuts
from ragcore.citations import evidence_from_candidates
from ragcore.synthesis.extractive import composer as C
from collections import Counter
from ragcore.retrieval import cutrules
from ragcore.retrieval.passage_seats import seated as new_doc_seats
from ragcore.eval.runner import infer_prefix
from ragcore.eval.paired import sign_test_p

name, d, outp = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
MARGINS = (0.1, 0.15, 0.2, float("inf"))
CONF = [(0, "last"), (1, "last"), (2, "last"), (1, "crowded1"), (2, "crowded1"), (1, "add1"), (2, "add1"), (2, "add")]
RULE = "add1"


def best_passages(items, seats):
    ranked = sorted((i for i, it in enumerate(items) if it.chunk_rank is not None), key=lambda i: items[i].chunk_rank)
    return set(ranked[:seats])


def variant(items, top_k, seats):
    """keep_top_with_seats under RULE (see the docstring)."""
    keep = set(range(min(top_k, len(items))))
    if seats <= 0:
        return [i in keep for i in range(len(items))]
    seats_at = best_passages(items, min(seats, top_k)) if RULE in ("last", "add") else new_doc_seats(items, top_k, seats)
    if RULE.startswith("add"):
        return [i in keep or i in seats_at for i in range(len(items))]
    for s_ in sorted(seats_at - keep, key=lambda i: items[i].chunk_rank):
        movable = keep - seats_at
        if RULE == "last":
            keep.discard(max(movable))
        else:
            count = Counter(items[i].doc for i in movable)
            keep.discard(max(movable, key=lambda i: (count[items[i].doc], i)))
        keep.add(s_)
    return [i in keep for i in range(len(items))]


cutrules.keep_top_with_seats = variant
eng = Engine(RagcoreSettings.from_env()); s = eng.settings.with_(evidence_seats=0); view = eng.view(name)
bar, _ = eng.abstain_bar(s, name)
comp = C.ExtractiveComposer(eng.encoder, max_sentences=s.max_answer_sentences, max_docs=s.answer_docs)
rows = [r for r in (json.loads(l) for l in open(d / "questions.jsonl")) if r.get("relevant_docs")]
recs = []
for r in rows:
    q = r["question"]; res = view.retrieve(q, s); sup = view.support(q, s, res)
    bmres = view.retrieve(q, s.with_(retrieval_mode="sparse"))
    rec = {"id": r["id"], "rel": r["relevant_docs"], "answered": bool(sup.score >= bar and not sup.unseen)}
    for k, dp in CONF:
        RULE = dp
        cut = apply_cuts(res.candidates, top_k=s.top_k, threshold=s.threshold, dedupe=s.dedupe, per_doc=s.evidence_per_doc,
                         rerank_threshold=s.rerank_threshold, seats=k)
        ev = evidence_from_candidates(cut, res.rank_score_kind)
        rec[f"ev{k}{dp}"] = [e.chunk.path for e in ev]
        rec[f"bm{k}{dp}"] = [c.chunk.path for c in apply_cuts(bmres.candidates, top_k=s.top_k, threshold=s.threshold,
                             dedupe=s.dedupe, per_doc=s.evidence_per_doc, rerank_threshold=s.rerank_threshold, seats=k) if c.kept]
        for m in (MARGINS if k else (0.0,)):
            C.SEAT_MARGIN = m
            out = comp.compose(q, ev) if ev else None
            page = {e.n: e.chunk.path for e in ev}
            rec[f"cite{k}{dp}_{m}"] = [page[p.n] for p in out.picked] if out and out.status == "ok" else []
    recs.append(rec)
pre = infer_prefix([p for x in recs for p in x["ev0last"]], [y for x in recs for y in x["rel"]]) or ""
def recall(paths, rel): return sum(1 for x in rel if pre + x in set(paths)) / len(rel)
def prec(recs_, key):
    c = [p for x in recs_ if x["answered"] for p in x[key]]
    good = sum(1 for x in recs_ if x["answered"] for p in x[key] if p[len(pre):] in x["rel"])
    return good / len(c) if c else 0.0, good, len(c)
def linked(recs_, key): return sum(1 for x in recs_ if x["answered"] and any(p[len(pre):] in x["rel"] for p in x[key]))
n = len(recs); na = sum(x["answered"] for x in recs)
print(f"{name}: n {n}, answered {na}")
base = [recall(x["ev0last"], x["rel"]) for x in recs]
for k, dp in CONF:
    per = [recall(x[f"ev{k}{dp}"], x["rel"]) for x in recs]
    b = sum(1 for u, v in zip(per, base) if u > v + 1e-9); w = sum(1 for u, v in zip(per, base) if u < v - 1e-9)
    bmr = sum(recall(x[f"bm{k}{dp}"], x["rel"]) for x in recs) / n
    line = f"  seats={k} {dp}: ev recall {sum(per)/n:.3f} ({b}/{w} p {sign_test_p(b, w)}) bm25 {bmr:.3f}"
    for m in (MARGINS if k else (0.0,)):
        key = f"cite{k}{dp}_{m}"; pr, g, c = prec(recs, key)
        ch = sum(1 for x in recs if x["answered"] and x[key] != x["cite0last_0.0"])
        line += f" | m={m}: {pr:.3f} ({g}/{c}) L{linked(recs, key)} ch{ch}"
    print(line)
outp.write_text(json.dumps({"set": name, "prefix": pre, "questions": recs}, indent=0))
eng.close()
