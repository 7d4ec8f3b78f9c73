"""A retrieval stage (an example of the recipe): chunks of fewer than ``MIN_WORDS`` words (a lone
heading, a caption) move behind every longer chunk, keeping their order among themselves."""

from __future__ import annotations

from dataclasses import dataclass

from ragcore.retrieval.stages import Pool, Sources

MIN_WORDS = 5


@dataclass(frozen=True)
class ShortChunksLast:
    name: str = "short chunks last"
    clock: str = "fuse_and_cut"

    def run(self, src: Sources, pool: Pool) -> Pool:
        longer = [c for c in pool.candidates if len(c.chunk.text.split()) >= MIN_WORDS]
        short = [c for c in pool.candidates if len(c.chunk.text.split()) < MIN_WORDS]
        ranked = [c.evolve(rank=i) for i, c in enumerate([*longer, *short], 1)]
        return pool.evolve(candidates=tuple(ranked))


SHORT_CHUNKS_LAST = ShortChunksLast()
