"""Citations that survive an agent's run: the tool outputs an agent saw (ragcore's MCP tools, or the
same functions called in process) turned into checked citations for the agent's final text.

The agent cites evidence by id, ``[ev-3f2a9b1c0d4e]`` (``ragcore.service.mcp.outputs``). :func:`cite_agent_answer`
numbers the ids it cites in order of first use ([1], [2] …), strips every id no tool returned (an
invented or misremembered one) and every bare ``[n]`` (an agent's numbers point at nothing it was
given), and reports both; then the engine's own checker (``ragcore.citations``) narrows each
citation to the lines that support the sentences citing it, scores that support and flags
uncited and unsupported sentences, exactly as it checks the engine's answers.

Nothing here needs the ``mcp`` SDK or an agent framework: outputs are plain JSON (text or dicts).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from ragcore.citations import CitationChecker, SupportScorer, clean_markers
from ragcore.citations.markers import map_prose
from ragcore.types import Chunk, Citation, Evidence, Validation

ID_MARKER = re.compile(r"\[\s*(ev-[0-9A-Za-z]+(?:\s*[,;]\s*ev-[0-9A-Za-z]+)*)\s*\]")
_ID = re.compile(r"ev-[0-9A-Za-z]+")


@dataclass(frozen=True)
class SeenEvidence:
    """One piece of evidence some tool returned: its id and where it is, with its text."""

    id: str
    collection: str
    path: str
    start_line: int
    end_line: int
    text: str
    kind: str = "text"
    section: tuple[str, ...] = ()
    page: int | None = None
    score: float | None = None
    score_kind: str = "cosine"
    tool: str = ""  # which tool output it came from: search, ask or read


@dataclass(frozen=True)
class AgentCitations:
    """The agent's final text with [n] markers, its checked citations (each with the evidence id
    it stands for), the ids that were stripped because no tool returned them, and the checker's verdict."""

    text: str
    citations: tuple[Citation, ...]
    ids: Mapping[int, str]  # n -> evidence id
    invented_ids: tuple[str, ...]
    stripped_markers: tuple[str, ...]
    validation: Validation = field(default_factory=Validation)
    sources: tuple[SeenEvidence, ...] = ()

    @property
    def ok(self) -> bool:
        v = self.validation
        return not (self.invented_ids or self.stripped_markers or v.unsupported or v.uncited)


def evidence_in(outputs: Iterable[Any]) -> list[SeenEvidence]:
    """Every citable piece of evidence in tool outputs (JSON text or dicts; other outputs are
    skipped), first appearance first; an id seen twice keeps its first text."""
    seen: dict[str, SeenEvidence] = {}
    for out in outputs:
        obj = _as_object(out)
        if obj is None:
            continue
        for item in _items(obj):
            seen.setdefault(item.id, item)
    return list(seen.values())


def cite_agent_answer(text: str, outputs: Iterable[Any], *, scorer: SupportScorer | None = None) -> AgentCitations:
    """Check ``text`` (an agent's final answer citing ``[ev-…]`` ids) against the tool ``outputs`` it saw."""
    sources = evidence_in(outputs)
    by_id = {s.id: s for s in sources}
    numbered: dict[str, int] = {}
    invented: list[str] = []
    bare_free, stripped = clean_markers(text, set())  # the agent's own [n]: nothing it was given is numbered

    def repl(m: re.Match[str]) -> str:
        ns = []
        for ident in _ID.findall(m.group(1)):
            if ident in by_id:
                ns.append(numbered.setdefault(ident, len(numbered) + 1))
            else:
                invented.append(ident)
        return "".join(f"[{n}]" for n in dict.fromkeys(ns))

    converted = map_prose(bare_free, lambda seg: ID_MARKER.sub(repl, seg))
    evidence = [_evidence(n, by_id[i]) for i, n in numbered.items()]
    checked = CitationChecker(scorer).check(converted, evidence)
    return AgentCitations(text=checked.text, citations=checked.citations, ids={n: i for i, n in numbered.items()},
                          invented_ids=tuple(dict.fromkeys(invented)), stripped_markers=stripped,
                          validation=checked.validation, sources=tuple(sources))


def _evidence(n: int, s: SeenEvidence) -> Evidence:
    chunk = Chunk(chunk_id=s.id, text=s.text, path=s.path, doc_hash="", kind=s.kind,  # type: ignore[arg-type]
                  start_line=s.start_line, end_line=s.end_line, section=s.section, page=s.page)
    return Evidence(n=n, chunk=chunk, origin="corpus", score=s.score, score_kind=s.score_kind)  # type: ignore[arg-type]


def _as_object(out: Any) -> Mapping[str, Any] | None:
    if isinstance(out, Mapping):
        return out
    if isinstance(out, (bytes, str)):
        try:
            obj = json.loads(out)
        except ValueError:
            return None
        return obj if isinstance(obj, dict) else None
    text = getattr(out, "text", None)  # an MCP TextContent
    return _as_object(text) if isinstance(text, str) else None


def _items(obj: Mapping[str, Any]) -> Iterable[SeenEvidence]:
    """The evidence of one output: search's and ask's ``evidence`` lists, or a ``read`` range."""
    collection = str(obj.get("collection", ""))
    if "lines" in obj and "id" in obj and "path" in obj:  # read
        yield SeenEvidence(id=obj["id"], collection=collection, path=obj["path"], start_line=int(obj["start_line"]),
                           end_line=int(obj["end_line"]), text=str(obj.get("text", "")), kind=str(obj.get("kind", "text")),
                           tool="read")
        return
    tool = "ask" if "answer" in obj else "search"
    for e in _list(obj.get("evidence")):
        if isinstance(e, Mapping) and {"id", "path", "start_line", "end_line", "text"} <= e.keys():
            yield SeenEvidence(id=str(e["id"]), collection=collection, path=str(e["path"]), start_line=int(e["start_line"]),
                               end_line=int(e["end_line"]), text=str(e["text"]), kind=str(e.get("kind", "text")),
                               section=tuple(e.get("section") or ()), page=e.get("page"), score=e.get("score"),
                               score_kind=str(e.get("score_kind", "cosine")), tool=tool)


def _list(x: Any) -> Sequence[Any]:
    return x if isinstance(x, list) else []


__all__ = ["AgentCitations", "SeenEvidence", "cite_agent_answer", "evidence_in"]
