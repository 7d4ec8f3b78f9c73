"""Token-budget context packing: which evidence goes into the prompt, and how long.

Tokens are counted with tiktoken's ``cl100k_base``, loaded from the copy that
llama-index-core ships (``llama_index/core/_static/tiktoken_cache``), lazily, once, with no
network. Local models use other tokenizers; cl100k is a close enough ruler for budgeting,
and :func:`evidence_budget` keeps a safety margin.

Packing rules, in order (evidence arrives in score order, best first):

1. Everything fits: nothing changes.
2. Otherwise drop the lowest-ranked evidence first (corpus evidence before the user's
   selection), keeping at least one, until the rest fits once any chunk longer than
   ``max_chunk_tokens`` is capped to that length. With ``diversify`` (the default) a document's
   second and later chunks go before any document's best chunk: the evidence is often 11 chunks
   of one page, and the page that answers is then the one whose single chunk ranked 15th
   (bench/results/reader.md: the packed context held the answering passage for fewer questions
   than the top-20 evidence did).
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
from pathlib import Path
from typing import Any, Sequence

from ragcore.types import Evidence
from ragcore.synthesis.llm.packed import PackedContext  # re-exported: callers import it from here
from ragcore.synthesis.llm.prompts import SYSTEM_PROMPT, SELECTION_PRIMARY_NOTE, evidence_block, user_prompt

log = logging.getLogger(__name__)

ENCODING_NAME = "cl100k_base"
TRUNCATION_MARK = " …"
_MIN_TEXT_TOKENS = 16

_lock = threading.Lock()
_encoding: Any = None  # tiktoken.Encoding once loaded; False if it could not be loaded


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
    diversify: bool = True,
) -> PackedContext:
    """Fit ``evidence`` (score order, best first) into ``budget_tokens`` of evidence blocks.

    See the module docstring for the rules. ``max_chunk_tokens`` counts the chunk's text,
    not its block header.
    """
    items = list(evidence)
    if not items:
        return PackedContext((), (), (), 0, budget_tokens)
    packer = _Packer(items, budget_tokens, max_chunk_tokens)
    if sum(packer.cost) <= budget_tokens:
        return PackedContext(tuple(items), (), (), sum(packer.cost), budget_tokens)
    packer.drop_lowest(diversify)
    packer.cap_long()
    packer.cut_to_fit()
    return packer.result()


class _Packer:
    """The state of one packing: which items are kept, their (possibly cut) text and cost."""

    def __init__(self, items: list[Evidence], budget: int, max_chunk_tokens: int) -> None:
        self.items, self.budget = items, budget
        self.cost = [count_tokens(evidence_block(e)) for e in items]
        self.overhead = [count_tokens(evidence_block(_with_text(e, ""))) for e in items]
        mark = count_tokens(TRUNCATION_MARK)
        self.capped = [min(c, o + max_chunk_tokens + mark) for c, o in zip(self.cost, self.overhead)]
        self.kept = set(range(len(items)))
        self.dropped: list[int] = []
        self.out: dict[int, Evidence] = {}
        self.cur: dict[int, int] = {}
        self.truncated: set[int] = set()

    def drop_lowest(self, diversify: bool = True) -> None:
        """Rule 2: drop lowest-ranked first (corpus, then selection), keeping at least one;
        with ``diversify``, a document's later chunks before any document's best one."""
        n = len(self.items)
        order = [i for i in reversed(range(n)) if self.items[i].origin != "selection"]
        if diversify:
            first = {}
            for i in range(n):
                first.setdefault(self.items[i].chunk.path, i)
            order.sort(key=lambda i: first[self.items[i].chunk.path] == i)  # stable: rank order within each group
        order += [i for i in reversed(range(n)) if self.items[i].origin == "selection"]
        for i in order:
            if len(self.kept) == 1 or sum(self.capped[j] for j in self.kept) <= self.budget:
                break
            self.kept.remove(i)
            self.dropped.append(i)
        self.out = {i: self.items[i] for i in self.kept}
        self.cur = {i: self.cost[i] for i in self.kept}

    def cap_long(self) -> None:
        """Rule 3: cap the longest over-long chunks, only as far as needed."""
        for i in sorted(self.kept, key=lambda j: -self.cost[j]):
            total = sum(self.cur.values())
            if total <= self.budget:
                break
            if self.cost[i] <= self.capped[i]:
                continue  # not over-long
            room = self.budget - (total - self.cur[i])
            self.cut(i, max(self.capped[i], room))

    def cut_to_fit(self) -> None:
        """Rule 4: still too long (one chunk, or the caps were not enough): cut the lowest-ranked."""
        for i in sorted(self.kept, reverse=True):
            total = sum(self.cur.values())
            if total <= self.budget:
                break
            room = self.budget - (total - self.cur[i])
            floor = self.overhead[i] + _MIN_TEXT_TOKENS
            if room < floor and len(self.kept) > 1 and i != min(self.kept):
                continue
            self.cut(i, max(room, floor))

    def cut(self, i: int, target_cost: int) -> None:
        text_tokens = max(_MIN_TEXT_TOKENS, target_cost - self.overhead[i])
        for _ in range(4):  # tokens do not add up exactly across a cut: shave until it fits
            e = _with_text(self.items[i], truncate_to_tokens(self.items[i].chunk.text, text_tokens))
            c = count_tokens(evidence_block(e))
            if c <= target_cost or text_tokens <= _MIN_TEXT_TOKENS:
                break
            text_tokens = max(_MIN_TEXT_TOKENS, text_tokens - (c - target_cost))
        self.out[i], self.cur[i] = e, c
        self.truncated.add(i)

    def result(self) -> PackedContext:
        order = sorted(self.kept)
        if self.dropped:
            dropped_n = [self.items[i].n for i in self.dropped]
            log.debug("packing dropped evidence %s for a budget of %d tokens", dropped_n, self.budget)
        return PackedContext(
            evidence=tuple(self.out[i] for i in order),
            dropped=tuple(self.items[i].n for i in sorted(self.dropped)),
            truncated=tuple(self.items[i].n for i in order if i in self.truncated),
            tokens=sum(self.cur[i] for i in order),
            budget=self.budget,
        )
