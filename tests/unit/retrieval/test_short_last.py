"""The example stage: in the list, and it moves a short chunk behind the longer ones."""

from ragcore.retrieval.search import POOL_STAGES
from ragcore.retrieval.short_last import SHORT_CHUNKS_LAST
from ragcore.retrieval.stages import Pool
from ragcore.settings.config import RagcoreSettings
from ragcore.types import Candidate, Chunk


def _cand(text: str, rank: int) -> Candidate:
    chunk = Chunk(chunk_id=f"c{rank}", text=text, path="a.md", doc_hash="h", kind="text", start_line=1, end_line=1,
                  section=(), page=None, ordinal=rank)
    return Candidate(chunk, 0.5, 1.0, 0.1, rank, rank, rank, rank)


def test_short_chunks_move_last():
    assert SHORT_CHUNKS_LAST in POOL_STAGES
    pool = Pool("c", "q", RagcoreSettings.from_env({}), candidates=(_cand("Title", 1), _cand("one two three four five six", 2)))
    out = SHORT_CHUNKS_LAST.run(None, pool)
    assert [c.chunk.text for c in out.candidates] == ["one two three four five six", "Title"]
    assert [c.rank for c in out.candidates] == [1, 2]
