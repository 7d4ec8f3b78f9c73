"""The engine's language-model clients: one OpenAI-compatible generator (and HTTP connection pool)
per endpoint configuration, and the follow-up condenser that uses it. Handed to the answerer as a
part, so it never calls back into the Engine."""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

from ragcore.engine.followup import resolve_offline
from ragcore.settings.config import RagcoreSettings


class Generators:
    def __init__(self, factory: Callable[[RagcoreSettings], Any] | None = None) -> None:
        self._factory = factory
        self._generators: dict[Any, Any] = {}
        self._lock = threading.Lock()

    def for_settings(self, s: RagcoreSettings) -> Any:
        """The generator for ``s.llm`` (made on first use)."""
        with self._lock:
            gen = self._generators.get(s.llm)
            if gen is None:
                if self._factory is not None:
                    gen = self._factory(s)
                else:
                    from ragcore.synthesis.llm.generator import OpenAIGenerator

                    gen = OpenAIGenerator(s.llm)
                self._generators[s.llm] = gen
            return gen

    def standalone(self, question: str, history: Sequence[tuple[str, str]], s: RagcoreSettings) -> str:
        """A follow-up made standalone: condensed by the LLM when one is configured and
        ``conversation_turns`` > 0, else resolved offline from the previous question (followup.py)."""
        turns = list(history)[-s.conversation_turns :] if s.conversation_turns else []
        if turns and s.llm.configured:
            try:
                from ragcore.synthesis.llm.prompts import condense_messages

                out = self.for_settings(s).complete(condense_messages(question, turns)).strip()
                if out:
                    return out
            except Exception:
                pass  # a failed condense must not fail the question; resolve it offline instead
        return resolve_offline(question, list(history))

    def close(self) -> None:
        with self._lock:
            gens, self._generators = list(self._generators.values()), {}
        for gen in gens:
            getattr(gen, "close", lambda: None)()
