"""Dump what the reader learns from: every question of a labelled set, asked once through the engine.

For each question: the answer as shipped (status, text), the numbered evidence (pickled
``Evidence``), the support score, and every vector the composer asked for (so that training and
leave-one-corpus-out evaluation re-compose answers without the model: ``reader_train.py``).
One pickle per set under ``--cache`` (default /work/cache-reader/dumps); a set already dumped is
not asked again unless ``--force``.

    RAGCORE_DATA_DIR=/work/cache-reader/data python -m bench.reader_data django git …

The collections must exist (``ragcore ingest CORPUS -c NAME``, the set's name as NAME).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from bench.common import DJANGO, REPO

SETS_ROOT = Path(os.environ.get("RAGCORE_READER_SETS", "/work/cache-reader/sets"))
DEFAULT_CACHE = Path(os.environ.get("RAGCORE_READER_CACHE", "/work/cache-reader/dumps"))


def set_dirs() -> dict[str, Path]:
    """Each labelled set's folder (questions.jsonl + unanswerable.jsonl), by collection name."""
    django = DJANGO if DJANGO.is_dir() else Path("/work/shared/data/django-docs-qa")  # a worktree's REPO.parent has no shared/
    return {"django": django, "git": SETS_ROOT / "git", "scrapy": SETS_ROOT / "scrapy",
            "sqlalchemy": SETS_ROOT / "sqlalchemy", "guide": REPO / "bench" / "data" / "guide-qa",
            "pdfqa": REPO / "bench" / "data" / "pdf-qa"}


class RecordingEncoder:
    """The engine's encoder, remembering every text it embeds (for re-composing offline)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.seen: dict[str, np.ndarray] = {}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        vecs = self.inner.encode(list(texts))
        for t, v in zip(texts, vecs):
            self.seen[t] = np.asarray(v, dtype=np.float32)
        return vecs


class DictEncoder:
    """Vectors from a dump; a text it lacks goes to ``fallback`` (or fails: the dump is stale)."""

    def __init__(self, vectors: dict[str, np.ndarray], fallback: Any = None) -> None:
        self.vectors, self.fallback = vectors, fallback

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self.vectors]
        if missing:
            if self.fallback is None:
                raise KeyError(f"{len(missing)} texts not in the dump")
            for t, v in zip(missing, self.fallback.encode(missing)):
                self.vectors[t] = np.asarray(v, dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts]) if texts else np.zeros((0, 384), np.float32)


@dataclass
class Record:
    id: str
    question: str
    answerable: bool
    reference: str
    expected: str  # pdf-qa: the text the answer must quote ("" elsewhere)
    status: str
    answer: str
    evidence: tuple
    support: float | None
    bar: float | None
    actions: tuple[str, ...] = ()  # guardrail actions: why it abstained (the bar, or nothing to quote)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()] if path.is_file() else []


def dump_set(name: str, folder: Path, out: Path, max_unanswerable: int | None = None) -> Path:
    from ragcore.engine.engine import Engine
    from ragcore.settings.config import RagcoreSettings
    from ragcore.synthesis.extractive.composer import ExtractiveComposer

    s = RagcoreSettings.from_env().with_(collection=name)
    engine = Engine(s)
    rec_enc = RecordingEncoder(engine.encoder)
    composer = ExtractiveComposer(rec_enc, max_sentences=s.max_answer_sentences, max_docs=s.answer_docs, second_page=s.answer_second_page, reader=None)
    rows = _lines(folder / "questions.jsonl") + _lines(folder / "unanswerable.jsonl")[:max_unanswerable]
    records = []
    t0 = time.perf_counter()
    for i, q in enumerate(rows):
        ans = engine.ask(q["question"], collection=name, settings=s)
        if ans.evidence:
            composer.compose(q["question"], ans.evidence)  # records the vectors the composer uses
        bar = (ans.metadata.get("abstain_bar") or {}).get("value")
        records.append(Record(q["id"], q["question"], bool(q.get("answerable", True)), q.get("answer", ""),
                              q.get("expected", ""), ans.status, ans.answer, tuple(ans.evidence),
                              ans.metadata.get("best_support"), bar, tuple(ans.validation.guardrail_actions)))
        print(f"{name} {i + 1}/{len(rows)} {ans.status} {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
    engine.close()
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.pkl"
    with path.open("wb") as f:
        # records as plain dicts: the pickle must not name this module as __main__
        pickle.dump({"set": name, "records": [dict(vars(r)) for r in records], "vectors": rec_enc.seen}, f)
    return path


def load_dump(name: str, cache: Path = DEFAULT_CACHE) -> dict[str, Any]:
    with (cache / f"{name}.pkl").open("rb") as f:
        d = pickle.load(f)
    refs = references(set_dirs().get(name))
    d["records"] = [Record(**{**r, "reference": r["reference"] or refs.get(r["id"], "")}) for r in d["records"]]
    return d


def references(folder: Path | None) -> dict[str, str]:
    """Reference answers kept apart from the questions (the guide's, written for the reader's labels)."""
    return {r["id"]: r["answer"] for r in _lines(folder / "references.jsonl")} if folder else {}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sets", nargs="+", choices=sorted(set_dirs()))
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--max-unanswerable", type=int, default=15,
                    help="the first N unanswerable questions of each set (they only check that abstaining holds)")
    args = ap.parse_args(argv)
    for name in args.sets:
        if (args.cache / f"{name}.pkl").is_file() and not args.force:
            print(f"{name}: dumped already", file=sys.stderr)
            continue
        print(dump_set(name, set_dirs()[name], args.cache, args.max_unanswerable or None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
