"""Per-question answerability features on one set: real answerable/unanswerable questions and the
label-free calibration's generated/off-topic questions. Usage: feats.py NAME DATASET OUT.json"""
import json, sys, time, statistics
from pathlib import Path
from ragcore.engine.engine import Engine
from ragcore.settings.config import RagcoreSettings
from ragcore.abstain.autocalibrate import generate_questions, corpus_chunks, offtopic_questions
from ragcore.textutil import content_terms
name, d, outp = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
eng = Engine(RagcoreSettings.from_env()); s = eng.settings.with_(collection=name, path_filter=None)
view = eng.view(name); idx = eng.retriever.index(name)
bar, src = eng.abstain_bar(s, name)
rows = [(json.loads(l)) for f in ("questions.jsonl", "unanswerable.jsonl") for l in open(d / f)]
qs = [("A" if r["answerable"] else "U", r["id"], r["question"]) for r in rows]
qs += [("G", f"g{i}", g.question) for i, g in enumerate(generate_questions(corpus_chunks(eng, name)))]
qs += [("O", f"o{i}", q) for i, q in enumerate(offtopic_questions())]
eng.retriever.encoder_for(name).encode_queries([q for _, _, q in qs])
def feats(q, res):
    c = [x for x in res.candidates if x.origin == "corpus"]
    byp = sorted(c, key=lambda x: x.chunk_rank if x.chunk_rank is not None else x.rank)
    terms = content_terms(q)
    idf = {t: idx.idf(t) for t in terms}
    tot = sum(idf.values()) or 1.0
    def cov(ch): return content_terms(f"{ch.chunk.text} {' '.join(ch.chunk.section)}")
    top = cov(byp[0]) if byp else set()
    top3 = set().union(*[cov(x) for x in byp[:3]]) if byp else set()
    rare = max(idf, key=idf.get) if idf else None
    cos = sorted((x.dense_score for x in c if x.dense_score is not None), reverse=True)
    bg = cos[20:50] or cos[-10:]
    dtop = [x.chunk.path for x in sorted((x for x in c if x.dense_rank), key=lambda x: x.dense_rank)][:5]
    stop = [x.chunk.path for x in sorted((x for x in c if x.sparse_rank), key=lambda x: x.sparse_rank)][:5]
    return {"idf_lex": sum(v for t, v in idf.items() if t in top) / tot, "idf_lex3": sum(v for t, v in idf.items() if t in top3) / tot,
            "rare_top3": float(rare in top3) if rare else None, "rare_idf": idf.get(rare), "n_terms": len(terms),
            "margin": (sum(cos[:5]) / len(cos[:5]) - statistics.mean(bg)) if cos and bg else None,
            "top1": cos[0] if cos else None,
            "agree_top": float(bool(dtop and stop and dtop[0] == stop[0])),
            "agree5": len(set(dtop) & set(stop)) / max(len(set(dtop) | set(stop)), 1)}
out = []
t0 = time.time()
for kind, qid, q in qs:
    res = view.retrieve(q, s)
    sup = view.support(q, s, res)
    out.append({"kind": kind, "id": qid, "q": q, "score": sup.score, "ev": sup.evidence_cosine, "topic": sup.topic.score if sup.topic else None,
                "lex": sup.lexical, "unseen": list(sup.unseen), **feats(q, res)})
Path(outp).write_text(json.dumps({"set": name, "bar": bar, "bar_source": src, "seconds": time.time() - t0, "rows": out}))
print(name, bar, src, len(out), time.time() - t0)
eng.close()
