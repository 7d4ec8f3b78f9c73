"""Before/after table of retrieval-signal runs: reads ``ragcore eval --out`` JSON files and prints
one Markdown row per run (nDCG@10, R@1, R@10, citation precision, answered/abstained, p95 ms).

    python bench/data/signals_table.py LABEL=FILE.json [LABEL=FILE.json ...]
"""

from __future__ import annotations

import json
import sys


def rows(label: str, path: str) -> list[str]:
    d = json.load(open(path, encoding="utf-8"))
    out = []
    for r in d["runs"]:
        m = r["metrics"]
        name = f"{label}: {r['label']}" if r["kind"] == "ragcore" else r["label"]

        def f(k: str) -> str:
            v = m.get(k)
            return "–" if v is None else f"{v:.3f}"

        p95 = (m.get("latency_p95_ms") or {}).get("total")
        out.append(f"| {name} | {f('ndcg_at_10')} | {f('recall_at_1')} | {f('recall_at_10')} | {f('citation_precision')} "
                   f"| {f('answer_rate')} | {f('abstain_rate')} | {'–' if p95 is None else round(p95)} |")
    return out


def main() -> None:
    print("| configuration | nDCG@10 | R@1 | R@10 | cite prec | answered | abstained (U) | p95 ms |")
    print("|---|---|---|---|---|---|---|---|")
    seen: set[str] = set()
    for arg in sys.argv[1:]:
        label, _, path = arg.partition("=")
        for row in rows(label, path):
            if row.split("|")[1] not in seen:  # baselines appear in every run: show them once
                seen.add(row.split("|")[1])
                print(row)


if __name__ == "__main__":
    main()
