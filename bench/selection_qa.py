"""Selected-text mode measured: does an answer about a selection quote the sentence that answers?

    python -m bench.selection_qa [--root flask=DIR] [--root demo=DIR] [--context selection|both]
                                 [--collection NAME] [--viewer fixed|legacy] [--out results.json]

Each case of ``bench/data/selection-qa/cases.jsonl`` is a question about a passage, either
*pasted* (``text``: what a browser shows) or *selected in the viewer* (``path`` + ``lines``: the
file's lines as the source viewer numbers them, read from the corpus root with the ingest's own
reader, as ``ragcore.engine.selection.selection_lines`` gives it). A case passes when the answer's status is what it expects (``answer``: ok or partial;
``abstain``: abstained) and, for an answer, its text (markers stripped, whitespace folded) holds
``expected``. Selection mode needs no collection (nothing is retrieved); ``--context both`` asks
the collection too, and then also checks that the selection's sentences come first; an
off-topic case passes there when the answer cites nothing of the selection (the corpus answers).

``--viewer legacy`` reads a viewer selection as the viewer's ``text_between`` did before the
fix (a blank line numbered like the paragraph's last line replaced that line), to measure what
the analyst got then.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "bench" / "data" / "selection-qa" / "cases.jsonl"
FLASK_DEBIAN = Path("/usr/share/doc/python-flask-doc/html")  # apt-get install python-flask-doc
DEFAULT_ROOTS = {"demo": REPO / "demo", "flask": FLASK_DEBIAN}


def load_cases(path: Path = CASES) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]


def viewer_text(root: Path, path: str, lines: tuple[int, int], legacy: bool = False) -> tuple[str, tuple[int, ...]]:
    """The selection the viewer sends for ``lines`` of ``path`` (the ingest's reader, so HTML
    lines are numbered as citations number them)."""
    from ragcore.ingest.read.loaders import load_file

    doc = load_file(root / path, root, max_bytes=50_000_000)
    a, b = lines
    if legacy:  # ui/viewer.py text_between before the fix: later rows of one number replace earlier ones
        out = [""] * (b - a + 1)
        for ln in doc.lines:
            if a <= ln.no <= b:
                out[ln.no - a] = ln.text
        return "\n".join(out), ()
    from ragcore.engine.selection import selection_lines

    return selection_lines(((ln.no, ln.text) for ln in doc.lines), a, b)


def plain(answer: str) -> str:
    """An answer's text as compared: no [n] markers or code fences, whitespace folded."""
    text = re.sub(r"```\w*", " ", re.sub(r"\s*\[\d+(?:[,\s–-]+\d+)*\]", "", answer))
    return " ".join(text.split())


def run_case(engine, case: dict[str, Any], roots: dict[str, Path], context: str, legacy: bool) -> dict[str, Any]:
    from ragcore.engine.stages import SelectionInput

    if case["kind"] == "pasted":
        sel = SelectionInput(case["text"])
    else:
        a, b = case["lines"]
        text, numbers = viewer_text(roots[case["corpus"]], case["path"], (a, b), legacy)
        sel = SelectionInput(text, case["path"], a, line_numbers=numbers) if numbers else SelectionInput(text, case["path"], a)
    t = time.perf_counter()
    ans = engine.ask(case["question"], context=context, selection=sel)
    ms = (time.perf_counter() - t) * 1e3
    text = plain(ans.answer)
    expected = " ".join(case["expected"].split())
    if case["expect"] == "abstain" and context == "both":  # about something else: the corpus answers, not the selection
        ok = not any(c.origin == "selection" for c in ans.citations)
    elif case["expect"] == "abstain":
        ok = ans.status == "abstained"
    else:
        ok = ans.status in ("ok", "partial") and expected in text
    sel_first = None
    if context == "both" and ans.citations:
        order = [int(m) for m in re.findall(r"\[(\d+)\]", ans.answer)]
        origin = {e.n: e.origin for e in ans.evidence}
        seen = [origin.get(n) for n in order]
        sel_first = "selection" not in seen or seen.index("selection") == 0
    return {"id": case["id"], "kind": case["kind"], "expect": case["expect"], "status": ans.status, "pass": ok,
            "support": ans.metadata.get("support", {}).get("score"), "ms": round(ms, 1), "selection_first": sel_first,
            "answer": ans.answer, "reason": list(ans.validation.guardrail_actions)}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def share(rs: list[dict[str, Any]]) -> str:
        return f"{sum(r['pass'] for r in rs)}/{len(rs)}"

    ans = [r for r in rows if r["expect"] == "answer"]
    return {"all": share(rows), "pasted (answer)": share([r for r in ans if r["kind"] == "pasted"]),
            "viewer (answer)": share([r for r in ans if r["kind"] == "viewer"]),
            "off-topic (abstain)": share([r for r in rows if r["expect"] == "abstain"])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", action="append", default=[], help="CORPUS=DIR (flask, demo)")
    ap.add_argument("--context", choices=("selection", "both"), default="selection")
    ap.add_argument("--collection", help="the collection asked in both mode (its corpus: --corpus)")
    ap.add_argument("--corpus", help="only the cases of this corpus")
    ap.add_argument("--viewer", choices=("fixed", "legacy"), default="fixed")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    from ragcore.engine.engine import Engine
    from ragcore.settings.config import RagcoreSettings

    roots = {**DEFAULT_ROOTS, **{k: Path(v) for k, v in (r.split("=", 1) for r in args.root)}}
    cases = [c for c in load_cases() if not args.corpus or c["corpus"] == args.corpus]
    settings = RagcoreSettings.from_env()
    if args.collection:
        settings = settings.with_(collection=args.collection)
    engine = Engine(settings)
    try:
        rows = [run_case(engine, c, roots, args.context, args.viewer == "legacy") for c in cases]
    finally:
        engine.close()
    for r in rows:
        print(f"{'PASS' if r['pass'] else 'FAIL'} {r['id']} {r['kind']:6} {r['status']:9} "
              f"support={r['support'] if r['support'] is None else round(r['support'], 2)}"
              + ("" if r["selection_first"] is None else f" selection_first={r['selection_first']}"))
        if not r["pass"]:
            print("   ", r["answer"][:300].replace("\n", " | "), r["reason"])
    print(json.dumps(summary(rows)))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary(rows), "context": args.context, "viewer": args.viewer,
                                        "rows": rows}, indent=1, ensure_ascii=False), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
