"""Fragments in extractive answers: quoted units that lean on a sentence the answer does not quote
right before them ("Note that this…", "However, …": ``compose_rules.leans_back``).

For every question of a data set (answerable and not) the collection's evidence is composed with
the configuration's settings, and each answer unit is checked: does it lean back, and if so, is
the unit before it in the answer the sentence it leans on (the same evidence piece, only
whitespace between)? ``context.py`` quotes the figures this prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ragcore.settings.config import RagcoreSettings
from ragcore.eval.dataset import EvalDataset


@dataclass(frozen=True)
class FragmentCount:
    answers: int
    units: int
    leaning: int  # units that lean on the sentence before them
    orphans: tuple[tuple[str, str], ...]  # (question id, unit) leaning units quoted without it


def count(engine: Any, collection: str, dataset: EvalDataset, settings: RagcoreSettings) -> FragmentCount:
    from ragcore.citations import evidence_from_candidates
    from ragcore.synthesis.extractive.context import Antecedents
    from ragcore.synthesis.extractive.composer import ExtractiveComposer, source_names

    composer = ExtractiveComposer(engine.encoder, max_sentences=settings.max_answer_sentences, max_docs=settings.answer_docs, second_page=settings.answer_second_page)
    answers = units = leaning = 0
    orphans: list[tuple[str, str]] = []
    for q in dataset.questions:
        r = engine.retrieve(q.question, settings=settings, collection=collection)
        evidence = evidence_from_candidates(r.kept, r.rank_score_kind, start=1)
        out = composer.compose(q.question, evidence)
        if out.status != "ok":
            continue
        answers += 1
        # over the answer's own units, "the unit right before it" is the antecedent it quotes, if any
        quoted = Antecedents(out.picked, {e.n: e.chunk.text for e in evidence}, {e.n: source_names(e.chunk) for e in evidence})
        prev = None
        for p in out.picked:
            units += 1
            if quoted.leans(p):
                leaning += 1
                if prev is None or quoted.before(p) is not prev:
                    orphans.append((q.id, p.span.text))
            prev = p
    return FragmentCount(answers, units, leaning, tuple(orphans))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m ragcore.eval.fragments DATASET --collection NAME``: counts on stdout, with the
    settings of the environment (RAGCORE_DATA_DIR, RAGCORE_*)."""
    from ragcore.eval.analysis_cli import open_analysis

    a = open_analysis("python -m ragcore.eval.fragments", main.__doc__, argv)
    try:
        c = count(a.engine, a.args.collection, a.dataset, a.settings)
    finally:
        a.engine.close()
    dataset = a.dataset
    print(f"{dataset.name}: {c.answers} answers, {c.units} quoted units, {c.leaning} lean back, "
          f"{len(c.orphans)} without the sentence they lean on")
    for qid, text in c.orphans:
        print(f"  {qid}: {text[:120]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
