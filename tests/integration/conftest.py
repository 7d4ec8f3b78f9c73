"""Fixtures of the integration tests: the real llama.cpp servers (tests/support/llama_server.py),
one of each kind per test module, skipped with the reason when llama-cpp-python is not installed."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.support.llama_server import llama_server, require_llama


@pytest.fixture(scope="module")
def llama_embedding_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (``…/v1``) of llama_cpp.server serving ``/v1/embeddings`` for Gemma 3 270M."""
    require_llama()
    with llama_server(tmp_path_factory.mktemp("llama-embed"), embedding=True, n_ctx=2048) as base:
        yield base


@pytest.fixture(scope="module")
def llama_chat_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (``…/v1``) of llama_cpp.server serving ``/v1/chat/completions`` for Gemma 3 270M."""
    require_llama()
    with llama_server(tmp_path_factory.mktemp("llama-chat"), embedding=False, n_ctx=4096) as base:
        yield base
