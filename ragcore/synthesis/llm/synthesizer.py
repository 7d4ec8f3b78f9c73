"""The OpenAI-compatible generator behind the synthesizer interface: pack the evidence into
the context window, build the messages, stream the model's text."""

from __future__ import annotations

import threading
from typing import Any, Generator

from ragcore.synthesis.base import Synthesis, SynthesisFailure, SynthesisJob
from ragcore.synthesis.llm.errors import KEEPS_PARTIAL, GenerationError
from ragcore.synthesis.llm.packing import evidence_budget, pack_evidence
from ragcore.synthesis.llm.prompts import build_messages


# the end of an answer the client cut (the reply cap): the text says it is not the whole reply
TOO_LONG_NOTE = "\n\n*(The answer was cut here, after {chars:,} characters: the model kept writing past its output budget.)*"


def _failure(exc: GenerationError, text: str) -> SynthesisFailure:
    """The failure to report; a stop that kept no text (a stream of keep-alive comments until the
    deadline, a reply all think block) is a failure to answer, so the extractive answer is shown."""
    if exc.kind in KEEPS_PARTIAL and not text.strip():
        return SynthesisFailure("timeout" if exc.kind == "deadline" else "empty", exc.message)
    return SynthesisFailure(exc.kind, exc.message)


class LlmSynthesizer:
    def __init__(self, generator: Any) -> None:
        self.generator = generator  # an OpenAIGenerator (or anything with .name and .stream)
        self.name = getattr(generator, "name", "openai")

    def stream(self, job: SynthesisJob, cancel: threading.Event | None = None) -> Generator[str, None, Synthesis]:
        s = job.settings
        turns = list(job.history)[-s.conversation_turns :] if s.conversation_turns else []
        budget = evidence_budget(context_window=s.llm.context_window, max_output_tokens=s.llm.max_output_tokens,
                                 question=job.asked, history=turns)
        packed = pack_evidence(job.evidence, budget_tokens=budget)
        packing = {"budget_tokens": budget, "tokens": packed.tokens, "dropped": list(packed.dropped),
                   "truncated": list(packed.truncated)}
        stream = self.generator.stream(build_messages(job.asked, packed, history=turns), cancel=cancel)
        parts: list[str] = []
        failure = None
        try:
            for delta in stream:
                parts.append(delta)
                yield delta
        except GenerationError as exc:
            if exc.kind == "cancelled":
                return Synthesis("".join(parts), self.name, cancelled=True, packing=packing)
            parts = [getattr(exc, "partial", "") or "".join(parts)]
            failure = _failure(exc, "".join(parts))
            if exc.kind == "too_long" and "".join(parts).strip():
                parts.append(TOO_LONG_NOTE.format(chars=len(parts[0])))
        finally:
            stream.close()  # closes the HTTP response at once (also when our caller closes us)
        text = "".join(parts)
        if failure is None and not text.strip():
            failure = SynthesisFailure("empty", "The model returned an empty answer. Try again or check the model name.")
        return Synthesis(text, self.name, failure=failure, packing=packing)
