"""Score answers on bench/data/pdf-qa page by page: ingest the corpus, ask every question.

    python bench/pdf_qa.py [--corpus /work/data/pdf-qa/corpus] [--data-dir DIR] [--out FILE.json]

An answerable question is answered correctly when the answer is not an abstention, its text
holds the question's ``expected`` text (case, spaces and ligatures normalised) and one of its
citations points at the question's ``page`` of the right file. An unanswerable one is right
when the engine abstains. The ingest is timed too (pages/s of the whole ``Engine.ingest``:
reading, chunking, embedding, writing).

It imports nothing from ``bench``, so the same file scores the code before a change:
``PYTHONPATH=/path/to/old/checkout python bench/pdf_qa.py --out before.json``.
``ragcore eval bench/data/pdf-qa --collection pdfqa`` gives the usual metrics on the same set.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
import time
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent / "data" / "pdf-qa"


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = re.sub(r"\[\d+\]", " ", text)  # citation markers
    return " ".join(text.lower().replace("**", "").split())


def _pages(corpus: Path) -> int:
    import pypdfium2 as pdfium

    total = 0
    for f in corpus.glob("*.pdf"):
        doc = pdfium.PdfDocument(f)
        total += len(doc)
        doc.close()
    return total


def run(corpus: Path, data_dir: Path, collection: str = "pdfqa") -> dict:
    from ragcore.engine.engine import Engine
    from ragcore.settings.config import RagcoreSettings

    engine = Engine(RagcoreSettings(data_dir=data_dir))
    t0 = time.perf_counter()
    report = engine.ingest([corpus], collection)
    secs = time.perf_counter() - t0
    pages = _pages(corpus)
    rows = []
    for name in ("questions.jsonl", "unanswerable.jsonl"):
        for line in (HERE / name).read_text().splitlines():
            if line.strip():
                rows.append(_score(engine, collection, json.loads(line)))
    engine.close()
    answerable = [r for r in rows if r["answerable"]]
    unanswerable = [r for r in rows if not r["answerable"]]
    return {
        "ingest": {"pages": pages, "seconds": round(secs, 1), "pages_per_s": round(pages / secs, 2),
                   "chunks": report.chunks_written, "failed": [o.path for o in report.failed]},
        "answered_correctly": sum(r["correct"] for r in answerable), "answerable": len(answerable),
        "abstained_unanswerable": sum(r["correct"] for r in unanswerable), "unanswerable": len(unanswerable),
        "abstained_answerable": sum(r["status"] == "abstained" for r in answerable),
        "cited_right_page": sum(r["page_cited"] for r in answerable),
        "questions": rows,
    }


def _score(engine, collection: str, q: dict) -> dict:
    ans = engine.ask(q["question"], collection=collection)
    row = {"id": q["id"], "question": q["question"], "answerable": q.get("answerable", True), "status": ans.status,
           "answer": ans.answer[:600], "cited": [f"{c.path} p.{c.page}" for c in ans.citations]}
    if not row["answerable"]:
        row["correct"] = ans.status == "abstained"
        return row
    doc, page = q["relevant"][0], q["page"]
    row["text_found"] = _norm(q["expected"]) in _norm(ans.answer)
    row["page_cited"] = any(c.path.endswith(doc) and c.page == page for c in ans.citations)
    row["correct"] = ans.status not in ("abstained", "error") and row["text_found"] and row["page_cited"]
    return row


def summary(out: dict, label: str) -> str:
    i = out["ingest"]
    return (f"{label}: answered correctly {out['answered_correctly']}/{out['answerable']}, "
            f"cited the right page {out['cited_right_page']}/{out['answerable']}, "
            f"abstained on answerable {out['abstained_answerable']}/{out['answerable']}, "
            f"abstained on unanswerable {out['abstained_unanswerable']}/{out['unanswerable']}; "
            f"ingest {i['pages']} pages in {i['seconds']} s = {i['pages_per_s']} pages/s, {i['chunks']} chunks, "
            f"failed files: {i['failed'] or 'none'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=Path("/work/data/pdf-qa/corpus"))
    ap.add_argument("--data-dir", type=Path, help="default: a temporary folder")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--label", default="run")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = run(args.corpus, args.data_dir or Path(tmp))
    if args.out:
        args.out.write_text(json.dumps(out, indent=2, ensure_ascii=False) + "\n")
    for r in out["questions"]:
        if not r["correct"]:
            print(f"  wrong {r['id']} [{r['status']}] {r['question']} -> {r['cited']} {r['answer'][:160]!r}")
    print(summary(out, args.label))


if __name__ == "__main__":
    main()
