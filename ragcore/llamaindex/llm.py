"""ragcore's OpenAI-compatible generator as a LlamaIndex LLM.

``OpenAICompatibleLLM`` lets any LlamaIndex query engine answer through the same generator the
engine uses — OpenAI, or a local llama.cpp / vLLM / Ollama server — with its error messages,
secret redaction, timeouts and whole-answer deadline, and with no dependency on
``llama-index-llms-openai`` (which pins an older ``openai`` package). Chat messages go to the
endpoint as chat messages, not flattened into one prompt.
"""

from __future__ import annotations

from typing import Any, Sequence

from llama_index.core.base.llms.types import (
    ChatMessage, ChatResponse, ChatResponseGen, CompletionResponse, CompletionResponseGen, LLMMetadata, MessageRole,
)
from llama_index.core.llms.callbacks import llm_chat_callback, llm_completion_callback
from llama_index.core.llms.custom import CustomLLM
from pydantic import PrivateAttr

from ragcore.settings.config import LlmSettings


class OpenAICompatibleLLM(CustomLLM):
    """``OpenAICompatibleLLM(LlmSettings(base_url=..., api_key=..., model=...))``."""

    context_window: int = 8192
    num_output: int = 512
    model_name: str = ""
    _generator: Any = PrivateAttr()

    def __init__(self, llm: LlmSettings, generator: Any = None, **kwargs: Any) -> None:
        super().__init__(context_window=llm.context_window, num_output=llm.max_output_tokens,
                         model_name=llm.model or "", **kwargs)
        if generator is None:
            from ragcore.synthesis.llm.generator import OpenAIGenerator

            generator = OpenAIGenerator(llm)
        self._generator = generator

    @classmethod
    def class_name(cls) -> str:
        return "OpenAICompatibleLLM"

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(context_window=self.context_window, num_output=self.num_output, model_name=self.model_name,
                           is_chat_model=True)

    @staticmethod
    def _messages(messages: Sequence[ChatMessage]) -> list[dict]:
        return [{"role": m.role.value, "content": m.content or ""} for m in messages]

    @llm_chat_callback()
    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        text = self._generator.complete(self._messages(messages))
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text))

    @llm_chat_callback()
    def stream_chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponseGen:
        def gen() -> ChatResponseGen:
            text = ""
            for delta in self._generator.stream(self._messages(messages)):
                text += delta
                yield ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=text), delta=delta)

        return gen()

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        return CompletionResponse(text=self._generator.complete([{"role": "user", "content": prompt}]))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponseGen:
        def gen() -> CompletionResponseGen:
            text = ""
            for delta in self._generator.stream([{"role": "user", "content": prompt}]):
                text += delta
                yield CompletionResponse(text=text, delta=delta)

        return gen()
