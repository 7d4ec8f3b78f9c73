"""What the benchmarks and the test suite both use: the scripted OpenAI-protocol chat server
(``scripted_openai``) and embeddings server (``scripted_embeddings``), the hostile corpus
(``hostile_corpus``, with ``pdfs.make_pdf``) and the verbatim checker (``verbatim``).

Here, not in ``tests/``, because the layering contract in pyproject.toml ([tool.importlinter]) forbids
``bench`` to import ``tests``: the suite sits above the benchmarks (it already runs them), so tests
import from here and never the other way. Not in ``ragcore`` either: none of it is part of the
installed package.
"""
