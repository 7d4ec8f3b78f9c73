"""Rendering helpers: escaping of document text, answers with clickable [n] citations, cells.

Every piece of text that comes from a document (chunk text, answer text, paths, sections,
error messages that may quote them) goes through :func:`md_escape` before it reaches
``st.markdown`` and friends, so Markdown, HTML, LaTeX and Streamlit's ``:directives:`` inside
a document show literally. Only the citation links are Markdown the app writes itself, and
their targets are URL-encoded.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence
from urllib.parse import parse_qsl, urlencode

from ragcore.citations import MARKER_RE as _MARKER, parse_marker, source_url
from ragcore.textutil import normalize_ws

from .blocks import Block, ListItem, drop_repeated_markers, split_blocks

# every ASCII punctuation character CommonMark can escape, plus what Streamlit's Markdown adds
# (":" for :emoji:/:color[...]:, "$" for LaTeX, "~" for strikethrough)
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:&=^\"'@%;?,/])")
LIBRARY_URL_PATH = "library"
PASTED = "(selection)"  # the path ragcore gives a selection that came from no file


def md_escape(text: Any) -> str:
    """Plain text → Markdown that renders as exactly that text (one line or paragraphs)."""
    s = str(text if text is not None else "")
    paragraphs = re.split(r"\n[ \t]*\n", s.replace("\r\n", "\n").replace("\r", "\n"))
    out = []
    for para in paragraphs:
        lines = [_MD_SPECIAL.sub(r"\\\1", ln.strip()) for ln in para.split("\n")]
        lines = [ln for ln in lines if ln]
        if lines:
            out.append("  \n".join(lines))
    return "\n\n".join(out)


def md_inline(text: Any) -> str:
    """Escaped text on one line (for labels, captions, table-ish lines)."""
    return _MD_SPECIAL.sub(r"\\\1", normalize_ws(str(text if text is not None else "")))


def md_code(text: Any) -> str:
    """Text as an inline code span: literal inside, so no escaping — only backticks are replaced."""
    body = normalize_ws(str(text if text is not None else "")).replace("`", "\u02cb")
    return f"`{body}`" if body else ""


def viewer_params(path: str, start: int, end: int, page: int | None = None, collection: str | None = None) -> dict[str, str]:
    """The Library viewer's query parameters: ragcore's citation locator plus the collection."""
    params = dict(parse_qsl(source_url(path, start, end, page).lstrip("?")))
    if collection:
        params["collection"] = collection
    return params


def viewer_url(path: str, start: int, end: int, page: int | None = None, collection: str | None = None) -> str:
    """Relative link to the Library page's source viewer ("library?path=…&lines=a-b")."""
    return LIBRARY_URL_PATH + "?" + urlencode(viewer_params(path, start, end, page, collection))


def citation_url(cit: Mapping[str, Any], collection: str | None) -> str:
    """The citation's own url ("?path=...&lines=a-b[&page=p]") on the Library page, plus the collection."""
    url = str(cit.get("url") or "")
    if url.startswith("?"):
        base = LIBRARY_URL_PATH + url
        return base + ("&" + urlencode({"collection": collection}) if collection else "")
    return viewer_url(str(cit.get("path")), int(cit.get("start_line", 1)), int(cit.get("end_line", 1)), cit.get("page"), collection)


def link_targets(citations: Sequence[Mapping[str, Any]], evidence: Sequence[Any], collection: str | None) -> dict[int, str]:
    """[n] → viewer URL: the citation's narrowed lines when known, else the evidence chunk's lines."""
    out: dict[int, str] = {}
    for e in evidence:
        chunk = e.get("chunk") if isinstance(e, Mapping) else getattr(e, "chunk", None)
        n = e.get("n") if isinstance(e, Mapping) else getattr(e, "n", None)
        if chunk is None or n is None:
            continue
        get = chunk.get if isinstance(chunk, Mapping) else (lambda k, c=chunk: getattr(c, k, None))
        if not get("path") or get("path") == PASTED:
            continue  # a pasted selection has no file to open
        out[int(n)] = viewer_url(str(get("path")), int(get("start_line") or 1), int(get("end_line") or 1), get("page"), collection)
    for c in citations:
        if c.get("path") and c.get("path") != PASTED:
            out[int(c["n"])] = citation_url(c, collection)
    return out


def answer_markdown(text: str, targets: Mapping[int, str], titles: Mapping[int, str] | None = None) -> str:
    """The answer as Markdown for ``st.markdown``: its code blocks, lists and tables drawn as such
    (``ui/blocks.py``), every other character of its text escaped, each [n] outside code turned
    into a link to ``targets[n]`` with ``titles[n]`` as its hover text (the cited passage)."""
    out = []
    for b in drop_repeated_markers(split_blocks(text)):
        if b.kind == "code":
            out.append(md_code_block(b.text, b.lang))
        elif b.kind == "list":
            out.append("\n".join(_list_line(it, targets, titles) for it in b.items))
        elif b.kind == "table":
            out.append(_table_md(b, targets, titles))
        else:
            out.append(_linked(b.text, targets, titles, inline=False))
    return "\n\n".join(x for x in out if x)


def md_code_block(body: str, lang: str = "") -> str:
    """A fenced code block whose body is shown verbatim: its fence is longer than any run of
    backticks or tildes in it, so no line of the body can close it."""
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{body}\n{fence}"


def _list_line(item: ListItem, targets: Mapping[int, str], titles: Mapping[int, str] | None) -> str:
    bullet = f"{item.number}." if item.ordered else "-"
    # nested under a "1." parent the content starts 3 columns in, under "-" 2: 4 covers both
    body = "  \n".join(_linked(part, targets, titles, inline=True) for part in item.text.split("\n"))
    return "    " * item.level + f"{bullet} {body}"


def _table_md(b: Block, targets: Mapping[int, str], titles: Mapping[int, str] | None) -> str:
    sep = {"": "---", "left": ":---", "center": ":---:", "right": "---:"}
    rows = ["| " + " | ".join(_linked(c, targets, titles, inline=True) or " " for c in r) + " |" for r in b.rows]
    return "\n".join([rows[0], "| " + " | ".join(sep[a] for a in b.align) + " |", *rows[1:]])


def _linked(text: str, targets: Mapping[int, str], titles: Mapping[int, str] | None, *, inline: bool) -> str:
    """Text escaped (:func:`md_escape`, or :func:`md_inline` for one line), each [n] a link."""
    links: list[str] = []
    titles = titles or {}

    def hold(m: re.Match[str]) -> str:
        parts = []
        for n in parse_marker(m.group(1)) or []:
            url = targets.get(n)
            title = link_title(titles.get(n, ""))
            parts.append((f'[\\[{n}\\]]({url} "{title}")' if title else f"[\\[{n}\\]]({url})") if url else f"\\[{n}\\]")
        links.append("".join(parts) if parts else md_inline(m.group(0)))
        return f"\ue000{len(links) - 1}\ue001"

    held = _MARKER.sub(hold, text.replace("\ue000", "").replace("\ue001", ""))
    escaped = md_inline(held) if inline else md_escape(held)
    return re.sub("\ue000(\\d+)\ue001", lambda m: links[int(m.group(1))], escaped)


def link_title(text: str, limit: int = 600) -> str:
    """Plain text safe inside a Markdown link title ("..."): no quotes, backslashes, line breaks, $ (LaTeX)
    angle, square or round brackets (no tag- or link-like text reaches the page, even as an attribute)."""
    s = normalize_ws(str(text or "")).replace('"', "'").replace("\\", "/").replace("$", "\uff04").replace("<", "\u2039").replace(">", "\u203a")
    # no "[text](url)" shape survives, even inside a title
    s = s.replace("[", "\uff3b").replace("]", "\uff3d").replace("(", "\uff08").replace(")", "\uff09")
    return s if len(s) <= limit else s[: limit - 1] + "…"


def shorten(text: Any, limit: int) -> str:
    """One line of at most ``limit`` characters: the start and the end kept, "…" between
    (a locator's file name and line numbers are at its end)."""
    s = normalize_ws(str(text if text is not None else ""))
    if len(s) <= limit:
        return s
    head = (limit - 1) * 2 // 5
    return s[:head] + "…" + s[len(s) - (limit - 1 - head):]


def expansion_line(terms: Sequence[tuple[str, float]]) -> str:
    """Markdown "expanded with: `term` (0.30) · …": the terms pseudo-relevance feedback added to the
    BM25 query, each a literal code span (they are words of the documents)."""
    return "expanded with: " + " · ".join(f"{md_code(t)} ({w:.2f})" for t, w in terms)


def fields_text(matched: Sequence[str]) -> str:
    """A chunk's field matches ("section:threshold, path:scores"), plain text: the caller escapes it."""
    return ", ".join(matched) if matched else "none"


def fmt_score(v: Any, digits: int = 3) -> str:
    return f"{v:.{digits}f}" if isinstance(v, (int, float)) else "–"


def fmt_ms(v: Any) -> str:
    if not isinstance(v, (int, float)):
        return "–"
    return f"{v / 1000:.2f} s" if v >= 1000 else f"{v:.0f} ms" if v >= 10 else f"{v:.1f} ms"


STAGE_LABELS = {
    "embed": "embed query", "search": "search", "fuse_and_cut": "fuse + cut", "sources": "evidence ready",
    "generate": "generate", "validate": "validate", "total": "total",
}


CACHE_HIT_MS = 0.5  # an embedding this fast came from the encoder's cache, not the model


def latency_line(latency: Mapping[str, Any]) -> str:
    parts = [f"{STAGE_LABELS.get(k, k)} {fmt_ms(v)}" + (" (cache hit)" if k == "embed" and isinstance(v, (int, float))
                                                         and v < CACHE_HIT_MS else "")
             for k, v in latency.items() if k != "total"]
    if "total" in latency:
        parts.append(f"**total {fmt_ms(latency['total'])}**")
    return " · ".join(parts)


BADGE_COLORS = {"ok": "green", "info": "blue", "warn": "orange", "error": "red"}
