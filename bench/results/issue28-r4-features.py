"""Adds, to the before-dumps of issue28-r4-dump.py, what the rejected signals of issue28-r4.md read from each
collection: the IDF of the question's terms, its plain words no chunk holds in any form (vocabulary words too),
and its adjacent content-word pairs with whether a chunk holds them together. Writes DUMP_DIR/features.json.
Usage: python issue28-r4-features.py DUMP_DIR NAME=RAGCORE_DATA_DIR ..."""
import json
import re
import sys
from pathlib import Path

from ragcore.abstain.answer_fit import GENERIC, question_terms
from ragcore.abstain.answerability import unseen_words
from ragcore.abstain.coverage import phrase_covered
from ragcore.encoders.sparse import STOPWORDS, tokenize
from ragcore.engine.engine import Engine
from ragcore.settings.config import RagcoreSettings


def pairs(q):
    words = re.findall(r"[A-Za-z][\w'’-]*|[^\sA-Za-z]", q)
    ok = lambda w: w[0].isalpha() and len(w) >= 3 and w.lower() not in STOPWORDS | GENERIC and tokenize(w)
    return [f"{a} {b}" for a, b in zip(words, words[1:]) if ok(a) and ok(b)]


root = Path(sys.argv[1])
out = {}
for name, data_dir in (a.split("=", 1) for a in sys.argv[2:]):
    eng = Engine(RagcoreSettings(data_dir=Path(data_dir)))
    meta = eng.store.read_meta(name)["auto_calibration"]
    idx = eng.retriever.index(name)
    d = json.load(open(root / f"dump-{name}.json"))
    for r in d["rows"]:
        r["idf"] = {t: idx.idf(t) for t in question_terms(r["q"])}
        r["absent"] = list(unseen_words(r["q"], has_term=idx.has_any_term, is_common=lambda w: False))
        r["pairs"] = {p: phrase_covered(p, rows_with=idx.rows_with_any, text_of=lambda i: idx.chunks[int(i)].text)
                      for p in pairs(r["q"])}
        del r["evidence"]
    d["means"] = {"answerable": meta["answerable_mean"], "offtopic": meta["offtopic_mean"]}
    out[name] = d
    eng.close()
(root / "features.json").write_text(json.dumps(out))
