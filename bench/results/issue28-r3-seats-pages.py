"""Page choice: the composer's page (its best unit's) vs the first-ranked evidence page among those whose best unit
is within m of the best, under seats 0/1/2. Usage: sim3.py NAME DATASET"""
import json, sys
from pathlib import Path
from ragcore.engine.engine import Engine
from ragcore.settings.config import RagcoreSettings
from ragcore.retrieval.cutrules import apply_cuts
from ragcore.citations import evidence_from_candidates
from ragcore.synthesis.extractive.composer import ExtractiveComposer
from ragcore.eval.runner import infer_prefix
name, d = sys.argv[1], Path(sys.argv[2])
SEATS = (0, 1, 2); MS = (0.0, 0.05, 0.1, 0.2)
eng = Engine(RagcoreSettings.from_env()); s = eng.settings; view = eng.view(name)
bar, _ = eng.abstain_bar(s, name)
comp = ExtractiveComposer(eng.encoder, max_sentences=s.max_answer_sentences, max_docs=s.answer_docs)
rows = [r for r in (json.loads(l) for l in open(d / "questions.jsonl")) if r.get("relevant_docs")]
recs = []
for r in rows:
    q = r["question"]; res = view.retrieve(q, s); sup = view.support(q, s, res)
    if not (sup.score >= bar and not sup.unseen): continue
    rec = {"id": r["id"], "rel": r["relevant_docs"]}
    for k in SEATS:
        cut = apply_cuts(res.candidates, top_k=s.top_k, threshold=s.threshold, dedupe=s.dedupe, per_doc=0, seats=k)
        ev = evidence_from_candidates(cut, res.rank_score_kind)
        page = {e.n: e.chunk.path for e in ev}
        scored = comp.score_sentences(q, ev)
        best = {}
        for p in scored: best[page[p.n]] = max(best.get(page[p.n], -9), p.score)
        order = []
        for e in ev:
            if e.chunk.path not in order: order.append(e.chunk.path)
        top = max(best.values()) if best else 0
        rec[k] = {m: next((pg for pg in order if best.get(pg, -9) >= (1 - m) * top), None) for m in MS}
    recs.append(rec)
pre = infer_prefix([v for x in recs for v in x[0].values() if v], [y for x in recs for y in x["rel"]]) or ""
for k in SEATS:
    print(name, f"seats={k}", " ".join(f"m={m}: {sum(1 for x in recs if x[k][m] and x[k][m][len(pre):] in x['rel'])}/{len(recs)}" for m in MS))
eng.close()
