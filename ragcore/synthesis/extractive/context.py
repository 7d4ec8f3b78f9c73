"""A quoted sentence that leans on the one before it is quoted with that one, or not at all.

"Note that this is different than null.", "However, multiple-select boxes can be difficult to
use…", "It has several options for dealing with customizing the interface." need the sentence
before them (``compose_rules.leans_back``). Quoted after a sentence from elsewhere they read as
fragments, or say something false ("this" now points at the wrong thing). Measured before this
rule (``python -m ragcore.eval.fragments``) on the two test sets' 156 questions: 30 of 244
quoted Django units and 17 of 305 Git units leaned back without their antecedent right before
them in the answer; after it, none of 241 and 308. Answer metrics stayed level (citation
precision 0.596 → 0.592 and 0.370 → 0.364, token F1 0.189 → 0.188 and 0.212 → 0.210; with
questions no longer quoted, 0.600 on Django: bench/results/eval-*-s8.md).

So the composer takes a leaning unit only together with its *antecedent*: the quotable unit
right before it in the same chunk, with nothing but whitespace between (a heading, a block the
composer cannot quote or a chunk boundary in between means there is none; a selection, given as
one evidence piece per sentence, runs on from one piece to the next). An antecedent that
leans back itself brings its own, up to ``MAX_CHAIN`` units; a chain that does not reach a unit
that stands alone is not quoted. The antecedents count towards ``max_answer_sentences``. In the
answer a chain stays together, in reading order, whatever the how-to ordering does to the rest.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ragcore.synthesis.extractive.rules import leans_back
from ragcore.synthesis.extractive.units import Picked

MAX_CHAIN = 2  # antecedents one unit may bring: a third sentence back is rarely the same thought


class Antecedents:
    """Which units a unit needs before it, over one composition's scored units."""

    def __init__(
        self, scored: Sequence[Picked], texts: Mapping[int, str], names: Mapping[int, frozenset[str]],
        follows: Mapping[int, int] | None = None,
    ) -> None:
        self._texts = texts
        self._names = names
        self._follows = follows or {}  # evidence n → the n whose text runs on into it (a selection's sentences)
        self._by_n: dict[int, list[Picked]] = {}
        for p in scored:
            if p.unit is not None:
                self._by_n.setdefault(p.n, []).append(p)

    def leans(self, p: Picked) -> bool:
        return p.unit is not None and leans_back(p.unit, self._names.get(p.n, frozenset()))

    def before(self, p: Picked) -> Picked | None:
        """The quotable unit right before ``p`` in its chunk (only whitespace between), or, for
        the first sentence of a selection's piece, the last of the piece before it; else None."""
        earlier = [q for q in self._by_n.get(p.n, ()) if end_of(q) <= p.span.start]
        if earlier:
            q = max(earlier, key=end_of)
            return q if not self._texts[p.n][end_of(q) : p.span.start].strip() else None
        prev = self._follows.get(p.n)
        if prev is None or self._texts[p.n][: p.span.start].strip() or not self._by_n.get(prev):
            return None
        q = max(self._by_n[prev], key=end_of)
        return q if not self._texts[prev][end_of(q) :].strip() else None

    def needs(self, p: Picked, chosen: Sequence[Picked]) -> list[Picked] | None:
        """The units to quote before ``p`` (reading order; [] when it stands alone or its
        antecedent is already chosen), or None when ``p`` cannot be quoted."""
        chain: list[Picked] = []
        cur = p
        while self.leans(cur):
            q = self.before(cur)
            if q is None or len(chain) >= MAX_CHAIN:
                return None
            if any(q is c for c in chosen):
                break
            chain.append(q)
            cur = q
        return chain[::-1]

    def grouped(self, lead: Picked, rest: Sequence[Picked]) -> list[Picked]:
        """``lead`` then ``rest`` in their order, each leaning unit moved right after the unit it
        leans on (its chain in reading order)."""
        everything = [lead, *rest]
        anchor: dict[int, Picked] = {}
        for p in everything:
            q = self.before(p) if self.leans(p) else None
            if q is not None and any(q is c for c in everything):
                anchor[id(p)] = q
        out: list[Picked] = []

        def emit(p: Picked) -> None:
            out.append(p)
            for d in sorted((d for d in everything if anchor.get(id(d)) is p), key=lambda d: d.span.start):
                emit(d)

        for p in everything:
            if id(p) not in anchor:
                emit(p)
        return out


def end_of(p: Picked) -> int:
    """Where what ``p`` quotes ends in its chunk: the sentence, or the block it brings."""
    u = p.unit
    return max(u.end, u.block.end) if u is not None and u.block is not None else p.span.end
