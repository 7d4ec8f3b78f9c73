"""The LLM endpoint's settings: one frozen, validated :class:`LlmSettings` (``RAGCORE_LLM_*``), each
field's rule and catalog entry beside it. Where the values come from: :mod:`ragcore.settings.resolve`."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

from ragcore.settings.redact import redact_url
from ragcore.settings.rules import _check_fields, _choice, _safe_repr, _setting

UnsupportedPolicy = Literal["annotate", "extractive"]
LlmApi = Literal["chat", "responses"]


@dataclass(frozen=True, repr=False)
class LlmSettings:
    """An OpenAI-compatible endpoint. Empty ``model`` means: no LLM, use the extractive composer."""

    base_url: str | None = _setting(
        None, "url", optional=True, label="Base URL", app=True, shown_default="not set (OpenAI API)",
        help="Base URL of an OpenAI-compatible endpoint, ending in `/v1`.")
    # never printed
    api_key: str | None = _setting(
        None, "str", optional=True, secret=True, label="API key",
        help="API key; never shown or logged.")
    model: str | None = _setting(
        None, "str", optional=True, label="Model", app=True, shown_default="not set (extractive composer)",
        help="Model name; setting it turns the language model on.")
    api: LlmApi = _choice(
        "chat", LlmApi, label="API", app=True,
        help="`chat` for Chat Completions, `responses` for OpenAI's Responses API.")
    temperature: float = _setting(
        0.1, "float", ge=0.0, le=2.0, label="Temperature", app=True, widget=(0.0, 2.0, 0.05),
        help="Sampling temperature.")
    max_output_tokens: int = _setting(
        512, "int", ge=1, label="Max output tokens", app=True, widget=(16, 32768, 16),
        help="Longest answer in tokens.")
    context_window: int = _setting(
        8192, "int", ge=1,
        help="Context length assumed for the model, in tokens.")
    timeout_s: float = _setting(
        30.0, "float", gt=0.0, label="Timeout (s)", app=True, widget=(1.0, 600.0, 1.0),
        help="Request timeout in seconds.")
    max_retries: int = _setting(
        2, "int", ge=0,
        help="Retries after a timeout, a 429 rate limit or a 5xx (not a 429 for an exhausted quota).")
    # whole-answer deadline: a server that trickles tokens cannot hold an answer open forever
    deadline_s: float = _setting(
        120.0, "float", gt=0.0,
        help="Longest time one whole answer may take, however slowly the server streams.")
    unsupported_policy: UnsupportedPolicy = _choice(
        "annotate", UnsupportedPolicy,
        help="`annotate` flags unsupported sentences; `extractive` replaces an unsupported answer with the extractive "
             "answer.")

    def __post_init__(self) -> None:
        _check_fields(self)

    def __repr__(self) -> str:
        return _safe_repr(self)

    @property
    def configured(self) -> bool:
        return bool(self.model)

    def public_dict(self) -> dict[str, Any]:
        """A dict safe to show or save: the key is reduced to whether one is set, and the
        base URL loses any ``user:password@``."""
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["api_key"] = "set" if self.api_key else None
        d["base_url"] = redact_url(self.base_url)
        return d
