"""Fixtures for the abstain checks that act after the bar."""

from __future__ import annotations

from typing import Callable

import pytest

from ragcore.types import Answer
from tests.conftest import write_corpus


@pytest.fixture
def past_the_bar(make_engine, tmp_path) -> Callable[[dict[str, str], str], Callable[[str], Answer]]:
    """Ingest ``files`` as collection ``name`` into a fresh engine; the returned ``ask(question)``
    asks with a bar every question clears, so only the checks after the bar can decline."""

    def ingest(files: dict[str, str], name: str) -> Callable[[str], Answer]:
        eng = make_engine()
        eng.ingest([write_corpus(tmp_path / name, files)], name)
        settings = eng.settings.with_(collection=name, abstain_bar=0.0)
        return lambda question: eng.ask(question, settings=settings)

    return ingest
