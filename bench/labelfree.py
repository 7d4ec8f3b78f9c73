"""Measure the label-free abstain bar (ragcore/abstain/autocalibrate.py) against a labelled QA set.

For one collection (a copy: the labelled calibration is removed from it), this scores every
question of the QA set once, then for several sampling seeds generates the calibration
questions, sets the bar as ``auto_calibrate`` does, and reports the bar, the expected rates
on the generated / off-topic questions and the real answered / abstained rates on the QA set
(answered = support >= bar, as the engine decides). Support scores are cached by question,
so a seed costs only its new generated questions.

    nice -n 10 .venv/bin/python bench/labelfree.py --name django --data-dir /tmp/a5-django \\
        --collection django --qa /work/shared/data/django-docs-qa --out bench/results/labelfree-django.json
    nice -n 10 .venv/bin/python bench/labelfree.py --name git --data-dir /tmp/a5-git \\
        --collection git --qa /work/data/git-docs-qa --out bench/results/labelfree-git.json
    nice -n 10 .venv/bin/python bench/labelfree.py --name guide --data-dir /tmp/a5-guide \\
        --collection guide --qa bench/data/guide-qa --ingest docs --out bench/results/labelfree-guide.json
    .venv/bin/python bench/labelfree.py --report bench/results/labelfree-*.json > bench/results/labelfree.md

The JSON keeps every score (QA, generated, off-topic), so another bar rule can be tried
offline on the same numbers (``--report`` recomputes the bars with the current ``choose_bar``).
Never point ``--data-dir`` at a shared collection: the script writes its metadata.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragcore.abstain import autocalibrate as ac
from ragcore.abstain.answerability import Support
from ragcore.settings.config import RagcoreSettings
from ragcore.encoders.minilm import OnnxMiniLM
from ragcore.eval.dataset import load_dataset
from ragcore.engine.engine import Engine
from ragcore.retrieval import HybridSearch
from ragcore.storage.store import Store

N_SEEDS = 8  # sampling seeds ac.SEED, ac.SEED + 1, …


@dataclass
class CachedHost:
    """An Engine whose support scores are remembered by question (they do not depend on the seed)."""

    engine: Engine
    cache: dict[str, float]

    @property
    def store(self) -> Store:  # the CalibrationHost protocol's attributes
        return self.engine.store

    @property
    def encoder(self) -> OnnxMiniLM:
        return self.engine.encoder

    @property
    def hybrid_search(self) -> HybridSearch:
        return self.engine.hybrid_search

    def support(self, question: str, settings: RagcoreSettings | None = None, collection: str | None = None) -> Support:
        if question not in self.cache:
            self.cache[question] = self.engine.support(question, settings, collection).score
        return Support(self.cache[question], "corpus")


def measure(
    name: str, data_dir: Path, collection: str, qa: Path, ingest: Path | None, seeds: Sequence[int], n: int,
) -> dict[str, Any]:
    settings = RagcoreSettings(data_dir=data_dir, collection=collection)
    engine = Engine(settings)
    try:
        if ingest is not None and engine.store.count(collection) == 0:
            engine.ingest([ingest], collection, calibrate=False)
        engine.store.write_meta(collection, {"calibration": None})  # the labelled bar is what we do without
        host = CachedHost(engine, {})
        ds = load_dataset(qa)
        t0 = time.perf_counter()
        questions = [{"id": q.id, "answerable": q.answerable,
                      "score": round(host.support(q.question, settings, collection).score, 5)} for q in ds.questions]
        runs = []
        for seed in seeds:
            t1 = time.perf_counter()
            sc = ac.calibration_scores(host, collection, settings, seed=seed, n=n)
            runs.append({
                "seed": seed, "seconds": round(time.perf_counter() - t1, 2),
                "generated": [{"q": g.question, "kind": g.kind, "score": round(s, 5)}
                              for g, s in zip(sc.generated, sc.answerable)],
                "offtopic": [round(s, 5) for s in sc.offtopic],
            })
            print(f"{name} seed {seed}: {summarise_run(runs[-1], questions, ac.BAR_POSITION)}", file=sys.stderr)
        return {"name": name, "collection": collection, "qa": str(qa), "dataset": ds.name, "n": n,
                "position": ac.BAR_POSITION,
                "corpus_version": engine.store.read_meta(collection).get("corpus_version"),
                "seconds": round(time.perf_counter() - t0, 1), "questions": questions, "runs": runs}
    finally:
        engine.close()


def summarise_run(run: dict[str, Any], questions: Sequence[dict[str, Any]], position: float) -> dict[str, Any]:
    """The bar ``choose_bar`` sets on this run's scores at ``position`` and its rates."""
    a = [g["score"] for g in run["generated"]]
    d = ac.choose_bar(a, run["offtopic"], position)
    if d.bar is None:
        return {"bar": None, "note": d.note}
    ans = [q["score"] for q in questions if q["answerable"]]
    una = [q["score"] for q in questions if not q["answerable"]]
    return {
        "bar": d.bar,
        "expected_answer": sum(x >= d.bar for x in a) / len(a),
        "expected_abstain": sum(x < d.bar for x in d.kept_offtopic) / len(d.kept_offtopic),
        "answered": sum(x >= d.bar for x in ans) / len(ans),
        "abstained": sum(x < d.bar for x in una) / len(una),
        "n_generated": len(a), "n_offtopic_kept": len(d.kept_offtopic),
    }


def _mmm(xs: Sequence[float], pct: bool = True) -> str:
    f = (lambda x: f"{100 * x:.1f}") if pct else (lambda x: f"{x:.4f}")
    return f"{f(min(xs))} / {f(statistics.median(xs))} / {f(max(xs))}"


def report(results: Sequence[dict[str, Any]], position: float | None = None) -> str:
    intro = (
        f"Bar rule: `choose_bar` at the position each file was measured with; {len(results[0]['runs'])} sampling "
        "seeds per corpus; values are min / median / max over the seeds. Answered = share of the QA set's "
        "answerable questions with support >= bar; abstained = share of its unanswerable ones below it. "
        "Target: both >= 80 %."
    )
    header = (
        "| corpus | generated questions / position | QA answerable / unanswerable | bar | expected answer % "
        "(generated) | expected abstain % (off-topic) | answered % | abstained % | seeds meeting 80/80 |"
    )
    lines = ["# Label-free abstain bar against labelled QA sets", "", intro, "", header, "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        pos = position if position is not None else r.get("position", ac.BAR_POSITION)
        s = [summarise_run(run, r["questions"], pos) for run in r["runs"]]
        rule = f"{r.get('n', len(r['runs'][0]['generated']))} / {pos}"
        ok = [x for x in s if x["bar"] is not None]
        n_a = sum(q["answerable"] for q in r["questions"])
        if not ok:
            lines.append(f"| {r['name']} | {rule} | {n_a} / {len(r['questions']) - n_a} | no bar | | | | | 0/{len(s)} |")
            continue
        meet = sum(x["answered"] >= 0.8 and x["abstained"] >= 0.8 for x in ok)
        lines.append(
            f"| {r['name']} | {rule} | {n_a} / {len(r['questions']) - n_a} | {_mmm([x['bar'] for x in ok], False)} "
            f"| {_mmm([x['expected_answer'] for x in ok])} | {_mmm([x['expected_abstain'] for x in ok])} "
            f"| {_mmm([x['answered'] for x in ok])} | {_mmm([x['abstained'] for x in ok])} | {meet}/{len(s)} |"
        )
    lines += [
        "",
        ("Positions (`BAR_POSITION`) at which every seed meets 80/80, with these files' scores "
         "(the generated-question count as measured):"),
        "", "| corpus | positions meeting 80/80 for every seed |", "|---|---|",
    ]
    lines += [f"| {r['name']} | {feasible_positions(r)} |" for r in results]
    return "\n".join(lines) + "\n"


def feasible_positions(r: dict[str, Any], step: float = 0.001) -> str:
    ok = []
    for i in range(int(1 / step) + 1):
        s = [summarise_run(run, r["questions"], i * step) for run in r["runs"]]
        if all(x["bar"] is not None and x["answered"] >= 0.8 and x["abstained"] >= 0.8 for x in s):
            ok.append(i * step)
    # the set is an interval: a higher bar answers less and abstains more
    return f"{min(ok):.3f}-{max(ok):.3f}" if ok else "none"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--report", nargs="+", type=Path, help="summarise these JSON results (Markdown to stdout)")
    p.add_argument("--name")
    p.add_argument("--data-dir", type=Path)
    p.add_argument("--collection")
    p.add_argument("--qa", type=Path)
    p.add_argument("--ingest", type=Path, help="ingest this folder first if the collection is empty")
    p.add_argument("--seeds", type=int, default=N_SEEDS, help="how many sampling seeds, from the default one up")
    p.add_argument("--position", type=float, help="with --report: the bar position to apply instead of the measured one")
    p.add_argument("--n", type=int, default=ac.N_ANSWERABLE, help="generated questions per seed")
    p.add_argument("--out", type=Path)
    a = p.parse_args(argv)
    if a.report:
        print(report([json.loads(f.read_text()) for f in a.report], a.position), end="")
        return 0
    if not (a.name and a.data_dir and a.collection and a.qa and a.out):
        p.error("--name, --data-dir, --collection, --qa and --out are needed to measure")
    seeds = tuple(ac.SEED + i for i in range(a.seeds))
    res = measure(a.name, a.data_dir, a.collection, a.qa, a.ingest, seeds, a.n)
    a.out.write_text(json.dumps(res, separators=(",", ":")) + "\n")  # every score: ~0.3 MB
    print(report([res]), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
