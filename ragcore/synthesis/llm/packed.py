"""The result of packing evidence into a token budget: the one type both
:mod:`.packing` (which makes it) and :mod:`.prompts` (which reads it) need, kept apart
so that neither module imports the other's back."""

from __future__ import annotations

from dataclasses import dataclass

from ragcore.types import Evidence


@dataclass(frozen=True)
class PackedContext:
    evidence: tuple[Evidence, ...]  # what goes into the prompt, in rank order
    dropped: tuple[int, ...]  # evidence n left out for the budget
    truncated: tuple[int, ...]  # evidence n whose text was cut
    tokens: int  # tokens of the evidence blocks that were kept
    budget: int

    @property
    def numbers(self) -> tuple[int, ...]:
        return tuple(e.n for e in self.evidence)
