"""What the OpenAI-compatible endpoint says for one :class:`~ragcore.types.Answer`: the reply's
text (the checked answer, a one-line status when the answer is not ``ok``, the Sources it cites),
the ``ragcore`` extra field, ``usage`` and ``finish_reason``. The streamed and the whole reply are
both built from :func:`content`, so they carry the same text.

The status line is part of the text on purpose: chat UIs, LangChain and most SDK wrappers drop
unknown fields such as ``ragcore``, so a partial or abstained answer would otherwise read as a
normal one.
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping

from ragcore.service.errors import ApiError
from ragcore.types import Answer, Citation

QUOTE_CHARS = 300
CHARS_PER_TOKEN = 4  # usage is an estimate: the engine may answer with no model, so no tokenizer is at hand
# sentence ends and line ends: where the streamed text is cut into pieces ("".join(pieces) == text)
_PIECE_END = re.compile(r"(?<=[.!?])(?=\s)|(?<=\n)")


# ------------------------------------------------------------------ the text


def content(answer: Answer) -> str:
    """The reply's text: the answer, its status line when it is not ``ok``, the note when the model's
    answer was replaced, then the Sources."""
    lines = [x for x in (status_line(answer), replaced_line(answer)) if x]
    body = answer.answer.strip()
    return body + "".join(f"\n\n{x}" for x in lines) + sources_text(answer)


def replaced_line(answer: Answer) -> str:
    """One plain line when the text is the extractive answer standing in for the model's ("" otherwise):
    a chat UI shows only the text, and the answer's status may well be ``ok``."""
    act = next((a for a in answer.validation.guardrail_actions if a.startswith("replaced the LLM answer")), "")
    if not act:
        return ""
    why = ("it was only an echo of ragcore's prompt markup" if "echo" in act
           else "it made claims its sources do not support (RAGCORE_LLM_UNSUPPORTED_POLICY=extractive)")
    return f"[ragcore note] The model's answer was replaced by the answer quoted from the sources: {why}."


def status_line(answer: Answer) -> str:
    """One plain line saying why the answer is not ``ok`` ("" when it is)."""
    if answer.status == "ok":
        return ""
    if answer.status == "abstained":
        return "[ragcore status: abstained] The sources do not answer this question well enough; nothing above is a claim of theirs."
    if answer.status == "cancelled":
        return "[ragcore status: cancelled] The answer was stopped before it was finished."
    v = answer.validation
    why = [f"{len(v.unsupported)} sentence(s) are not supported by the sources they cite" if v.unsupported else "",
           f"{len(v.uncited)} sentence(s) cite no source" if v.uncited else "",
           f"{len(v.injected)} sentence(s) rely on instruction-like text" if v.injected else "",
           "the model copied ragcore's prompt markup into its answer (removed)"
           if any("<evidence> markup" in a for a in v.guardrail_actions) else "",
           _first_sentence(answer.error_message or "")]
    reasons = "; ".join(w for w in why if w) or "the answer did not pass every check"
    return f"[ragcore status: {answer.status}] {reasons}. Check it against the Sources before relying on it."


def _first_sentence(text: str) -> str:
    text = " ".join(text.split())
    end = text.find(". ")
    return (text[:end] if end > 0 else text).rstrip(".")


def sources_text(answer: Answer) -> str:
    """The Sources the answer cites (the checker's citations: only numbers the text still carries)."""
    if not answer.citations:
        return ""
    lines = []
    for c in answer.citations:
        where = f"{c.path}:{c.start_line}-{c.end_line}" + (f" (page {c.page})" if c.page is not None else "")
        lines.append(f"[{c.n}] {where}" + (f" § {' › '.join(c.section)}" if c.section else ""))
    return "\n\nSources:\n" + "\n".join(lines)


def pieces(text: str) -> list[str]:
    """``text`` cut after each sentence and line, for a streamed reply."""
    return [p for p in _PIECE_END.split(text) if p]


# ------------------------------------------------------------------ the fields around it


def finish_reason(answer: Answer) -> str:
    """``length`` only when the reply was cut for length (the client's reply cap), else ``stop``."""
    return "length" if "llm_error: too_long" in answer.validation.notes else "stop"


def usage(answer: Answer, messages_chars: int) -> dict[str, int]:
    """Estimated token counts (characters / CHARS_PER_TOKEN): the request's messages and the
    evidence read, and the reply's text."""
    prompt = math.ceil((messages_chars + sum(len(e.chunk.text) for e in answer.evidence)) / CHARS_PER_TOKEN)
    completion = math.ceil(len(content(answer)) / CHARS_PER_TOKEN)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def quote(answer: Answer, c: Citation) -> str:
    """The cited lines of the evidence [n], shortened."""
    ev = next((e for e in answer.evidence if e.n == c.n), None)
    if ev is None:
        return ""
    lines = ev.chunk.text.splitlines()
    a, b = c.start_line - ev.chunk.start_line, c.end_line - ev.chunk.start_line + 1
    text = " ".join(x.strip() for x in (lines[a:b] if 0 <= a < b <= len(lines) else lines)).strip()
    return text if len(text) <= QUOTE_CHARS else text[: QUOTE_CHARS - 1].rstrip() + "…"


def extra(answer: Answer) -> dict[str, Any]:
    conf = answer.confidence
    return {"status": answer.status, "request_id": answer.metadata.get("request_id"), "error_message": answer.error_message,
            "confidence": {"value": conf.value, "level": conf.level, "decides": conf.decides} if conf else None,
            "standalone_question": answer.metadata.get("standalone_question"),
            "citations": [{"n": c.n, "path": c.path, "start_line": c.start_line, "end_line": c.end_line,
                           "section": list(c.section), "page": c.page, "support": round(c.support, 4),
                           "quote": quote(answer, c)} for c in answer.citations]}


# ------------------------------------------------------------------ parameters it cannot honour


def refuse_unsupported(params: Mapping[str, Any]) -> None:
    """400 (OpenAI's shape, naming the parameter) for a request whose meaning would silently change:
    several choices, tool calls, a structured output format. Sampling parameters stay ignored."""
    n = params.get("n")
    if n not in (None, 1):
        _refuse("n", "this endpoint gives one answer per request; send n=1 or leave it out")
    if params.get("tools") or params.get("functions"):
        _refuse("tools", "this endpoint answers from a collection and calls no tools; leave tools out")
    fmt = params.get("response_format")
    kind = fmt.get("type") if isinstance(fmt, Mapping) else fmt
    if kind not in (None, "text"):
        _refuse("response_format", "the answer is text with [n] markers; only response_format type \"text\" is supported")


def _refuse(param: str, why: str) -> None:
    raise ApiError(400, f"{param}: {why}.", "unsupported_parameter")
