"""Which signals could calibrate the answer's confidence, leave one corpus out (`python -m bench.reader_calib`).

For every answered question of the six labelled sets (the composer as shipped: the hand-made
score, ``rank: false``), collects candidate per-question signals: the three the shipped confidence
reads (``reader.CONF_FEATURES``), the reader's features of the best unit (``reader.FEATURES``: its
rare-term share, cosines, BM25, answer-type matches such as a how-to question and a unit that says
what to do), the question's form, the evidence's shape and the support against the bar. Then, for
every subset of up to three signals (and of four from a shorter list), fits the confidence as
``reader_train.platt`` does on five sets, chooses the bar there (``choose_bar``) and scores the
sixth: of confident answers ≥ 80% hold the answer, of misses ≤ 25% called confident, ECE ≤ 0.10
(10 bins, as bench/results/reader.md). A subset "is no worse" when no set loses a target it meets
with the shipped signals and no set's ECE rises by more than 0.005. Isotonic regression over each
subset's logistic output (fitted on the five sets) is tried too.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Sequence

import numpy as np

from bench.reader_data import DictEncoder, load_dump
from bench.reader_train import _QUOTE_REASON, SETS, choose_bar, ece, platt, prepare
from ragcore.eval.answering import quoted
from ragcore.synthesis.extractive.composer import ExtractiveComposer
from ragcore.synthesis.extractive.reader import FEATURES, confidence_features, features
from ragcore.synthesis.extractive.rules import intent_of

SHIPPED = ("sig0", "sig1", "sig2")
_BEST = ("rare", "lex", "cos", "chunk_cos", "bm25", "heading", "score", "what_defines", "howto_do", "yesno_polar",
         "code", "list", "length", "pointer", "doc_share")
CANDIDATES = (*SHIPPED, *(f"best.{f}" for f in _BEST), "kind_pdf", "top_dense", "support", "support_margin", "howto",
              "what", "yesno", "why", "how", "qlen", "pages_ev", "top1_page_share", "best_chunk_rank", "n_picked", "ans_len", "n_units")
FOUR = (*SHIPPED, "best.rare", "best.what_defines", "best.howto_do", "what", "howto", "yesno", "support_margin",
        "top1_page_share", "best.list", "best.code", "best.pointer")
_YESNO = re.compile(r"\s*(is|are|can|could|do|does|did|will|would|should|may|must|has|have)\b", re.I)


def collect(enc0: Any) -> list[dict[str, Any]]:
    """One row per answered question: its set, whether the answer holds the answer, its signals."""
    from ragcore.abstain.answer_fit import quoted_answers_reason

    rows = []
    for s in SETS:
        dump = load_dump(s)
        enc = DictEncoder(dump["vectors"], enc0)
        c = ExtractiveComposer(enc, reader=None)
        for q in prepare(s, dump, enc0):
            r = q.record
            if (r.status == "abstained" and not any(_QUOTE_REASON in a for a in r.actions)) or not r.evidence:
                continue
            res = c.compose(r.question, r.evidence)
            if res.status != "ok" or quoted_answers_reason(enc, r.question, res, SimpleNamespace(basis="corpus")):
                continue
            pos = [t for t, v in zip(q.texts, q.y) if v]
            x = features(r.question, c.scored)
            b = int(np.argmax([u.score for u in c.scored]))
            rows.append({"set": s, "hit": bool(pos) and quoted(res.text, pos),
                         **{f"sig{i}": v for i, v in enumerate(confidence_features(r.question, c.scored, r.evidence))},
                         **{f"best.{f}": float(v) for f, v in zip(FEATURES, x[b])}, **_shape(r, c, res, b)})
    return rows


def _shape(r: Any, c: ExtractiveComposer, res: Any, b: int) -> dict[str, float]:
    ev, it = r.evidence, intent_of(r.question)
    return {"kind_pdf": float(ev[0].chunk.kind == "pdf"), "top_dense": float(ev[0].dense_score or 0.0),
            "support": float(r.support or 0.0), "support_margin": float((r.support or 0.0) - (r.bar or 0.0)),
            "howto": float(it.howto), "what": float(it.what), "yesno": float(bool(_YESNO.match(r.question))),
            "why": float(r.question.lower().lstrip().startswith("why")), "how": float(r.question.lower().lstrip().startswith("how")),
            "qlen": float(len(r.question.split())), "pages_ev": float(len({e.chunk.path for e in ev})),
            "top1_page_share": sum(e.chunk.path == ev[0].chunk.path for e in ev) / len(ev),
            "best_chunk_rank": float(c.scored[b].evidence.n), "n_picked": float(len(res.picked)),
            "ans_len": float(len(res.text.split())), "n_units": float(len(c.scored))}


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-np.clip(z, -30, 30)))


def isotonic(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pool-adjacent-violators: the increasing step function of x closest to y (knots, values)."""
    order = np.argsort(x)
    xs, vals, wts = list(x[order]), list(y[order].astype(float)), [1.0] * len(x)
    blocks: list[list[float]] = []  # [value, weight, last x]
    for xi, v, w in zip(xs, vals, wts):
        blocks.append([v, w, xi])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            v2, w2, x2 = blocks.pop()
            v1, w1, _ = blocks.pop()
            blocks.append([(v1 * w1 + v2 * w2) / (w1 + w2), w1 + w2, x2])
    return np.array([bl[2] for bl in blocks]), np.array([bl[0] for bl in blocks])


def loo(rows: list[dict[str, Any]], names: Sequence[str], iso: bool = False,
        sets: Sequence[str] = SETS, held: Sequence[str] | None = None) -> dict[str, dict[str, Any]]:
    """Per held-out set (``held``, default each of ``sets``): confidence fitted on the others of
    ``sets``, the bar chosen there, the targets' counts."""
    x = {s: np.array([[r[n] for n in names] for r in rows if r["set"] == s]) for s in SETS}
    h = {s: np.array([float(r["hit"]) for r in rows if r["set"] == s]) for s in SETS}
    out = {}
    for s in held or sets:
        xt = np.concatenate([x[t] for t in sets if t != s])
        ht = np.concatenate([h[t] for t in sets if t != s])
        cal = platt(xt, ht)
        w, b = np.array(cal[:-1]), cal[-1]
        conf_t, conf = _sigmoid(xt @ w + b), _sigmoid(x[s] @ w + b)
        if iso:
            knots, vals = isotonic(conf_t, ht)
            conf_t, conf = (vals[np.clip(np.searchsorted(knots, c), 0, len(vals) - 1)] for c in (conf_t, conf))
        bar = choose_bar(conf_t, ht)
        sure, hit = conf >= bar, h[s]
        out[s] = {"ece": round(ece(conf, hit), 3), "confident": int(sure.sum()), "confident_hold": int((sure & (hit > 0)).sum()),
                  "miss": int((hit == 0).sum()), "miss_confident": int((sure & (hit == 0)).sum()), "bar": bar}
    return out


def targets(m: dict[str, Any]) -> tuple[bool, bool, bool]:
    """(ECE ≤ 0.10, misses called confident ≤ 25%, confident answers holding it ≥ 80% or none confident)."""
    return (m["ece"] <= 0.10, m["miss_confident"] <= 0.25 * max(1, m["miss"]),
            m["confident"] == 0 or m["confident_hold"] >= 0.8 * m["confident"])


def search(rows: list[dict[str, Any]], sets: Sequence[str] = SETS, combos: Sequence[Sequence[str]] | None = None) -> list[dict[str, Any]]:
    """Every subset scored leave one set of ``sets`` out, the shipped signals first, the rest best first."""
    base = loo(rows, SHIPPED, sets=sets)
    tb = {s: targets(m) for s, m in base.items()}
    if combos is None:
        combos = [c for k in (1, 2, 3) for c in itertools.combinations(CANDIDATES, k)] + list(itertools.combinations(FOUR, 4))
    found = []
    for combo in combos:
        for iso in (False, True):
            res = loo(rows, combo, iso, sets)
            t = {s: targets(m) for s, m in res.items()}
            worse = any(a and not b for s in sets for a, b in zip(tb[s], t[s])) or any(res[s]["ece"] > base[s]["ece"] + 0.005 for s in sets)
            found.append({"signals": list(combo), "isotonic": iso, "no_worse": not worse, "met": sum(map(sum, t.values())),
                          "mean_ece": round(float(np.mean([m["ece"] for m in res.values()])), 3), "sets": res})
    found.sort(key=lambda f: (f["no_worse"], f["met"], -f["mean_ece"]), reverse=True)
    return [{"signals": list(SHIPPED), "isotonic": False, "shipped": True, "met": sum(map(sum, tb.values())),
             "mean_ece": round(float(np.mean([m["ece"] for m in base.values()])), 3), "sets": base}, *found]


def nested(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The search itself left out: for each set, the subset the search picks on the other five
    (subsets of ``FOUR``, up to four), fitted on those five and scored on the set. What the search's
    winner on all six is worth once the choice of signals is not made on the set it is scored on."""
    combos = [c for k in (1, 2, 3, 4) for c in itertools.combinations(FOUR, k)]
    out = {}
    for s in SETS:
        rest = [t for t in SETS if t != s]
        pick = search([r for r in rows if r["set"] != s], rest, combos)[1]
        out[s] = loo(rows, pick["signals"], pick["isotonic"], SETS, [s])[s] | {"signals": pick["signals"], "isotonic": pick["isotonic"]}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    from ragcore.encoders.minilm import OnnxMiniLM

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("/tmp/reader_calib.json"))
    ap.add_argument("--rows", type=Path, default=None, help="signals collected before (skips composing)")
    ap.add_argument("--nested", action="store_true", help="also score the search itself left out (nested)")
    args = ap.parse_args(argv)
    rows = json.loads(args.rows.read_text()) if args.rows else collect(OnnxMiniLM())
    args.out.with_suffix(".rows.json").write_text(json.dumps(rows), encoding="utf-8")
    if args.nested:
        for s, m in nested(rows).items():
            print("nested", s, json.dumps(m))
    found = search(rows)
    args.out.write_text(json.dumps(found[:300], indent=1), encoding="utf-8")
    better = [f for f in found[1:] if f["no_worse"] and f["met"] > found[0]["met"]]
    print(f"shipped signals: {found[0]['met']} of 18 per-set targets met, mean ECE {found[0]['mean_ece']}")
    print(f"subsets tried: {len(found) - 1}; no worse on any set and meeting more targets: {len(better)}")
    for f in [*better[:5], *sorted(found[1:], key=lambda f: f["mean_ece"])[:5]]:
        print(json.dumps({k: f[k] for k in ("signals", "isotonic", "no_worse", "met", "mean_ece")}),
              {s: (m["ece"], f"{m['confident_hold']}/{m['confident']}", f"{m['miss_confident']}/{m['miss']}") for s, m in f["sets"].items()})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
