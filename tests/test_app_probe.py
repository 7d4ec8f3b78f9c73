"""The "why not retrieved?" probe (ui.probe) reads the path filter exactly as retrieval does
(ragcore.pathfilter): a comma-separated list of globs, where "ref/" means everything under ref/.

Real parts: the app's shared Engine (embedded Qdrant in a temp folder, the real ONNX model), a
small three-folder collection ingested once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.app_support import shared_runtime
from ui.probe import probe

COLLECTION = "probe-filter"
FILES = {
    "docs/threshold.md": "# Threshold\n\nThe threshold applies to the cosine similarity between the question and a chunk.\n",
    "ref/security.md": "# Keys\n\nAPI keys are masked on screen and never written to logs or exports.\n",
    "other/fruit.md": "# Fruit\n\nBananas are yellow and grow in bunches on large tropical plants.\n",
}
QUESTION = "What does the threshold apply to?"


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory):
    root: Path = tmp_path_factory.mktemp("probe-corpus")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    eng = shared_runtime().engine
    report = eng.ingest([root], COLLECTION)
    assert sorted(p for p, _ in eng.documents(COLLECTION)) == sorted(FILES), report
    yield eng
    eng.drop(COLLECTION)


def _probe(engine, path: str):
    # a pool of one candidate per branch: only docs/threshold.md's chunk gets in
    s = engine.settings.with_(collection=COLLECTION, top_k=1, candidates=1, threshold=0.0,
                              path_filter="docs/*.md, ref/")
    return probe(engine, QUESTION, s, collection=COLLECTION, path=path)


def test_a_file_under_a_folder_pattern_passes_the_filter(engine):
    res = _probe(engine, "ref/security.md")
    # ref/ is in the filter: the chunk was searched, it just ranked below the one-candidate pool
    assert res.verdict in ("not_candidate", "not_in_pool"), (res.verdict, res.message)


def test_a_file_outside_every_pattern_is_reported_as_filtered(engine):
    res = _probe(engine, "other/fruit.md")
    assert res.verdict == "filter", (res.verdict, res.message)
    assert "'docs/*.md, ref/'" in res.message


def test_the_matching_file_is_kept(engine):
    res = _probe(engine, "docs/threshold.md")
    assert res.verdict == "kept" and res.evidence_n == 1, (res.verdict, res.message)
