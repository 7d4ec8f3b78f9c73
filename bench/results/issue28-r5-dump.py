"""Issue 28 round 5: per question of one set, the support score and its three parts, the decision at the label-free bar, the decision if the score were just above the bar (the checks after the bar alone), and for a question of several sentences each sentence's own support.
Usage: PYTHONPATH=<checkout> RAGCORE_DATA_DIR=D python issue28-r5-dump.py NAME DATASET OUT.json"""
import json, sys, time
from dataclasses import replace
from pathlib import Path
from ragcore.abstain.answer_fit import quoted_answers_reason, question_terms
from ragcore.abstain.answerability import question_support
from ragcore.abstain.coverage import judge_coverage
from ragcore.citations import evidence_from_candidates
from ragcore.engine.engine import Engine
from ragcore.engine.stages import NOTHING_TO_QUOTE, abstain_reason
from ragcore.settings.config import RagcoreSettings
from ragcore.synthesis.extractive.composer import ExtractiveComposer
from ragcore.textutil import sentence_spans

name, d, outp = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
eng = Engine(RagcoreSettings.from_env())
s = eng.settings.with_(collection=name, path_filter=None)
view = eng.view(name)
bar = view.abstain_bar(s).value
composer = ExtractiveComposer(eng.encoder, max_sentences=s.max_answer_sentences, max_docs=s.answer_docs)
rows = [json.loads(l) for f in ("questions.jsonl", "unanswerable.jsonl") if (d / f).exists() for l in open(d / f)]
out = []
def sup_of(q):
    res = view.retrieve(q, s)
    return res, question_support("corpus", q, res, view, path_filter=None, check_unseen=s.abstain_unseen_words,
                                 check_uncovered=s.abstain_uncovered)
def decide(q, res, sup, composed):
    sup = judge_coverage(sup, bar, s.uncovered_margin)
    evidence = evidence_from_candidates(res.candidates, res.rank_score_kind, start=1)
    reason = abstain_reason(evidence, sup, bar)
    if reason is None:
        reason = NOTHING_TO_QUOTE if composed.status == "abstained" else None
        reason = reason or quoted_answers_reason(eng.encoder, q, composed, sup)
    return reason
t0 = time.time()
for r in rows:
    q = r["question"]
    res, sup = sup_of(q)
    evidence = evidence_from_candidates(res.candidates, res.rank_score_kind, start=1)
    composed = composer.compose(q, evidence)
    spans = [sp.text for sp in sentence_spans(q)]
    var = []
    if len(spans) >= 2:
        for t in spans:
            _, vs = sup_of(t)
            var.append({"text": t, "terms": len(question_terms(t)), "score": vs.score,
                        "ev": vs.evidence_cosine, "topic": vs.topic.score if vs.topic else None, "lex": vs.lexical})
    # decision if the score were raised to just above the bar (post-bar checks only)
    hi = decide(q, res, replace(sup, score=max(sup.score, bar + 1e-6)), composed)
    out.append({"kind": "A" if r["answerable"] else "U", "id": r["id"], "q": q, "score": sup.score,
                "ev": sup.evidence_cosine, "topic": sup.topic.score if sup.topic else None, "lex": sup.lexical,
                "reason": decide(q, res, sup, composed), "reason_if_above": hi, "variants": var,
                "hedged": list(judge_coverage(sup, bar, s.uncovered_margin).uncovered)})
Path(outp).write_text(json.dumps({"set": name, "bar": bar, "rows": out}, indent=0))
print(name, bar, len(out), round(time.time() - t0))
eng.close()
