"""The composer's page and seat rules, question by question on every labelled set (`python -m bench.reader_rules`).

Re-composes each set's dumped evidence (``reader_data.py``) with the composer as shipped and with
each variant of a rule (``answer_second_page``, ``SEAT_MARGIN``, ``answer_docs``), and counts per
set: answerable questions whose answer quotes an answering unit (``ragcore/eval/answering.py``),
citation precision three ways (cited units in a chunk that holds an answering unit; on a page that
holds one; in a document the reference links), answers over the sentence limit, and unanswerable
questions abstained (the bar's abstentions kept, the quoted-answer check re-run on the new answer,
as ``reader_train.compose_all`` does). No learning: nothing is fitted, so no set is left out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Sequence

from bench.reader_data import DEFAULT_CACHE, DictEncoder, _lines, load_dump, set_dirs
from bench.reader_train import _QUOTE_REASON, Question, prepare
from ragcore.eval.answering import quoted
from ragcore.synthesis.extractive import composer as composer_module
from ragcore.synthesis.extractive.composer import ExtractiveComposer

SETS = ("django", "git", "scrapy", "sqlalchemy", "pdfqa", "guide")


@dataclass(frozen=True)
class Variant:
    name: str
    second_page: float = 0.0
    seat_margin: float = composer_module.SEAT_MARGIN
    answer_docs: int = 1


VARIANTS = (
    Variant("shipped"),
    Variant("second page >= 0.8", second_page=0.8),
    Variant("second page >= 0.85", second_page=0.85),
    Variant("second page >= 0.9", second_page=0.9),
    Variant("second page >= 0.95", second_page=0.95),
    Variant("answer_docs 2", answer_docs=2),
    Variant("seat margin 0.15", seat_margin=0.15),
    Variant("seat margin 0.1", seat_margin=0.1),
    Variant("seat margin 0.05", seat_margin=0.05),
    Variant("seat margin 0.0", seat_margin=0.0),
)


def _relevant(name: str) -> dict[str, tuple[str, ...]]:
    folder = set_dirs()[name]
    return {r["id"]: tuple(r.get("relevant_docs", ())) for r in _lines(folder / "questions.jsonl")}


def _on(path: str, docs: Sequence[str]) -> bool:
    return any(path == d or path.endswith("/" + d) or d.endswith("/" + path) for d in docs)


def one(q: Question, c: ExtractiveComposer, enc: Any, relevant: Sequence[str]) -> dict[str, Any]:
    """One question's answer under composer ``c``: answered, quotes an answering unit, its citations."""
    from ragcore.abstain.answer_fit import quoted_answers_reason

    r = q.record
    if (r.status == "abstained" and not any(_QUOTE_REASON in a for a in r.actions)) or not r.evidence:
        return {"id": r.id, "answered": False}
    res = c.compose(r.question, r.evidence)
    answered = res.status == "ok" and quoted_answers_reason(enc, r.question, res, SimpleNamespace(basis="corpus")) is None
    pos = [t for t, v in zip(q.texts, q.y) if v]
    holding = {n for n, v in zip(q.ns, q.y) if v}
    path = {e.n: e.chunk.path for e in r.evidence}
    pages = {path[n] for n in holding}
    cited = [p.n for p in res.picked]
    return {"id": r.id, "answered": answered, "hit": answered and bool(pos) and quoted(res.text, pos),
            "cited": len(cited) if answered else 0,
            "cite_chunk": sum(n in holding for n in cited) if answered else 0,
            "cite_page": sum(path[n] in pages for n in cited) if answered else 0,
            "cite_ref": sum(_on(path[n], relevant) for n in cited) if answered and relevant else 0,
            "ref_known": bool(relevant), "pages": len({path[n] for n in cited}),
            "markers": len(composer_module.markers_in(res.text)) if answered else 0}


def run_set(name: str, variants: Sequence[Variant], enc_fallback: Any, cache: Path = DEFAULT_CACHE) -> dict[str, list[dict[str, Any]]]:
    dump = load_dump(name, cache)
    qs = prepare(name, dump, enc_fallback)
    enc = DictEncoder(dump["vectors"], enc_fallback)
    rel = _relevant(name)
    out = {}
    for v in variants:
        composer_module.SEAT_MARGIN = v.seat_margin  # held_back reads it at each call
        c = ExtractiveComposer(enc, reader=None, max_docs=v.answer_docs, second_page=v.second_page)
        out[v.name] = [{**one(q, c, enc, rel.get(q.record.id, ())), "answerable": q.record.answerable,
                        "in_evidence": bool(q.y.any())} for q in qs]
    composer_module.SEAT_MARGIN = VARIANTS[0].seat_margin
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    ans = [r for r in rows if r["answerable"]]
    got = [r for r in ans if r["answered"]]
    cited = sum(r["cited"] for r in got)
    ref = [r for r in got if r["ref_known"]]
    return {"hit": sum(r.get("hit", False) for r in ans), "answerable": len(ans),
            "cite_chunk": sum(r["cite_chunk"] for r in got) / cited if cited else None,
            "cite_page": sum(r["cite_page"] for r in got) / cited if cited else None,
            "cite_ref": sum(r["cite_ref"] for r in ref) / max(1, sum(r["cited"] for r in ref)) if ref else None,
            "two_pages": sum(r["pages"] > 1 for r in got), "answered": len(got),
            "over_limit": sum(r["markers"] > 4 for r in got),
            "abstained_unanswerable": sum(not r["answered"] for r in rows if not r["answerable"]),
            "unanswerable": sum(not r["answerable"] for r in rows)}


def table(allrows: dict[str, dict[str, list[dict[str, Any]]]]) -> str:
    """One row per variant: per set, answers quoting an answering unit; citation precision (chunk /
    page / reference page, %); answers quoting two pages; unanswerable questions abstained."""
    sets = list(allrows)
    head = "| rule | " + " | ".join(sets) + " | sum |"
    lines = [head, "|" + "---|" * (len(sets) + 2)]
    for v in VARIANTS:
        cells, total = [], 0
        for s in sets:
            m = summary(allrows[s][v.name])
            total += m["hit"]
            pct = "/".join("—" if m[k] is None else f"{100 * m[k]:.0f}" for k in ("cite_chunk", "cite_page", "cite_ref"))
            cells.append(f"{m['hit']}; {pct}; {m['two_pages']}; {m['abstained_unanswerable']}/{m['unanswerable']}"
                         + (f"; **{m['over_limit']} over 4**" if m["over_limit"] else ""))
        lines.append(f"| {v.name} | " + " | ".join(cells) + f" | {total} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    import argparse

    from ragcore.encoders.minilm import OnnxMiniLM

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sets", nargs="*", default=list(SETS))
    ap.add_argument("--out", type=Path, default=Path("/tmp/reader_rules.json"))
    args = ap.parse_args(argv)
    enc = OnnxMiniLM()
    allrows = {s: run_set(s, VARIANTS, enc) for s in args.sets}
    args.out.write_text(json.dumps(allrows), encoding="utf-8")
    print(table(allrows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
