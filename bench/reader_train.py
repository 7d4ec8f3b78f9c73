"""Train the extractive reader and check it leave one corpus out (`ragcore bench reader`).

Reads the dumps of ``reader_data.py`` (one per labelled set), labels each candidate unit from the
question's reference answer (``ragcore/eval/answering.py``), fits a logistic regression over the
reader's features (``ragcore/synthesis/extractive/reader.py``) on every set but one, re-composes
the held-out set's answers with it and counts how often the answer quotes an answering unit, then
calibrates the confidence (Platt scaling of the best unit's probability, fitted on the other sets'
held-out outputs) and reports calibration (ECE, a reliability diagram). Finally it fits the model
on all sets and writes ``ragcore/data/reader.json``.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from bench.reader_data import DictEncoder, Record, load_dump
from ragcore.eval.answering import answer_key, answers, quoted
from ragcore.synthesis.extractive.composer import UNSURE_LEAD, ExtractiveComposer
from ragcore.synthesis.extractive.reader import FEATURES, MODEL_PATH, ReaderModel, features
from ragcore.synthesis.llm.packing import evidence_budget, pack_evidence

L2 = 1.0
CONF_BAR = 0.5  # confidence at or above which an answer is called confident
CONF_HIGH = 0.75


@dataclass
class Question:
    set: str
    record: Record
    x: np.ndarray  # candidate features
    y: np.ndarray  # candidate labels (answering or not)
    texts: list[str]  # candidate texts
    ns: list[int]  # candidate evidence numbers
    raws: list[str] = field(default_factory=list)  # candidate source text (chunk text at the unit's offsets)
    today: bool = False  # the shipped answer quotes an answering unit
    extra: dict[str, Any] = field(default_factory=dict)


def prepare(name: str, dump: dict[str, Any]) -> list[Question]:
    enc = DictEncoder(dump["vectors"])
    composer = ExtractiveComposer(enc, reader=None)
    out = []
    for r in dump["records"]:
        if not r.evidence:
            out.append(Question(name, r, np.zeros((0, len(FEATURES))), np.zeros(0), [], []))
            continue
        composer.score_sentences(r.question, r.evidence)
        items = composer.scored
        key = answer_key(r.question, r.reference, [e.chunk.text for e in r.evidence]) if r.answerable else None
        texts = [s.unit.plain for s in items]
        y = np.array([float(key is not None and answers(key, t)) for t in texts])
        q = Question(name, r, features(r.question, items), y, texts, [s.evidence.n for s in items],
                     [s.evidence.chunk.text[s.unit.start : s.unit.end] for s in items])
        q.today = r.status != "abstained" and bool(y.any()) and quoted(r.answer, [t for t, v in zip(texts, y) if v])
        out.append(q)
    return out


# --------------------------------------------------------------------------- the model


def fit(qs: Sequence[Question]) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Logistic regression, L2, each answerable question with a positive weighing the same."""
    rows = [q for q in qs if q.record.answerable and q.y.any() and len(q.y)]
    x = np.concatenate([q.x for q in rows])
    y = np.concatenate([q.y for q in rows])
    w = np.concatenate([np.where(q.y > 0, 0.5 / q.y.sum(), 0.5 / max(1, (q.y == 0).sum())) for q in rows])
    mean, scale = x.mean(0), x.std(0) + 1e-6
    z = (x - mean) / scale
    a = np.c_[z, np.ones(len(z))]
    theta = np.zeros(a.shape[1])
    reg = np.r_[np.full(z.shape[1], L2), 0.0]
    for _ in range(30):  # Newton's method
        p = 1 / (1 + np.exp(-np.clip(a @ theta, -30, 30)))
        g = a.T @ (w * (p - y)) + reg * theta
        h = (a * (w * p * (1 - p))[:, None]).T @ a + np.diag(reg + 1e-9)
        step = np.linalg.solve(h, g)
        theta -= step
        if np.abs(step).max() < 1e-6:
            break
    return mean, scale, theta[:-1], float(theta[-1])


def platt(p_best: np.ndarray, hit: np.ndarray) -> tuple[float, float]:
    """Confidence = sigmoid(a·logit(p) + b), fitted by Newton on (p, hit) pairs."""
    lp = np.log(np.clip(p_best, 1e-6, 1 - 1e-6) / (1 - np.clip(p_best, 1e-6, 1 - 1e-6)))
    a = np.c_[lp, np.ones(len(lp))]
    theta = np.array([1.0, 0.0])
    for _ in range(50):
        p = 1 / (1 + np.exp(-np.clip(a @ theta, -30, 30)))
        g = a.T @ (p - hit) + 1e-3 * theta
        h = (a * (p * (1 - p))[:, None]).T @ a + 1e-3 * np.eye(2)
        step = np.linalg.solve(h, g)
        theta -= step
        if np.abs(step).max() < 1e-8:
            break
    return float(theta[0]), float(theta[1])


def model(params: tuple[np.ndarray, np.ndarray, np.ndarray, float], calib: tuple[float, float] = (1.0, 0.0),
          bar: float = 0.0) -> ReaderModel:
    mean, scale, weights, bias = params
    return ReaderModel(FEATURES, mean, scale, weights, bias, calib, bar, max(bar, CONF_HIGH))


def to_json(m: ReaderModel, meta: dict[str, Any]) -> str:
    return json.dumps({"features": list(m.names), "mean": _r(m.mean), "scale": _r(m.scale), "weights": _r(m.weights),
                       "bias": round(m.bias, 6), "calib": [round(c, 6) for c in m.calib], "bar": m.bar, "high": m.high,
                       "trained": meta}, indent=1) + "\n"


def _r(a: np.ndarray) -> list[float]:
    return [round(float(v), 6) for v in a]


# --------------------------------------------------------------------------- composing with a model


_QUOTE_REASON = "nothing the answer would quote"  # the composer-level abstentions (abstain/answer_fit.py)


def compose_all(qs: Sequence[Question], dumps: dict[str, dict[str, Any]], m: ReaderModel | None,
                fallback: Any = None) -> list[dict[str, Any]]:
    """Each question's answer with model ``m`` (None: the hand-made score): does it quote an
    answering unit, the best unit's probability, the confidence and its level, the time taken.
    An abstention at the bar stays one; the check on what the answer would quote
    (``quoted_answers_reason``) is run again on the new answer, as the engine runs it."""
    from types import SimpleNamespace

    from ragcore.abstain.answer_fit import quoted_answers_reason

    out = []
    encs = {name: DictEncoder(d["vectors"], fallback) for name, d in dumps.items()}
    composers = {name: ExtractiveComposer(enc, reader=m) for name, enc in encs.items()}
    for q in qs:
        r = q.record
        at_bar = r.status == "abstained" and not any(_QUOTE_REASON in a for a in r.actions)
        if at_bar or not r.evidence:
            out.append({"answered": False, "hit": False, "p": None, "conf": None, "level": None, "ms": 0.0})
            continue
        t = time.perf_counter()
        res = composers[q.set].compose(r.question, r.evidence)
        ms = (time.perf_counter() - t) * 1e3
        reason = quoted_answers_reason(encs[q.set], r.question, res, SimpleNamespace(basis="corpus")) if fallback else None
        answered = res.status == "ok" and reason is None if fallback else r.status != "abstained"
        pos = [t for t, v in zip(q.texts, q.y) if v]
        hit = answered and bool(pos) and quoted(res.text, pos)
        out.append({"answered": answered, "hit": hit, "p": res.best_probability, "conf": res.confidence,
                    "level": res.level, "ms": ms, "text": res.text})
    return out


def packed_holds(q: Question, diversify: bool) -> tuple[bool, bool]:
    """(the top-20 evidence holds an answering passage, the packed context still holds it)."""
    r = q.record
    top20 = {e.n for e in r.evidence[:20]}
    pos = [(n, raw) for n, raw, v in zip(q.ns, q.raws, q.y) if v and n in top20]
    if not pos:
        return False, False
    budget = evidence_budget(context_window=8192, max_output_tokens=512, question=r.question)
    packed = pack_evidence(r.evidence, budget_tokens=budget, diversify=diversify)
    texts = {e.n: e.chunk.text for e in packed.evidence}
    return True, any(n in texts and raw[:100] in texts[n] for n, raw in pos)


# --------------------------------------------------------------------------- leave one corpus out


def ece(conf: np.ndarray, hit: np.ndarray, bins: int = 10) -> float:
    edges = np.linspace(0, 1, bins + 1)
    idx = np.clip(np.digitize(conf, edges) - 1, 0, bins - 1)
    return float(sum(abs(conf[idx == b].mean() - hit[idx == b].mean()) * (idx == b).sum()
                     for b in range(bins) if (idx == b).any()) / max(1, len(conf)))


def leave_one_out(data: dict[str, list[Question]], dumps: dict[str, dict[str, Any]], enc: Any = None) -> dict[str, Any]:
    """Per held-out set: the model fitted on the others, its answers, then its calibration."""
    names = sorted(data)
    raw: dict[str, list[dict[str, Any]]] = {}
    params = {}
    for s in names:
        params[s] = fit([q for t in names if t != s for q in data[t]])
        raw[s] = compose_all(data[s], dumps, model(params[s]), enc)  # bar 0: nobody unsure yet
    out: dict[str, Any] = {}
    for s in names:
        pairs = [(o["p"], o["hit"]) for t in names if t != s for o in raw[t] if o["answered"]]
        calib = platt(np.array([p for p, _ in pairs]), np.array([float(h) for _, h in pairs]))
        out[s] = compose_all(data[s], dumps, model(params[s], calib, CONF_BAR), enc)
    return out


def set_row(name: str, qs: Sequence[Question], after: list[dict[str, Any]], today: list[dict[str, Any]]) -> dict[str, Any]:
    ans = [(q, a, t) for q, a, t in zip(qs, after, today) if q.record.answerable]
    n = len(ans)
    ev = sum(bool(q.y.any()) for q, _, _ in ans)
    top5 = sum(any(v and k <= 5 for k, v in zip(q.ns, q.y)) for q, _, _ in ans)
    packs = [packed_holds(q, d) for d in (False, True) for q, _, _ in ans]
    top20 = sum(a for a, _ in packs[:n])
    answered = [(q, a) for q, a in zip(qs, after) if a["answered"]]
    conf = [(a["conf"], a["hit"]) for _, a in answered if a["conf"] is not None]
    c = np.array([x for x, _ in conf]) if conf else np.zeros(0)
    h = np.array([float(y) for _, y in conf]) if conf else np.zeros(0)
    confident = c >= CONF_BAR
    unabs = [q for q in qs if not q.record.answerable]
    return {
        "set": name, "answerable": n, "in_evidence": ev, "in_top5": top5,
        "in_answer_today": sum(t["hit"] for _, _, t in ans), "in_answer_reader": sum(a["hit"] for _, a, _ in ans),
        "top20": top20, "packed_before": sum(k for _, k in packs[:n]), "packed_after": sum(k for _, k in packs[n:]),
        "answered": len(answered), "confident": int(confident.sum()),
        "confident_hold": int((confident & (h > 0)).sum()), "miss": int((h == 0).sum()),
        "miss_confident": int((confident & (h == 0)).sum()), "ece": round(ece(c, h), 3) if len(c) else None,
        "unanswerable": len(unabs), "abstained_unanswerable": sum(q.record.status == "abstained" for q in unabs),
        "abstained_unanswerable_after": sum(not a["answered"] for q, a in zip(qs, after) if not q.record.answerable),
        "answered_answerable_today": sum(q.record.status != "abstained" for q, _, _ in ans),
        "answered_answerable_after": sum(a["answered"] for _, a, _ in ans),
        "reader_ms_p50": round(float(np.median([a["ms"] for a in after if a["answered"]] or [0])), 1),
        "_conf": c.tolist(), "_hit": h.tolist(),
    }


# --------------------------------------------------------------------------- the table


def _pct(k: int, n: int) -> str:
    return f"{k}/{n} ({100 * k / n:.0f}%)" if n else "—"


def table(rows: Sequence[dict[str, Any]]) -> str:
    head = ("| set | answerable | in evidence | in first 5 | in answer today | in answer, reader (LOO) | ×today "
            "| top-20 holds | packed holds, before → after | confident: hold answer | misses called confident | ECE "
            "| unanswerable abstained, today → reader |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        n = r["answerable"]
        ratio = r["in_answer_reader"] / r["in_answer_today"] if r["in_answer_today"] else float("inf")
        lines.append(
            f"| {r['set']} | {n} | {_pct(r['in_evidence'], n)} | {_pct(r['in_top5'], n)} | {_pct(r['in_answer_today'], n)} "
            f"| {_pct(r['in_answer_reader'], n)} | {ratio:.2f} | {r['top20']} | {r['packed_before']} → {r['packed_after']} "
            f"| {_pct(r['confident_hold'], r['confident'])} | {_pct(r['miss_confident'], r['miss'])} | {r['ece']} "
            f"| {r['abstained_unanswerable']} → {r['abstained_unanswerable_after']} of {r['unanswerable']} |")
    return "\n".join(lines)


def reliability_png(rows: Sequence[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    conf = np.concatenate([np.array(r["_conf"]) for r in rows])
    hit = np.concatenate([np.array(r["_hit"]) for r in rows])
    edges = np.linspace(0, 1, 11)
    idx = np.clip(np.digitize(conf, edges) - 1, 0, 9)
    xs = [conf[idx == b].mean() for b in range(10) if (idx == b).any()]
    ys = [hit[idx == b].mean() for b in range(10) if (idx == b).any()]
    ns = [int((idx == b).sum()) for b in range(10) if (idx == b).any()]
    fig, ax = plt.subplots(figsize=(4.5, 4.5), dpi=100)
    ax.plot([0, 1], [0, 1], ls="--", c="grey", lw=1)
    ax.plot(xs, ys, "o-", c="tab:blue")
    for x, y, n in zip(xs, ys, ns):
        ax.annotate(str(n), (x, y), textcoords="offset points", xytext=(4, -10), fontsize=7)
    ax.set_xlabel("confidence (leave one corpus out)")
    ax.set_ylabel("share of answers that hold the answer")
    ax.set_title(f"Reader confidence, all sets (ECE {ece(conf, hit):.3f})", fontsize=9)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(sets: Sequence[str], cache: Path, results: Path, model_out: Path | None = MODEL_PATH) -> str:
    from ragcore.encoders.minilm import OnnxMiniLM

    enc = OnnxMiniLM()  # for the few texts a dump lacks (the abstention check's claims)
    dumps = {s: load_dump(s, cache) for s in sets}
    data = {s: prepare(s, dumps[s]) for s in sets}
    after = leave_one_out(data, dumps, enc)
    rows = [set_row(s, data[s], after[s], compose_all(data[s], dumps, None, enc)) for s in sets]
    report = table(rows)
    results.mkdir(parents=True, exist_ok=True)
    reliability_png(rows, results / "reader-reliability.png")
    (results / "reader.json").write_text(json.dumps([{k: v for k, v in r.items() if not k.startswith("_")} for r in rows], indent=1) + "\n")
    if model_out is not None:
        allq = [q for s in sets for q in data[s]]
        params = fit(allq)
        pairs = [(o["p"], o["hit"]) for s in sets for o in after[s] if o["answered"] and o["p"] is not None]
        calib = platt(np.array([p for p, _ in pairs]), np.array([float(h) for _, h in pairs]))
        m = model(params, calib, CONF_BAR)
        model_out.write_text(to_json(m, {"sets": list(sets), "questions": sum(q.record.answerable for q in allq)}))
    return report


SETS = ("django", "git", "scrapy", "sqlalchemy", "pdfqa", "guide")


def add_reader_parser(bsub: Any) -> None:
    from bench.reader_data import DEFAULT_CACHE

    br = bsub.add_parser("reader", help="retrain the extractive reader, leave one corpus out, and print its table")
    br.add_argument("sets", nargs="*", default=list(SETS), help="sets dumped by `python -m bench.reader_data` (default: all)")
    br.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="where the dumps are")
    br.add_argument("--results", type=Path, default=Path(__file__).resolve().parent / "results")
    br.add_argument("--no-model", action="store_true", help="do not write ragcore/data/reader.json")
    br.set_defaults(func=_cmd_reader)


def _cmd_reader(args: Any) -> int:
    sets = [s for s in args.sets if (args.cache / f"{s}.pkl").is_file()]
    missing = sorted(set(args.sets) - set(sets))
    if missing:
        print(f"not dumped (python -m bench.reader_data {' '.join(missing)}): {', '.join(missing)}")
    if len(sets) < 2:
        print("leave one corpus out needs at least two dumped sets")
        return 1
    print(run(sets, args.cache, args.results, None if args.no_model else MODEL_PATH))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_reader_parser(ap.add_subparsers(dest="cmd", required=True))
    args = ap.parse_args(["reader", *(argv if argv is not None else __import__("sys").argv[1:])])
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
