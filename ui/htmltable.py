"""Compact score tables as HTML for ``st.html``: the notebook's evidence table and the lab's chunk table.

Why HTML: ``st.dataframe`` (Streamlit 1.67) cannot show a cell's full text on hover (it ignores
Styler tooltips), and both tables must fit 1280 px with long locators and sections shortened and
their full text a hover away. So each long cell shows a shortened text and carries the whole of it
in ``title``, the browser's own tooltip; no script is involved.

Every document-derived string (locator, section, chunk text) is ``html.escape``d, in the cell and
in the attribute: chunk text is data, never markup.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape
from typing import Any, Callable, Literal, Mapping, Sequence

import pandas as pd

from ragcore.textutil import normalize_ws
from .render import shorten

Long = Literal["locator", "section", "text"]


@dataclass(frozen=True)
class Column:
    key: str  # the row's field
    header: str
    width: str  # a CSS width ("3.2em", "27%"), or "auto" for what the others leave
    klass: str  # the cell's CSS class: "num" right-aligns, the rest are for tests and styling
    help: str  # the header's hover text
    digits: int | None = None  # a number shown with this many decimals
    long: Long | None = None  # shortened in the cell, in full on hover


TABLE_CSS = """<style>
.{box}{{width:100%;overflow-x:auto;container-type:inline-size}}
.{box} table{{width:100%;table-layout:fixed;border-collapse:collapse;font-size:13px;line-height:1.45;margin:0}}
.{box} th,.{box} td{{padding:3px 6px;border:0;border-bottom:1px solid rgba(128,128,128,.22);white-space:nowrap;
  overflow:hidden;text-overflow:ellipsis;text-align:left;vertical-align:top}}
.{box} th{{font-weight:600;opacity:.75;border-bottom:1px solid rgba(128,128,128,.45)}}
.{box} .num{{text-align:right;font-variant-numeric:tabular-nums}}
.{box} tr.cut td{{opacity:.55}}
.{box} tr.cited td.st,.{box} tr.kept td.st{{font-weight:600}}
.{box}.wrap th,.{box}.wrap td{{white-space:normal;overflow-wrap:anywhere;overflow:visible}}
.{box}.scroll{{overflow-y:auto}}
.{box}.scroll th{{position:sticky;top:0;background:#fff;z-index:1}}
.{box} td.lr{{direction:rtl;text-align:left}}
.{box} tr.stk{{display:none}}
.{box} tr.stk td{{white-space:normal;overflow-wrap:anywhere;padding-top:0}}
@container (max-width: 900px){{
  .{box} table{{font-size:12px}}
  .{box} th,.{box} td{{padding:3px 4px}}
  .{box} col.c-loc{{width:19% !important}}
  .{box} col.c-sec{{width:11% !important}}
}}
@container (max-width: 700px){{
  .{box}.nw col.c-loc{{width:26% !important}}
  .{box}.nw col.c-sec{{width:16% !important}}
  .{box}.nw col.c-txt{{width:0 !important}}
  .{box}.nw th.txt,.{box}.nw td.txt{{padding:0;font-size:0}}
  .{box}.nw tr.has-stk td{{border-bottom:0}}
  .{box}.nw tr.stk{{display:table-row}}
}}
</style>"""

# a cut candidate's status in both tables, and why it was cut (the status cell's hover)
CUT_LABELS = {"threshold": "cut: threshold", "dedupe": "cut: dedupe", "top_k": "cut: top-K", "filter": "cut: filter",
              "per_doc": "cut: per document"}
CUT_HELP = {
    "threshold": "Cut: its cosine is below the threshold.",
    "dedupe": "Cut: another passage of the same section ranked higher (per-section dedupe).",
    "top_k": "Cut: ranked below the top-K.",
    "filter": "Cut: outside the path filter.",
    "per_doc": "Cut: its document already has as many passages as the evidence allows one document.",
}


SEAT_HELP = ("Kept by a seat, after the top-K: the best passage of a page the top-K lacked (RAGCORE_EVIDENCE_SEATS). "
             "The extractive answer quotes it only when it answers clearly better than the top-K.")


def cut_reason(col: Column, row: Mapping[str, Any]) -> str:
    """The status cell's hover: why the row was cut (``row["cut"]``, a drop reason or ""), or why a
    row past the top-K was kept (``row["seated"]``)."""
    if col.key != "status":
        return ""
    return SEAT_HELP if row.get("seated") else CUT_HELP.get(row.get("cut") or "", "")


PASSAGE_CHARS = 120  # a passage cell shows this much of the chunk; CSS ellipsis cuts it further to fit


def cell_text(col: Column, v: Any) -> str:
    """The full text of a cell: "–" for an absent value (None, <NA>, NaN, empty)."""
    if v is None or v is pd.NA or (isinstance(v, float) and math.isnan(v)):
        return "–"
    if col.digits is not None:
        return f"{float(v):.{col.digits}f}"
    return str(v) if str(v) else "–"


def short_text(long: Long, full: str) -> str:
    """What a long cell shows; CSS ellipsis is the safety net when even that is too wide for its column."""
    if long == "locator":  # keep the file name and lines at the end
        return shorten(full, 30)
    if long == "section":  # the innermost heading says most; the whole path is on hover
        leaf = full.split(" › ")[-1]
        return leaf if leaf == full else "› " + leaf
    flat = normalize_ws(full)
    return flat if len(flat) <= PASSAGE_CHARS else flat[: PASSAGE_CHARS - 1] + "…"


def _shown_html(col: Column, shown: str, narrow: bool) -> str:
    """The cell's content. With ``narrow``, a locator that does not fit its column loses its start, not
    its end: the cell is laid out right to left around a left-to-right text, so its line range stays."""
    if narrow and col.long == "locator":
        return f'<span dir="ltr">{escape(shown, quote=True)}</span>'
    return escape(shown, quote=True)


def _td(col: Column, row: Mapping[str, Any], title_of: Callable[[Column, Mapping[str, Any]], str], narrow: bool = False) -> str:
    full = cell_text(col, row.get(col.key))
    shown = short_text(col.long, full) if col.long and full != "–" else full
    hover = full if col.long else title_of(col, row)
    title = f' title="{escape(hover, quote=True)}"' if hover and hover != "–" else ""
    klass = f"{col.klass} lr" if narrow and col.long == "locator" else col.klass
    return f'<td class="{klass}"{title}>{_shown_html(col, shown, narrow)}</td>'


def _tr(row: Mapping[str, Any], columns: Sequence[Column], klass: str,
        title_of: Callable[[Column, Mapping[str, Any]], str], narrow: bool) -> str:
    """The row. With ``narrow``, a passage column ("txt") is repeated in a row of its own below it, which
    CSS shows instead of the column when the table is narrow (about 560 px at 1024×768, where the column
    was a few px wide)."""
    cells = "".join(_td(c, row, title_of, narrow) for c in columns)
    txt = next((c for c in columns if c.klass == "txt"), None) if narrow else None
    if txt is None:
        return f'<tr class="{escape(klass, quote=True)}">{cells}</tr>'
    stacked = _td(txt, row, title_of).replace('<td class="txt"', f'<td colspan="{len(columns)}" class="stx"', 1)
    return (f'<tr class="{escape((klass + " has-stk").strip(), quote=True)}">{cells}</tr>'
            f'<tr class="{escape((klass + " stk").strip(), quote=True)}">{stacked}</tr>')


def table_html(
    rows: Sequence[Mapping[str, Any]], columns: Sequence[Column], *, box: str,
    row_class: Callable[[Mapping[str, Any]], str] = lambda row: "",
    title_of: Callable[[Column, Mapping[str, Any]], str] = lambda col, row: "",
    max_height_px: int | None = None, wrap: bool = False, narrow: bool = False,
) -> str:
    """``rows`` as a fixed-layout table inside ``<div class="{box}">``, with its own CSS.

    ``row_class`` gives a row its CSS class ("cut" dims it); ``title_of`` a hover text for a short
    cell (a long cell's hover is always its full text). With ``max_height_px`` the table scrolls
    inside a box that high, its header row staying in view (the app's theme is light). With ``wrap``
    a cell's text wraps inside its column instead of being cut (a short table of names and states).
    ``narrow``: a layout for boxes down to ~560 px (the lab at 1024×768): locators keep their line
    range, the passage goes to a row of its own."""
    head = "".join(f'<col class="c-{c.klass}" style="width:{c.width}">' if c.width != "auto" else f'<col class="c-{c.klass}">'
                   for c in columns)
    ths = "".join(f'<th class="{c.klass}" title="{escape(c.help, quote=True)}">{escape(c.header)}</th>' for c in columns)
    body = "".join(_tr(row, columns, row_class(row), title_of, narrow) for row in rows)
    klass = " ".join([box] + (["wrap"] if wrap else []) + (["nw"] if narrow else []))
    scroll = f' class="{klass} scroll" style="max-height:{int(max_height_px)}px"' if max_height_px else f' class="{klass}"'
    return (f'{TABLE_CSS.format(box=box)}<div{scroll}><table><colgroup>{head}</colgroup>'
            f'<thead><tr>{ths}</tr></thead><tbody>{body}</tbody></table></div>')
