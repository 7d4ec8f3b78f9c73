"""The request ragcore sends, for the Chat Completions or the Responses API, and the two
parameters it drops or renames when a model rejects them.

OpenAI's reasoning models want ``max_completion_tokens`` instead of ``max_tokens`` and
refuse any ``temperature`` but the default; they say so in a 400. Rather than failing, the
generator adapts once per parameter (:meth:`RequestShape.adapt`) and asks again.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ragcore.settings.config import LlmSettings

log = logging.getLogger(__name__)

_UNSUPPORTED = ("unsupported", "not supported", "does not support")


@dataclass
class RequestShape:
    """Which optional parameters this endpoint accepts (learned from its 400s)."""

    max_tokens_param: str = "max_tokens"
    send_temperature: bool = True

    def adapt(self, api: str, server_words: str) -> bool:
        """Change the parameter a 400 names as rejected; True when asking again makes sense.

        ``server_words`` is the server's own message and code, not ragcore's hints.
        """
        low = server_words.lower()
        rejects = any(s in low for s in _UNSUPPORTED)
        if api == "chat" and "max_tokens" in low and self.max_tokens_param == "max_tokens":
            if "max_completion_tokens" in low or rejects:
                log.info("the model rejects max_tokens; using max_completion_tokens")
                self.max_tokens_param = "max_completion_tokens"
                return True
        if "temperature" in low and self.send_temperature and rejects:
            log.info("the model rejects temperature; sending none")
            self.send_temperature = False
            return True
        return False


def create(
    client: Any,
    settings: LlmSettings,
    shape: RequestShape,
    messages: list[dict],
    *,
    stream: bool,
    max_tokens: int | None = None,
) -> Any:
    """Send the request with the SDK (which retries what is worth retrying)."""
    limit = settings.max_output_tokens if max_tokens is None else max_tokens
    extra: dict[str, Any] = {"temperature": settings.temperature} if shape.send_temperature else {}
    if settings.api == "responses":
        return client.responses.create(stream=stream, **responses_body(settings.model, messages, limit), **extra)
    body = {"model": settings.model, "messages": messages, shape.max_tokens_param: limit}
    return client.chat.completions.create(stream=stream, **body, **extra)


def responses_body(model: str | None, messages: list[dict], limit: int) -> dict[str, Any]:
    """Chat messages as a Responses request: system/developer turns become ``instructions``."""
    system = ("system", "developer")
    instructions = "\n\n".join(str(m.get("content") or "") for m in messages if m.get("role") in system)
    items = [{"role": m["role"], "content": m.get("content") or ""} for m in messages if m.get("role") not in system]
    body: dict[str, Any] = {"model": model, "input": items, "max_output_tokens": limit, "store": False}
    if instructions:
        body["instructions"] = instructions
    return body
