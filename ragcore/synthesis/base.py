"""One synthesizer interface: the extractive composer and the OpenAI-compatible generator
both implement it, so the engine never branches on a generator's name.

A synthesizer's ``stream(job, cancel)`` is a generator of text pieces whose *return value*
is the finished :class:`Synthesis` (read it as ``result = yield from synth.stream(...)``
or from ``StopIteration.value``). Closing the generator stops the work at once (an LLM's
HTTP response is closed).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Generator, Iterator, Mapping, Protocol, Sequence

from ragcore.settings.config import RagcoreSettings
from ragcore.types import Confidence, Evidence


@dataclass(frozen=True)
class SynthesisJob:
    question: str  # what the evidence was retrieved for (a follow-up made standalone)
    asked: str  # the question as the user typed it
    evidence: tuple[Evidence, ...]
    history: tuple[tuple[str, str], ...]
    settings: RagcoreSettings


@dataclass(frozen=True)
class SynthesisFailure:
    kind: str  # e.g. "timeout", "auth", "deadline" (see synthesis/errors.py)
    message: str


@dataclass(frozen=True)
class Synthesis:
    text: str
    generator: str
    failure: SynthesisFailure | None = None
    cancelled: bool = False
    packing: Mapping[str, Any] | None = None
    confidence: Confidence | None = None  # the extractive reader's (synthesis/extractive/reader.py)

    @property
    def model_written(self) -> bool:
        """Text a model wrote (hedges are flagged there); the extractive text is the documents' own."""
        return self.generator.startswith("openai")


class Synthesizer(Protocol):
    name: str

    def stream(self, job: SynthesisJob, cancel: threading.Event | None = None) -> Generator[str, None, Synthesis]:
        ...


def word_pieces(text: str) -> Iterator[str]:
    """A finished text as word-sized pieces, so every synthesizer streams alike."""
    words = text.split(" ")
    for i, w in enumerate(words):
        yield w if i == len(words) - 1 else w + " "


class FixedText:
    """Streams a text decided beforehand (an abstention, a composed extractive answer)."""

    def __init__(self, text: str, name: str = "extractive") -> None:
        self.text = text
        self.name = name

    def stream(self, job: SynthesisJob, cancel: threading.Event | None = None) -> Generator[str, None, Synthesis]:
        yield from word_pieces(self.text)
        return Synthesis(self.text, self.name)


def evidence_numbers(evidence: Sequence[Evidence]) -> set[int]:
    return {e.n for e in evidence}
