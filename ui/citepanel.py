"""Citations read in place: clicking [n] in an answer opens passage n beside it, without a rerun.

The panel is one ``st.html`` block holding every cited passage of the cell; each [n] in the answer
links to ``#cite-<cell>-<n>`` and CSS ``:target`` shows that passage (the first one when none is
targeted). No script is involved and nothing reruns, so the passage opens at once, even in a long
notebook. Each passage shows its source lines with their real numbers — from the file on disk
through the ingest's own loader for HTML and PDF, whose chunk text is not the file's lines one
for one (``ui/viewer.py``) — the cited lines highlighted and the lines the answer quotes marked.

Every piece of document text is ``html.escape``d (in ``viewer_html``); the locators, sections
and scores too. The only links are the app's own (in-page anchors and the Library's viewer).
"""

from __future__ import annotations

import html
import re
from typing import Any, Callable, Mapping, Sequence

from ragcore.citations import MARKER_RE
from ragcore.textutil import normalize_ws

from .render import PASTED, viewer_url
from .viewer import Row, SourceView, viewer_html

Source = Callable[[str], "SourceView | None"]  # path → the document's lines (None: use the chunk's own text)

PANEL_CSS = """<style>
.rc-cites .rc-cite{display:none;scroll-margin-top:45vh}
.rc-cites .rc-cite:target{display:block}
.rc-cites:not(:has(.rc-cite:target)) .rc-cite.first{display:block}
.rc-cites nav{display:flex;flex-wrap:wrap;gap:.25rem .35rem;align-items:center;margin-bottom:.4rem;font-size:.85rem}
.rc-cites nav a{border:1px solid #d0d7de;border-radius:1rem;padding:0 .55rem;text-decoration:none;color:#0969da}
.rc-cites .rc-head{font-size:.8rem;color:#57606a;margin:.2rem 0 .35rem;overflow-wrap:anywhere}
.rc-cites .rc-open{font-size:.85rem;margin-top:.35rem;display:inline-block}
.rc-cites .rc-src{max-height:300px}
</style>"""


def anchor(cell_id: str, n: int) -> str:
    return f"cite-{cell_id}-{n}"


def quoted_test(sentences: Sequence[str]) -> Callable[[str], bool]:
    """A line the answer quotes: it holds a quoted sentence, or is a piece (≥ 12 characters) of one."""
    quotes = [normalize_ws(MARKER_RE.sub("", s)).strip() for s in sentences]
    quotes = [q for q in quotes if len(q) >= 12]

    def test(line: str) -> bool:
        t = normalize_ws(line).strip()
        if len(t) < 8:
            return False
        return any(q in t or (len(t) >= 12 and t in q) for q in quotes)

    return test


def _rows(c: Mapping[str, Any], e: Mapping[str, Any] | None, source: Source | None) -> tuple[SourceView, tuple[int, int]]:
    """The passage's lines with their numbers, and the window of the chunk."""
    ch = (e or {}).get("chunk") or {}
    text = str(ch.get("text") or "")
    start = int(ch.get("start_line") or c.get("start_line") or 1)
    end = int(ch.get("end_line") or c.get("end_line") or start)
    path = str(c.get("path") or "")
    lines = text.split("\n")
    if len(lines) == end - start + 1:
        rows = [Row(start + i, start + i, t) for i, t in enumerate(lines)]
        return SourceView(path, str(ch.get("kind") or ""), rows, "chunks"), (start, end)
    view = source(path) if source is not None and path and path != PASTED else None
    page = ch.get("page") or c.get("page")
    if view is not None:
        rows = [r for r in view.rows_on(page) if r.no <= end and r.end >= start]
        if rows:
            return SourceView(path, view.kind, rows, view.origin), (start, end)
    return SourceView(path, str(ch.get("kind") or ""), [Row(start, end, text)], "chunks"), (start, end)


def passage_block(c: Mapping[str, Any], e: Mapping[str, Any] | None, header: str, sentences: Sequence[str],
                  source: Source | None) -> str:
    """One citation's passage: its header, its numbered lines (cited lines and quoted lines marked)."""
    view, window = _rows(c, e, source)
    hl = (int(c.get("start_line") or window[0]), int(c.get("end_line") or window[1]))
    body = viewer_html(view, page=None, highlight=hl, selection=None, window=window, quoted=quoted_test(sentences))
    return f'<div class="rc-head">{html.escape(header)}</div>{body}'


def panel_html(
    cell_id: str, citations: Sequence[Mapping[str, Any]], evidence: Mapping[int, Mapping[str, Any]],
    headers: Mapping[int, str], sentences: Mapping[int, Sequence[str]], collection: str, source: Source | None,
) -> str:
    """Every cited passage of a cell, one shown at a time (the clicked [n], else the first)."""
    e = html.escape
    cits = [c for c in citations if c.get("n") is not None]
    nav = "".join(f'<a href="#{anchor(cell_id, int(c["n"]))}" title="{e(headers.get(int(c["n"]), ""), quote=True)}">'
                  f'[{int(c["n"])}]</a>' for c in cits)
    active = "".join(
        f'.rc-cites:has(#{anchor(cell_id, int(c["n"]))}:target) nav a[href="#{anchor(cell_id, int(c["n"]))}"]'
        "{background:#ddf4ff;font-weight:600}" for c in cits)
    parts = [PANEL_CSS, f"<style>{active}</style>" if active else "", f'<div class="rc-cites" id="cited-{e(cell_id)}">',
             f"<nav><span>Cited passages</span>{nav}</nav>"]
    for i, c in enumerate(cits):
        n = int(c["n"])
        block = passage_block(c, evidence.get(n), headers.get(n, f"[{n}]"), sentences.get(n, ()), source)
        link = ""
        if c.get("path") and c.get("path") != PASTED:
            url = viewer_url(str(c["path"]), int(c.get("start_line") or 1), int(c.get("end_line") or 1), c.get("page"), collection)
            link = f'<a class="rc-open" href="{e(url, quote=True)}" target="_self">↗ Open in the source viewer</a>'
            if str(c.get("permalink") or "").startswith("https://"):  # the lines on the forge, at the commit that answered
                link += (f' <a class="rc-open" href="{e(str(c["permalink"]), quote=True)}" target="_blank" '
                         'rel="noopener noreferrer">↗ On the forge at this commit</a>')
        parts.append(f'<div class="rc-cite{" first" if i == 0 else ""}" id="{anchor(cell_id, n)}">{block}{link}</div>')
    parts.append("</div>")
    return "".join(parts)


def sentences_by_citation(answer: Mapping[str, Any]) -> dict[int, list[str]]:
    """[n] → the answer's sentences that cite it (from the checker's per-sentence report)."""
    out: dict[int, list[str]] = {}
    for s in (answer.get("validation") or {}).get("sentences") or []:
        for n in s.get("citations") or []:
            out.setdefault(int(n), []).append(str(s.get("text") or ""))
    if not out:  # an older run without sentence checks: the answer's own sentences before each marker
        text = str(answer.get("answer") or "")
        for m in MARKER_RE.finditer(text):
            before = re.split(r"(?<=[.!?:])\s+|\n", text[: m.start()].rstrip())[-1:]
            for n in _numbers(m.group(1)):
                out.setdefault(n, []).extend(before)
    return out


def _numbers(s: str) -> list[int]:
    from ragcore.citations import parse_marker

    return list(parse_marker(s) or [])
