"""Per question of one set (answerable A, unanswerable U): the support score, the label-free bar,
today's decision and, for every question, what the extractive composer would quote (each claim
with its ``answers`` score) and the top evidence chunks' text, so answer-side signals can be
measured offline, question by question, on the same retrieval.
Usage: PYTHONPATH=<checkout> RAGCORE_DATA_DIR=D python issue28-r4-dump.py NAME DATASET OUT.json"""
import json
import sys
import time
from pathlib import Path

from ragcore.abstain.answer_fit import claim_scores, quoted_answers_reason
from ragcore.abstain.answerability import question_support
from ragcore.abstain.coverage import judge_coverage
from ragcore.citations import evidence_from_candidates
from ragcore.engine.engine import Engine
from ragcore.engine.stages import NOTHING_TO_QUOTE, abstain_reason
from ragcore.settings.config import RagcoreSettings
from ragcore.synthesis.extractive.composer import ExtractiveComposer

name, d, outp = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
eng = Engine(RagcoreSettings.from_env())
s = eng.settings.with_(collection=name, path_filter=None)
view = eng.view(name)
bar = view.abstain_bar(s).value
composer = ExtractiveComposer(eng.encoder, max_sentences=s.max_answer_sentences, max_docs=s.answer_docs)
rows = [json.loads(line) for f in ("questions.jsonl", "unanswerable.jsonl") if (d / f).exists() for line in open(d / f)]
out = []
t0 = time.time()
for r in rows:
    q = r["question"]
    res = view.retrieve(q, s)
    evidence = evidence_from_candidates(res.candidates, res.rank_score_kind, start=1)
    sup = question_support("corpus", q, res, view, path_filter=None, check_unseen=s.abstain_unseen_words,
                           check_uncovered=s.abstain_uncovered)
    sup = judge_coverage(sup, bar, s.uncovered_margin)
    reason = abstain_reason(evidence, sup, bar)
    composed = composer.compose(q, evidence)
    claims = [p.unit.plain if p.unit is not None else p.span.text for p in composed.picked]
    if reason is None:
        reason = NOTHING_TO_QUOTE if composed.status == "abstained" else None
        reason = reason or quoted_answers_reason(eng.encoder, q, composed, sup)
    out.append({"kind": "A" if r["answerable"] else "U", "id": r["id"], "q": q, "score": sup.score,
                "unseen": list(sup.unseen), "uncovered": list(sup.uncovered), "reason": reason,
                "claims": claims, "claim_scores": claim_scores(eng.encoder, q, claims),
                "evidence": [{"path": e.chunk.path, "text": e.chunk.text, "section": list(e.chunk.section)}
                             for e in evidence[:6]]})
Path(outp).write_text(json.dumps({"set": name, "bar": bar, "seconds": time.time() - t0, "rows": out}, indent=0))
print(name, bar, len(out), round(time.time() - t0))
eng.close()
