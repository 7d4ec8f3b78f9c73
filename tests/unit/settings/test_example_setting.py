"""An example setting added in config.py alone (and used in retrieval/stages.py): the CLI, the app's
saved list, the service's request model and eval's sweeps take it from the catalog."""

import argparse

from ragcore.cli.common import settings_from_args
from ragcore.cli.main import build_parser
from ragcore.eval.sweep import SWEEPABLE
from ragcore.retrieval.stages import CUTS, Pool
from ragcore.service.schemas import AskRequest, request_settings
from ragcore.settings.app_file import PERSISTED
from ragcore.settings.config import RagcoreSettings
from ragcore.types import Candidate, Chunk


def test_every_client_takes_the_new_setting():
    args = build_parser().parse_args(["ask", "q", "--min-chunk-words", "3"])
    assert settings_from_args(args, {}).min_chunk_words == 3
    base = RagcoreSettings.from_env({})
    assert request_settings(base, AskRequest(question="q", min_chunk_words=4)).min_chunk_words == 4
    assert "min_chunk_words" in PERSISTED and "min_chunk_words" in SWEEPABLE


def test_short_chunks_are_cut():
    def cand(text, rank):
        chunk = Chunk(chunk_id=f"c{rank}", text=text, path=f"{rank}.md", doc_hash="h", kind="text", start_line=1, end_line=1)
        return Candidate(chunk, 0.5, 1.0, 0.1, rank, rank, rank, rank)

    s = RagcoreSettings.from_env({}).with_(min_chunk_words=3)
    out = CUTS.run(None, Pool("c", "q", s, candidates=(cand("a b c d", 1), cand("title", 2))))
    assert [(c.kept, c.dropped_reason) for c in out.candidates] == [(True, None), (False, "threshold")]
