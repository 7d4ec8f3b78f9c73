"""What changed between two runs of a cell: answer text, evidence, status, configuration."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, Literal, Mapping

from ..blocks import split_blocks
from .model import Run, locator as _locator


@dataclass(frozen=True)
class EvidenceChange:
    kind: Literal["added", "dropped", "moved", "rescored"]
    chunk_id: str
    locator: str
    old_n: int | None
    new_n: int | None
    old_score: float | None
    new_score: float | None


@dataclass(frozen=True)
class RunDiff:
    answer_changed: bool
    answer_diff: tuple[tuple[str, str], ...]  # (" " | "-" | "+", sentence)
    added: tuple[EvidenceChange, ...]
    dropped: tuple[EvidenceChange, ...]
    moved: tuple[EvidenceChange, ...]
    unchanged_evidence: int  # same chunk, same [n] (its score may have changed: see ``rescored``)
    status_change: tuple[str, str] | None
    config_changes: tuple[tuple[str, Any, Any], ...]  # (key, old, new)
    rescored: tuple[EvidenceChange, ...] = ()  # same chunk, same [n], a different retrieval score

    @property
    def changed(self) -> bool:
        return bool(self.answer_changed or self.added or self.dropped or self.moved or self.rescored or self.status_change
                    or self.config_changes)

    def summary(self) -> str:
        if not self.changed:
            return "No change: same answer, same evidence, same configuration."
        parts = []
        if self.status_change:
            parts.append(f"status {self.status_change[0]} → {self.status_change[1]}")
        parts.append("answer changed" if self.answer_changed else "same answer")
        for name, items in (("added", self.added), ("dropped", self.dropped), ("moved", self.moved), ("rescored", self.rescored)):
            if items:
                parts.append(f"{len(items)} evidence {name}")
        if self.config_changes:  # named: "3 settings changed" told nobody that only top-K had moved
            named = ", ".join(f"{k} {_short(a)} → {_short(b)}" for k, a, b in self.config_changes[:SUMMARY_SETTINGS])
            more = len(self.config_changes) - SUMMARY_SETTINGS
            parts.append(f"{'setting' if len(self.config_changes) == 1 else 'settings'} changed: {named}"
                         + (f" and {more} more" if more > 0 else ""))
        return "; ".join(parts)


# a sentence ends at . ! or ? and the citation markers right after it: "… threshold. [1] Next" splits
# after "[1]", so a marker stays with the sentence it cites
_SENT_END = re.compile(r"[.!?](?:\s*\[[\d,\s\u2013-]{1,40}\])*(?=\s|$)")
SUMMARY_SETTINGS = 3  # settings named in the one-line summary; the table below lists them all
# what a re-run compares as its configuration: the settings it ran with and the corpus it read. The rest of
# the metadata (support, packing, notes) is the answer's outcome, not a setting the user changed.
_SETTING_KEYS = ("config.", "corpus_version", "generator", "context", "collection")


def _short(value: Any) -> str:
    text = "–" if value is None else str(value)
    return text if len(text) <= 24 else text[:23] + "…"


_IGNORED_KEYS = {"request_id", "config.data_dir", "latency_ms", "chunks_retrieved", "chunks_used", "best_support", "support",
                 "candidates_trimmed", "packing"}


def _sentences(text: str) -> list[str]:
    """The answer's units: each sentence of its prose with its markers, each code block, list or
    table whole (a block's lines are compared as one unit and shown as a block)."""
    out: list[str] = []
    for b in split_blocks(text.strip()):
        if b.kind != "para":
            out.append(b.raw.strip())
            continue
        last = 0
        for m in _SENT_END.finditer(b.text):
            out.append(b.text[last : m.end()].strip())
            last = m.end()
        out.append(b.text[last:].strip())
    return [s for s in out if s]


def _flatten(d: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, Mapping):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def diff_runs(old: Run, new: Run) -> RunDiff:
    """What changed between two runs of a cell: answer text, evidence, status, configuration."""
    a, b = _sentences(old.text), _sentences(new.text)
    ops: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            ops.extend((" ", s) for s in a[i1:i2])
        else:
            ops.extend(("-", s) for s in a[i1:i2])
            ops.extend(("+", s) for s in b[j1:j2])

    def index(run: Run) -> dict[str, dict[str, Any]]:
        return {e["chunk"]["chunk_id"]: e for e in run.evidence if e.get("chunk")}

    ea, eb = index(old), index(new)
    added, dropped, moved, rescored = [], [], [], []
    same = 0
    for cid, e in eb.items():
        if cid not in ea:
            added.append(EvidenceChange("added", cid, _locator(e["chunk"]), None, e.get("n"), None, e.get("score")))
        elif ea[cid].get("n") != e.get("n"):
            o = ea[cid]
            moved.append(EvidenceChange("moved", cid, _locator(e["chunk"]), o.get("n"), e.get("n"), o.get("score"), e.get("score")))
        else:
            same += 1
            o = ea[cid]
            if _score_changed(o.get("score"), e.get("score")):
                rescored.append(EvidenceChange("rescored", cid, _locator(e["chunk"]), o.get("n"), e.get("n"), o.get("score"), e.get("score")))
    for cid, e in ea.items():
        if cid not in eb:
            dropped.append(EvidenceChange("dropped", cid, _locator(e["chunk"]), e.get("n"), None, e.get("score"), None))

    ma, mb = _flatten(old.metadata), _flatten(new.metadata)
    changes = []
    for key in sorted(set(ma) | set(mb)):
        if key in _IGNORED_KEYS or key.startswith("latency_ms.") or key.split(".")[0] in _IGNORED_KEYS:
            continue
        if not key.startswith(_SETTING_KEYS):
            continue
        if ma.get(key) != mb.get(key):
            changes.append((key.removeprefix("config."), ma.get(key), mb.get(key)))
    status = (old.outcome, new.outcome) if old.outcome != new.outcome else None
    return RunDiff(
        answer_changed=a != b, answer_diff=tuple(ops), added=tuple(added), dropped=tuple(dropped),
        moved=tuple(sorted(moved, key=lambda c: c.new_n or 0)), unchanged_evidence=same, status_change=status,
        config_changes=tuple(changes), rescored=tuple(rescored),
    )


def _score_changed(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return abs(a - b) > 1e-6
    return a != b
