"""Notebook exports: JSON (the complete Answer contract), Markdown and a self-contained HTML page.

Each citation is followed by its passage (the lines [n] points to, as recorded with the run), so a
reader of the export can check every claim without the app. A passage is document text, i.e.
data: in Markdown it sits in a code fence longer than any backtick run in it, in HTML it is
escaped inside ``<pre>``; it is never rendered as markup. It is printed whole (a reader must see
all that was cited); a citation narrowed to some lines of its chunk shows only those lines.
"""

from __future__ import annotations

import html
import json
import re
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from ragcore.citations import MARKER_RE as _MARKER, parse_marker
from ragcore.types import to_jsonable

from ..blocks import Block, drop_repeated_markers, split_blocks
from .model import FORMAT, Cell, Notebook, NotebookError, Run, locator as _locator, utc_now
from .reading import badges, config_stamp


def _exported_cells(nb: Notebook) -> list[Cell]:
    return [c for c in nb.cells if c.current is not None]


def export_json(nb: Notebook) -> str:
    """Every cell with its current run's complete Answer (as ``ragcore ask --json`` prints it)."""
    cells = []
    for c in _exported_cells(nb):
        run = c.current
        assert run is not None
        cells.append({
            "id": c.id, "question": c.question, "context_mode": c.context_mode, "selection": c.selection,
            "outcome": run.outcome, "ran_at": run.ran_at, "answer": run.answer,
            "passages": {str(cit["n"]): run.passage(int(cit["n"])) for cit in run.citations},
        })
    doc = {"format": FORMAT, "collection": nb.collection, "exported_at": utc_now(), "cells": cells}
    return json.dumps(to_jsonable(doc), ensure_ascii=False, indent=2)


# "[x](javascript:…)", "[x](&lt;javascript:…>)" and a reference definition "[x]: javascript:…"
_SCRIPT_LINK = re.compile(r"\[(?=[^\]\n]*\](?:\(\s*(?:&lt;)?\s*|:\s*)(?:javascript|vbscript|data):)", re.I)


def _md_neutral(text: str) -> str:
    """Document text in a Markdown export: raw HTML is shown, never rendered; a link that would
    run script (``[x](javascript:…)``, quoted from a document) is shown as text."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _SCRIPT_LINK.sub(r"\\[", text)


NOT_RECORDED = "The cited passage was not recorded in this notebook."


def _md_fence(text: str) -> str:
    """A fence no line of ``text`` can close: longer than its longest run of backticks."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def _md_passage(run: Run, n: int) -> list[str]:
    """The passage of citation [n] as Markdown lines: a fenced block, verbatim."""
    text = run.passage(n)
    if text is None:
        return ["", f"  *{NOT_RECORDED}*", ""]
    fence = _md_fence(text)
    return ["", f"{fence}text", *text.split("\n"), fence, ""]


def _md_answer(text: str) -> str:
    """The answer in a Markdown export: code blocks verbatim in a fence they cannot close (so
    ``<form>`` inside code stays ``<form>``), lists and tables as such, the rest neutralised."""
    out: list[str] = []
    for b in drop_repeated_markers(split_blocks(text)):
        if b.kind == "code":
            out.append(f"{_md_fence(b.text)}{b.lang}\n{b.text}\n{_md_fence(b.text)}")
        elif b.kind == "list":
            out.append("\n".join("    " * it.level + (f"{it.number}. " if it.ordered else "- ")
                                 + _md_neutral(it.text).replace("\n", "  \n" + "    " * (it.level + 1)) for it in b.items))
        elif b.kind == "table":
            cells = [[_md_neutral(c).replace("|", "\\|") for c in r] for r in b.rows]
            sep = {"": "---", "left": ":---", "center": ":---:", "right": "---:"}
            out.append("\n".join(["| " + " | ".join(cells[0]) + " |", "| " + " | ".join(sep[a] for a in b.align) + " |",
                                  *("| " + " | ".join(r) + " |" for r in cells[1:])]))
        else:
            out.append(_md_neutral(b.text))
    return "\n\n".join(out)


def _html_passage(run: Run, n: int) -> str:
    text = run.passage(n)
    if text is None:
        return f'<p class="stamp"><em>{html.escape(NOT_RECORDED)}</em></p>'
    return f'<pre class="passage">{html.escape(text, quote=True)}</pre>'


def _stamp_line(run: Run) -> str:
    return " · ".join(f"{k}: {v}" for k, v in config_stamp(run.answer).items())


def export_markdown(nb: Notebook) -> str:
    lines = [f"# Notebook — collection `{nb.collection}`", "", f"Exported {utc_now()} · {len(_exported_cells(nb))} cells", ""]
    for i, c in enumerate(_exported_cells(nb), 1):
        run = c.current
        assert run is not None
        lines += [f"## {i}. {_md_neutral(c.question)}", ""]
        if run.read_as:  # a follow-up: what the answer was searched as
            lines += [f"*Read as:* “{_md_neutral(run.read_as)}”", ""]
        lines += [f"*Status:* **{run.outcome}** · {_stamp_line(run)}", ""]
        if c.selection:
            lines += [f"*Selection:* `{c.selection.get('source') or '(pasted text)'}` from line {c.selection.get('start_line', 1)}", ""]
        body = _md_answer(run.text.strip()) or "*(no answer text)*"
        lines += ["> " + ln if ln.strip() else ">" for ln in body.split("\n")]
        lines.append("")
        if run.answer.get("error_message"):
            lines += [f"*Note:* {_md_neutral(str(run.answer['error_message']))}", ""]
        if run.citations:
            lines += ["**Citations**", ""]
            for cit in run.citations:
                loc = _locator(cit)
                section = " › ".join(cit.get("section") or [])
                score = cit.get("retrieval_score")
                score_s = f"{cit.get('score_kind')} {score:.3f}, " if isinstance(score, (int, float)) else ""
                lines.append(
                    f"- [{cit['n']}] `{loc}`" + (f" — {_md_neutral(section)}" if section else "")
                    + f" ({score_s}support {cit.get('support', 0):.2f}, {cit.get('origin', 'corpus')})"
                )
                lines += _md_passage(run, int(cit["n"]))
    return "\n".join(lines).rstrip() + "\n"


_HTML_CSS = """
body{font:15px/1.55 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:860px;margin:2rem auto;padding:0 1rem;color:#1f2328}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem;border-top:1px solid #d0d7de;padding-top:1rem}
.stamp{color:#57606a;font-size:.85rem}.answer{background:#f6f8fa;border-left:3px solid #0969da;padding:.6rem .9rem}.answer p{white-space:pre-wrap;margin:.4rem 0}
.answer pre{background:#fff;border:1px solid #d0d7de;padding:.5rem .7rem;overflow-x:auto}.answer table{border-collapse:collapse}
.answer th,.answer td{border:1px solid #d0d7de;padding:.2rem .5rem}
.badge{display:inline-block;border-radius:9px;padding:0 .5rem;font-size:.8rem;background:#ddf4ff;margin-right:.3rem}
.badge.warn{background:#fff8c5}.badge.error{background:#ffebe9}.badge.ok{background:#dafbe1}
code{font-size:.85rem}sup a{text-decoration:none}ol.cites{font-size:.9rem}
pre.passage{background:#f6f8fa;border-left:3px solid #d0d7de;padding:.5rem .8rem;white-space:pre-wrap;overflow-wrap:anywhere;font-size:.82rem}
"""


def export_html(nb: Notebook) -> str:
    """A self-contained page; every piece of document text is HTML-escaped (no active content)."""
    e = html.escape
    out = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Notebook — {e(nb.collection)}</title><style>{_HTML_CSS}</style></head><body>",
        f"<h1>Notebook — collection <code>{e(nb.collection)}</code></h1>",
        f'<p class="stamp">Exported {e(utc_now())} · {len(_exported_cells(nb))} cells</p>',
    ]
    for i, c in enumerate(_exported_cells(nb), 1):
        run = c.current
        assert run is not None
        out.append(f'<section id="cell-{e(c.id)}"><h2>{i}. {e(c.question)}</h2>')
        if run.read_as:  # a follow-up: what the answer was searched as
            out.append(f'<p class="stamp">Read as: “{e(run.read_as)}”</p>')
        out.append("<p>" + "".join(f'<span class="badge {e(sev)}">{e(label)}</span>' for label, sev in badges(run)) + "</p>")
        out.append(f'<p class="stamp">{e(_stamp_line(run))}</p>')
        answer_html = _html_answer(run.text.strip(), c.id, {int(cit["n"]) for cit in run.citations})
        out.append(f'<div class="answer">{answer_html or "<em>(no answer text)</em>"}</div>')
        if run.answer.get("error_message"):
            out.append(f"<p><em>{e(str(run.answer['error_message']))}</em></p>")
        if run.citations:
            out.append('<ol class="cites">')
            for cit in run.citations:
                section = " › ".join(cit.get("section") or [])
                out.append(
                    f'<li id="c-{e(c.id)}-{int(cit["n"])}" value="{int(cit["n"])}"><code>{e(_locator(cit))}</code>'
                    + (f" — {e(section)}" if section else "")
                    + f' <span class="stamp">({e(str(cit.get("origin", "corpus")))}, support {float(cit.get("support", 0)):.2f})</span>'
                    + _html_passage(run, int(cit["n"])) + "</li>"
                )
            out.append("</ol>")
        out.append("</section>")
    out.append("</body></html>")
    return "\n".join(out)


def _html_linked(text: str, cell_id: str, known: set[int]) -> str:
    """Escaped text, each [n] a link to its citation below (an unknown number stays text)."""
    e = html.escape

    def link(m: re.Match[str]) -> str:
        nums = parse_marker(m.group(1))
        if not nums:  # not a marker ragcore would read (e.g. an absurd range): keep the text
            return e(m.group(0))
        return "".join(f'<sup><a href="#c-{e(cell_id)}-{n}">[{n}]</a></sup>' if n in known else f"[{n}]" for n in nums)

    pieces, last = [], 0
    for m in _MARKER.finditer(text):
        pieces.append(e(text[last : m.start()]))
        pieces.append(link(m))
        last = m.end()
    pieces.append(e(text[last:]))
    return "".join(pieces)


def _html_list(b: Block, cell_id: str, known: set[int]) -> str:
    out: list[str] = []
    stack: list[str] = []  # the open list tags, one per level
    for it in b.items:
        tag = "ol" if it.ordered else "ul"
        while len(stack) > it.level + 1:
            out.append(f"</li></{stack.pop()}>")
        if len(stack) == it.level + 1 and stack[-1] != tag:
            out.append(f"</li></{stack.pop()}>")
        if len(stack) == it.level + 1:
            out.append("</li>")
        while len(stack) < it.level + 1:
            start = f' start="{it.number}"' if it.ordered and it.number != 1 else ""
            out.append(f"<{tag}{start}>")
            stack.append(tag)
        out.append(f"<li>{_html_linked(it.text, cell_id, known)}")
    while stack:
        out.append(f"</li></{stack.pop()}>")
    return "".join(out)


def _html_answer(text: str, cell_id: str, known: set[int]) -> str:
    """The answer as HTML: ``<pre><code>`` for code (escaped, indentation kept), lists, tables,
    paragraphs; every piece of document text ``html.escape``d."""
    e = html.escape
    out: list[str] = []
    for b in drop_repeated_markers(split_blocks(text)):
        if b.kind == "code":
            cls = f' class="language-{e(b.lang)}"' if b.lang else ""
            out.append(f"<pre><code{cls}>{e(b.text)}</code></pre>")
        elif b.kind == "list":
            out.append(_html_list(b, cell_id, known))
        elif b.kind == "table":
            def row(r: tuple[str, ...], tag: str) -> str:
                return "<tr>" + "".join(f'<{tag}{f" style=text-align:{a}" if a else ""}>{_html_linked(c, cell_id, known)}</{tag}>'
                                        for c, a in zip(r, b.align)) + "</tr>"
            out.append(f"<table><thead>{row(b.rows[0], 'th')}</thead><tbody>{''.join(row(r, 'td') for r in b.rows[1:])}</tbody></table>")
        else:
            out.append(f"<p>{_html_linked(b.text, cell_id, known)}</p>")
    return "".join(out)


def export_filename(collection: str, ext: str) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M")
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", collection) or "notebook"
    return f"notebook-{safe}-{stamp}.{ext}"


def cells_from_export(data: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """The cells of a JSON export (for scripts that read exports back)."""
    if data.get("format") != FORMAT:
        raise NotebookError(f"Not a ragcore notebook export (format {data.get('format')!r}, expected {FORMAT!r}).")
    return list(data.get("cells") or [])
