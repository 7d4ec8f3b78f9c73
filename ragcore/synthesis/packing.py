"""Token-budget context packing: which evidence goes into the prompt, and how long.

Tokens are counted with tiktoken's ``cl100k_base``, loaded from the copy that
llama-index-core ships (``llama_index/core/_static/tiktoken_cache``), lazily, once, with no
network. Local models use other tokenizers; cl100k is a close enough ruler for budgeting,
and :func:`evidence_budget` keeps a safety margin.

Packing rules, in order (evidence arrives in score order, best first):

1. Everything fits: nothing changes.
2. Otherwise drop the lowest-ranked evidence first (corpus evidence before the user's
   selection), keeping at least one, until the rest fits once any chunk longer than
   ``max_chunk_tokens`` is capped to that length.
3. Cap the longest over-long chunks (to ``max_chunk_tokens``, or to the room left if that is
   larger) until the set fits.
4. If the one remaining chunk still does not fit, cut it to the budget.

Numbers are never changed: evidence keeps its ``n`` whether or not its neighbours were
dropped, so [n] in the answer always means the same chunk in the app's evidence table. A cut
chunk keeps its chunk_id and line range and ends with " …".
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from ..types import Evidence
from .prompts import SYSTEM_PROMPT, SELECTION_PRIMARY_NOTE, evidence_block, user_prompt

log = logging.getLogger(__name__)

ENCODING_NAME = "cl100k_base"
TRUNCATION_MARK = " …"
_MIN_TEXT_TOKENS = 16

_lock = threading.Lock()
_encoding: Any = None  # tiktoken.Encoding once loaded; False if it could not be loaded


@dataclass(frozen=True)
class PackedContext:
    evidence: tuple[Evidence, ...]  # what goes into the prompt, in rank order
    dropped: tuple[int, ...]  # evidence n left out for the budget
    truncated: tuple[int, ...]  # evidence n whose text was cut
    tokens: int  # tokens of the evidence blocks that were kept
    budget: int

    @property
    def numbers(self) -> tuple[int, ...]:
        return tuple(e.n for e in self.evidence)


# --------------------------------------------------------------------------- tokens


def tiktoken_cache_dir() -> Path | None:
    """The tiktoken cache shipped inside llama-index-core (found without importing it)."""
    try:
        spec = importlib.util.find_spec("llama_index.core")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        d = Path(loc) / "_static" / "tiktoken_cache"
        if d.is_dir():
            return d
    return None


def _load_encoding() -> Any:
    import tiktoken

    cache = tiktoken_cache_dir()
    if "TIKTOKEN_CACHE_DIR" not in os.environ and cache is not None:
        os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        return tiktoken.get_encoding(ENCODING_NAME)
    except Exception as err:  # noqa: BLE001 - e.g. a user cache dir without the file, offline
        if cache is None:
            raise
        log.info("tiktoken could not load %s via TIKTOKEN_CACHE_DIR (%s); using the bundled file", ENCODING_NAME, err)
    # The user's TIKTOKEN_CACHE_DIR lacks the file: build the encoding from the bundled copy.
    import hashlib

    from tiktoken.load import load_tiktoken_bpe
    from tiktoken_ext import openai_public

    params = openai_public.cl100k_base()
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    local = cache / hashlib.sha1(url.encode()).hexdigest()
    params["mergeable_ranks"] = load_tiktoken_bpe(str(local))
    return tiktoken.Encoding(**params)


def get_encoding() -> Any:
    """The tiktoken encoding, loaded once; None when tiktoken cannot be loaded at all."""
    global _encoding
    if _encoding is None:
        with _lock:
            if _encoding is None:
                try:
                    _encoding = _load_encoding()
                except Exception as err:  # noqa: BLE001
                    log.warning("tiktoken unavailable (%s); estimating tokens from characters", err)
                    _encoding = False
    return _encoding or None


_WORDISH = re.compile(r"\w+|[^\w\s]", re.UNICODE)


def count_tokens(text: str) -> int:
    """Tokens of ``text`` in cl100k_base (an estimate if tiktoken could not be loaded)."""
    if not text:
        return 0
    enc = get_encoding()
    if enc is None:
        return sum(max(1, len(w) // 4) for w in _WORDISH.findall(text))
    return len(enc.encode(text, disallowed_special=()))


def truncate_to_tokens(text: str, max_tokens: int, *, mark: str = TRUNCATION_MARK) -> str:
    """``text`` cut to at most ``max_tokens`` tokens (mark included), at a word boundary."""
    if max_tokens <= 0:
        return ""
    if count_tokens(text) <= max_tokens:
        return text
    keep = max(1, max_tokens - count_tokens(mark))
    enc = get_encoding()
    if enc is None:
        cut = text[: keep * 4]
    else:
        cut = enc.decode(enc.encode(text, disallowed_special=())[:keep]).rstrip("\ufffd")
    # back up to a word boundary unless that throws away too much
    space = max(cut.rfind(" "), cut.rfind("\n"))
    if space > len(cut) * 0.8:
        cut = cut[:space]
    return cut.rstrip() + mark


# --------------------------------------------------------------------------- budget


def evidence_budget(
    *,
    context_window: int,
    max_output_tokens: int,
    question: str,
    history: Sequence[tuple[str, str]] = (),
    margin: float = 0.1,
) -> int:
    """Tokens left for evidence blocks once the rest of the prompt and the answer are paid.

    Counts the system prompt (with the selection note, the longer variant), the question
    framing and the history (``(question, answer)`` pairs, as for ``build_messages``), reserves ``max_output_tokens`` for the answer, ~4 tokens of
    chat formatting per message, and keeps ``margin`` of the window spare because the
    serving model's tokenizer is not cl100k.
    """
    fixed = count_tokens(SYSTEM_PROMPT + "\n\n" + SELECTION_PRIMARY_NOTE)
    empty = PackedContext((), (), (), 0, 0)
    fixed += count_tokens(user_prompt(question, empty))
    fixed += sum(count_tokens(q) + count_tokens(a) + 8 for q, a in history)  # (question, answer) pairs
    fixed += 4 * 2 + 3
    spare = int(context_window * margin)
    return max(0, context_window - max_output_tokens - fixed - spare)


# --------------------------------------------------------------------------- packing


def _with_text(e: Evidence, text: str) -> Evidence:
    return dataclasses.replace(e, chunk=dataclasses.replace(e.chunk, text=text))


def pack_evidence(
    evidence: Sequence[Evidence],
    *,
    budget_tokens: int,
    max_chunk_tokens: int = 400,
) -> PackedContext:
    """Fit ``evidence`` (score order, best first) into ``budget_tokens`` of evidence blocks.

    See the module docstring for the rules. ``max_chunk_tokens`` counts the chunk's text,
    not its block header.
    """
    items = list(evidence)
    if not items:
        return PackedContext((), (), (), 0, budget_tokens)

    n = len(items)
    cost = [count_tokens(evidence_block(e)) for e in items]
    overhead = [count_tokens(evidence_block(_with_text(e, ""))) for e in items]
    if sum(cost) <= budget_tokens:
        return PackedContext(tuple(items), (), (), sum(cost), budget_tokens)

    def capped(i: int) -> int:
        return min(cost[i], overhead[i] + max_chunk_tokens + count_tokens(TRUNCATION_MARK))

    # 2. drop lowest-ranked first: corpus evidence, then selection; keep at least one
    drop_order = [i for i in reversed(range(n)) if items[i].origin != "selection"]
    drop_order += [i for i in reversed(range(n)) if items[i].origin == "selection"]
    kept = set(range(n))
    dropped: list[int] = []
    for i in drop_order:
        if len(kept) == 1 or sum(capped(j) for j in kept) <= budget_tokens:
            break
        kept.remove(i)
        dropped.append(i)

    # 3. cap the longest over-long chunks, only as far as needed
    out = {i: items[i] for i in kept}
    cur = {i: cost[i] for i in kept}
    truncated: set[int] = set()

    def cut(i: int, target_cost: int) -> None:
        text_tokens = max(_MIN_TEXT_TOKENS, target_cost - overhead[i])
        for _ in range(4):  # tokens do not add up exactly across a cut: shave until it fits
            e = _with_text(items[i], truncate_to_tokens(items[i].chunk.text, text_tokens))
            c = count_tokens(evidence_block(e))
            if c <= target_cost or text_tokens <= _MIN_TEXT_TOKENS:
                break
            text_tokens = max(_MIN_TEXT_TOKENS, text_tokens - (c - target_cost))
        out[i], cur[i] = e, c
        truncated.add(i)

    for i in sorted(kept, key=lambda j: -cost[j]):
        total = sum(cur.values())
        if total <= budget_tokens:
            break
        if cost[i] <= capped(i):
            continue  # not over-long
        room = budget_tokens - (total - cur[i])
        cut(i, max(capped(i), room))

    # 4. still too long (one chunk, or the caps were not enough): cut the lowest-ranked kept
    for i in sorted(kept, reverse=True):
        total = sum(cur.values())
        if total <= budget_tokens:
            break
        room = budget_tokens - (total - cur[i])
        if room < overhead[i] + _MIN_TEXT_TOKENS and len(kept) > 1 and i != min(kept):
            continue
        cut(i, max(room, overhead[i] + _MIN_TEXT_TOKENS))

    order = sorted(kept)
    if dropped:
        log.debug("packing dropped evidence %s for a budget of %d tokens", [items[i].n for i in dropped], budget_tokens)
    return PackedContext(
        evidence=tuple(out[i] for i in order),
        dropped=tuple(items[i].n for i in sorted(dropped)),
        truncated=tuple(items[i].n for i in order if i in truncated),
        tokens=sum(cur[i] for i in order),
        budget=budget_tokens,
    )
