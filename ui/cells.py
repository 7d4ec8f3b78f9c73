"""Rendering of a finished notebook cell: question, stamp, answer, sources, badges, latency, diff."""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

import pandas as pd
import streamlit as st

from ragcore.abstain.answerability import describe

from .htmltable import CUT_LABELS, Column, cut_reason, table_html
from .notebook import CONTEXT_LABELS, Cell, Run, badges, config_stamp, diff_runs, locator
from .render import (
    BADGE_COLORS, answer_markdown, fmt_score, latency_line, md_escape, md_inline, shorten,
)
from .citepanel import anchor, panel_html, sentences_by_citation

LIBRARY_PAGE = "pages/library.py"
MAX_QUESTION_CHARS = 2000  # a question longer than this is refused (paste long text as a selection)
TITLE_CHARS = 240  # a cell's title shows this much of its question; the rest is on hover
# A long notebook draws its newest cells; the older ones are one click away ("Show earlier cells").
# Every delta of an answer makes the browser redraw the page, and that work grows with the cells
# drawn (in a notebook of 50 it took more of the 2 cores than the answer itself: bench/results/browser.md).
SHOWN_CELLS = 10
SHOW_STEP = 20
SHOW_ALL = 1 << 30


def first_shown(n_cells: int, shown: int, keep: int | None = None) -> int:
    """Index of the first cell drawn: the last ``shown`` cells, and from ``keep`` (a linked cell) on."""
    start = max(0, n_cells - max(shown, 0))
    return min(start, keep) if keep is not None and keep >= 0 else start


def earlier_cells_control(hidden: int, on_more: Callable[[int], None]) -> None:
    """The control above the newest cells that draws the older ones (exports always hold them all)."""
    with st.container(horizontal=True, gap="small", vertical_alignment="center", key="nb_earlier"):
        st.caption(f"{hidden} earlier cell{'s' if hidden != 1 else ''} not drawn")
        if hidden > SHOW_STEP:
            st.button(f"Show {SHOW_STEP} more", key="nb_earlier_more", icon=":material/expand_less:",
                      on_click=on_more, args=(SHOW_STEP,), type="tertiary")
        st.button(f"Show all {hidden}", key="nb_earlier_all", icon=":material/unfold_more:",
                  on_click=on_more, args=(SHOW_ALL,), type="tertiary")  # all, also once more cells are answered


def badge_row(run: Run, context_mode: str) -> None:
    """The context mode and the run's badges, as one Markdown line of badge directives (what st.badge
    writes, one element instead of a row of them: every element is a delta the browser redraws for)."""
    parts = [f":gray-badge[:material/filter_center_focus: {md_inline(CONTEXT_LABELS.get(context_mode, context_mode))}]"]
    for label, sev in badges(run):
        icon = {"ok": ":material/check_circle:", "error": ":material/error:", "warn": ":material/warning:"}.get(sev)
        parts.append(f":{BADGE_COLORS.get(sev, 'blue')}-badge[{icon + ' ' if icon else ''}{md_inline(label)}]")
    st.markdown(" ".join(parts))


def stamp_caption(run: Run) -> None:
    stamp = config_stamp(run.answer)
    st.caption(" · ".join(f"{md_inline(k)} **{md_inline(v)}**" for k, v in stamp.items()))


def _evidence_by_n(run: Run) -> dict[int, dict[str, Any]]:
    return {int(e["n"]): e for e in run.evidence if e.get("n") is not None}


def passage_header(c: dict[str, Any], e: dict[str, Any] | None) -> str:
    """[n] path:lines · section · cosine / BM25 / fused · support · answers — the cited passage's provenance."""
    parts = [f"[{c['n']}] {locator(c)}"]
    section = " › ".join(c.get("section") or [])
    if section:
        parts.append(section)
    if c.get("origin") == "selection":
        parts.append("from your selection")
    elif e is not None:
        parts.append(f"cosine {fmt_score(e.get('dense_score'))} · BM25 {fmt_score(e.get('sparse_score'), 2)} · "
                     f"fused {fmt_score(e.get('fused_score'), 4)}")
    parts.append(f"support {float(c.get('support') or 0):.2f}")
    if c.get("answers") is not None:  # whether the quoted evidence answers the question, not only backs the sentence
        parts.append(f"answers the question {float(c['answers']):.2f}")
    return " · ".join(parts)


def hover_titles(run: Run) -> dict[int, str]:
    """[n] → the text shown when the mouse rests on an inline [n]: provenance, then the passage."""
    ev = _evidence_by_n(run)
    out: dict[int, str] = {}
    for c in run.citations:
        e = ev.get(int(c["n"]))
        text = str(((e or {}).get("chunk") or {}).get("text") or "")
        out[int(c["n"])] = passage_header(c, e) + (" — " + text if text else "")
    return out


NEAR_MISSES = 3  # cut candidates shown after the last kept one: what almost made it into the evidence


def _shown_candidates(cands: list[dict[str, Any]], near_misses: int) -> list[dict[str, Any]]:
    """Every candidate ranked down to the last kept one (so a cut above it shows why), then a few near misses."""
    ordered = sorted(cands, key=lambda c: int(c.get("rank") or 0))
    last_kept = max((int(c.get("rank") or 0) for c in ordered if c.get("kept")), default=0)
    above = [c for c in ordered if int(c.get("rank") or 0) <= last_kept]
    return above + [c for c in ordered if int(c.get("rank") or 0) > last_kept][:near_misses]


def _evidence_row(src: dict[str, Any], *, rank: Any, n: Any, cut: str | None, cited: set[int]) -> dict[str, Any]:
    ch = src.get("chunk") or {}
    where = locator(ch) if src.get("origin") != "selection" else f"selection: {locator(ch)}"
    is_cited = n is not None and int(n) in cited
    seated = bool(src.get("seated")) and not cut  # kept after the top-K by a passage seat (the lab's "seat")
    status = CUT_LABELS.get(cut or "", f"cut: {cut}") if cut else (f"{'cited' if is_cited else 'used'} [{n}]" if n is not None else "kept")
    return {
        "rank": rank, "n": n, "status": f"{status} seat" if seated else status, "cited": is_cited, "cut": cut or "",
        "seated": seated,
        "cosine": src.get("dense_score"), "BM25": src.get("sparse_score"), "fused": src.get("fused_score"),
        "locator": where, "section": " › ".join(ch.get("section") or []), "text": str(ch.get("text") or ""),
    }


def evidence_frame(run: Run, near_misses: int = NEAR_MISSES) -> pd.DataFrame:
    """The data behind the notebook's evidence table, full text (the view shortens it): in rank order,
    the evidence [n] and the candidates cut above the last kept one, then ``near_misses`` more cut ones;
    evidence with no candidate (a selection, or an older run whose candidate pool was trimmed) last."""
    cited = {int(c["n"]) for c in run.citations if c.get("n") is not None}
    ev_by_id = {(e.get("chunk") or {}).get("chunk_id"): e for e in run.evidence}
    rows, seen = [], set()
    for cand in _shown_candidates(list(run.answer.get("candidates") or []), near_misses):
        cid = (cand.get("chunk") or {}).get("chunk_id")
        e = ev_by_id.get(cid)
        cut = None if e is not None or cand.get("kept") else str(cand.get("dropped_reason") or "top_k")
        rows.append(_evidence_row(e or cand, rank=cand.get("rank"), n=(e or {}).get("n"), cut=cut, cited=cited))
        seen.add(cid)
    for e in run.evidence:
        if (e.get("chunk") or {}).get("chunk_id") not in seen:
            rows.append(_evidence_row(e, rank=None, n=e.get("n"), cut=None, cited=cited))
    cols = ["rank", "n", "status", "cited", "cut", "seated", "cosine", "BM25", "fused", "locator", "section", "text"]
    return pd.DataFrame(rows, columns=cols).astype(
        {"rank": "Int64", "n": "Int64", "cosine": "float64", "BM25": "float64", "fused": "float64"})


# fixed widths for the short columns, shares of the rest for the text ones, so the table fits its
# box at 1280 px and the scores are never off-screen
EVIDENCE_COLUMNS: tuple[Column, ...] = (
    Column("rank", "rank", "3.2em", "num", "Rank by the retrieval mode's score (– : not a ranked candidate)"),
    Column("status", "kept / cut", "6.8em", "st", "cited [n] / used [n]: evidence number given to the composer (seat: kept after the top-K, hover says why); cut: why it was left out"),
    Column("cosine", "cosine", "4.3em", "num", "Dense score: cosine similarity of question and chunk, -1..1 (the threshold applies to it)", digits=3),
    Column("BM25", "BM25", "3.9em", "num", "Sparse score: BM25 with Qdrant's IDF (0 = no shared terms)", digits=2),
    Column("fused", "fused", "4.7em", "num", "RRF or weighted fusion score", digits=4),
    Column("locator", "locator", "27%", "loc", "path:lines, shortened; hover for the full text", long="locator"),
    Column("section", "section", "19%", "sec", "Section path, shortened; hover for the full text", long="section"),
    Column("text", "passage", "auto", "txt", "The chunk's text; hover for all of it", long="text"),
)


def evidence_table_html(df: pd.DataFrame) -> str:
    """The evidence table as compact HTML for ``st.html`` (``ui/htmltable.py`` says why HTML): every
    document text escaped, long cells shortened with the full text on hover, "–" for an absent value,
    a cut row's reason on its status cell's hover."""
    return table_html(
        df.to_dict("records"), EVIDENCE_COLUMNS, box="rc-ev",
        row_class=lambda r: "cut" if r["cut"] else "cited" if r["cited"] else "used",
        title_of=cut_reason,
    )


def sentence_frame(run: Run) -> pd.DataFrame:
    val = run.answer.get("validation") or {}
    return pd.DataFrame([
        {"sentence": s.get("text"), "cites": ", ".join(str(n) for n in s.get("citations") or []) or "–",
         "support": s.get("support"), "flags": ", ".join(s.get("flags") or []) or "ok"}
        for s in val.get("sentences") or []
    ])


def diff_block(old: Run, new: Run) -> None:
    d = diff_runs(old, new)
    st.markdown(f"**{md_inline(d.summary())}**")
    if d.answer_changed:
        st.caption("Answer, sentence by sentence (− previous run, + this run)")
        st.markdown(diff_markdown(d.answer_diff) or "(only whitespace changed)")
    changes = [*d.added, *d.dropped, *d.moved, *d.rescored]
    if changes:
        frame = pd.DataFrame([
            {"change": c.kind, "locator": c.locator, "was [n]": c.old_n, "now [n]": c.new_n,
             "old score": c.old_score, "new score": c.new_score}
            for c in changes
        ]).astype({"was [n]": "Int64", "now [n]": "Int64", "old score": "float64", "new score": "float64"})
        st.dataframe(
            frame,
            hide_index=True, width="stretch",
            column_config={
                "old score": st.column_config.NumberColumn(format="%.4f"),
                "new score": st.column_config.NumberColumn(format="%.4f"),
            },
        )
    elif new.evidence:
        st.caption(f"Same evidence ({d.unchanged_evidence} pieces, same order).")
    if d.config_changes:
        st.dataframe(
            pd.DataFrame([{"setting": k, "previous": _plain(a), "now": _plain(b)} for k, a, b in d.config_changes]),
            hide_index=True, width="stretch",
        )


def diff_markdown(ops: Sequence[tuple[str, str]]) -> str:
    """The changed sentences and blocks, each after a red − or a green +, drawn as the answer is
    (code as code, markers after their sentence; the text escaped by ``answer_markdown``)."""
    out = []
    for op, text in ops:
        if op == " ":
            continue
        sign = ":red[**−**]" if op == "-" else ":green[**+**]"
        body = answer_markdown(text, {})
        out.append(f"{sign} {body}" if "\n" not in body and not re.match(r"[-`|]|\d+\.", body) else f"{sign}\n\n{body}")
    return "\n\n".join(out)


def _plain(v: Any) -> str:
    return "–" if v is None else str(v)


def evidence_details(run: Run) -> None:
    df = evidence_frame(run)
    if not df.empty:
        st.html(evidence_table_html(df))
        hidden = len(run.answer.get("candidates") or []) - int(df["rank"].notna().sum())
        if hidden > 0:
            st.caption(f"{hidden} more candidate{'s' if hidden != 1 else ''} cut; the Retrieval lab (the cell's Lab button) shows them all.")
    sf = sentence_frame(run)
    if not sf.empty:
        st.caption("Sentence checks: support is 0..1, how well the cited evidence backs the sentence.")
        st.dataframe(sf, hide_index=True, width="stretch",
                     column_config={"support": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="%.2f")})
    for a in (run.answer.get("validation") or {}).get("guardrail_actions") or []:
        st.caption(f"Guardrail: {md_inline(a)}")


def bar_phrase(source: str) -> str:
    """Where the abstain bar in force came from, as a phrase that reads on its own."""
    if source == "settings":
        return "the bar is the one set in the settings (Settings page, abstain bar)"
    return f"the bar was {source}" if source.startswith("calibrated") else f"the bar comes from {source}"


def support_caption(run: Run) -> None:
    """Why the engine answered or abstained: the support score against the bar in force; and, for a
    follow-up, the standalone question it was read as (the previous question's subject carried in)."""
    meta = run.answer.get("metadata") or {}
    if run.read_as:
        st.caption(md_inline(f"Read as: “{run.read_as}”"))
    sup, bar = meta.get("support"), meta.get("abstain_bar")
    if not sup or not bar:
        return
    abstained = run.answer.get("status") == "abstained"
    verdict = "Abstained" if abstained else "Answered"
    line = f"{verdict}: {describe(sup, float(bar['value']))}; {bar_phrase(str(bar['source']))}."
    if abstained:
        line += " The evidence is too weak to answer from: rephrase the question with the documents' words, or lower the bar."
    st.caption(md_inline(line))


_RENDERS: dict[tuple, tuple[str, str]] = {}  # (cell, run, collection version) → (answer Markdown, passages HTML)
_RENDERS_MAX = 600
_SOURCES: dict[tuple, Any] = {}  # (collection, version, path) → SourceView for HTML/PDF line numbers


def _source_loader(collection: str) -> Callable[[str], Any]:
    """path → the document's lines as the Library's viewer reads them (cached per collection version)."""
    from . import state
    from .viewer import load_source

    rt = state.runtime()
    info = rt.info(collection)

    def load(path: str) -> Any:
        if info is None:
            return None
        key = (collection, info.corpus_version, path)
        if key not in _SOURCES:
            try:
                _SOURCES[key] = load_source(rt.engine, info, path)
            except Exception:  # noqa: BLE001 - the chunk's own text is the fallback
                _SOURCES[key] = None
            if len(_SOURCES) > 200:
                _SOURCES.pop(next(iter(_SOURCES)))
        return _SOURCES[key]

    return load


def cell_renders(cell: Cell, run: Run, collection: str) -> tuple[str, str]:
    """The cell's answer Markdown and its passages panel, computed once per run: redrawing a long
    notebook re-sends them but does not rebuild them."""
    key = (cell.id, run.ran_at, len(cell.runs), collection)
    hit = _RENDERS.get(key)
    if hit is not None:
        return hit
    targets = {int(c["n"]): "#" + anchor(cell.id, int(c["n"])) for c in run.citations}
    text = run.text.strip()
    md = answer_markdown(text, targets, hover_titles(run)) if text else ""
    panel = ""
    if run.citations:
        ev = _evidence_by_n(run)
        headers = {int(c["n"]): passage_header(c, ev.get(int(c["n"]))) for c in run.citations}
        panel = panel_html(cell.id, run.citations, ev, headers, sentences_by_citation(run.answer), collection,
                           _source_loader(collection))
    _RENDERS[key] = (md, panel)
    while len(_RENDERS) > _RENDERS_MAX:
        _RENDERS.pop(next(iter(_RENDERS)))
    return md, panel


def answer_and_passages(cell: Cell, run: Run, collection: str) -> None:
    """The answer, and beside it (below it when the window is narrow: ui/shell.py's CSS) its cited
    passages; an inline [n] shows its passage on hover, a click opens it in the panel."""
    md, panel = cell_renders(cell, run, collection)
    ans = run.answer
    with st.container(key=f"ans_{cell.id}"):
        if run.citations:
            left, right = st.columns([0.56, 0.44], gap="medium")
        else:
            left, right = st.container(), None
        with left:
            if md:
                st.markdown(md)
            elif run.outcome != "error":
                st.caption("(no answer text)")
            if ans.get("error_message"):
                (st.error if run.outcome == "error" else st.warning)(md_escape(ans["error_message"]))
        if right is not None:
            with right:
                st.html(panel)



def _cell_head(
    cell: Cell, index: int, *, on_rerun: Callable[[str], None], on_delete: Callable[[str], None],
    on_lab: Callable[[str], None] | None, other_refs: Sequence[tuple[str, str]],
    on_rerun_on: Callable[[str, str], None] | None,
) -> None:
    """The cell's number and question, then its buttons as one row that never splits: in a narrow
    window the whole row moves below the title (two columns put Re-run and Lab above the title and
    Delete below it at 1024 px)."""
    q = cell.question
    with st.container(horizontal=True, vertical_alignment="center", gap="small", key=f"head_{cell.id}"):
        st.markdown(f"**{index}.** {md_inline(shorten(q, TITLE_CHARS))}", width="stretch",
                    help=md_escape(q[:MAX_QUESTION_CHARS]) if len(q) > TITLE_CHARS else None)
        with st.container(horizontal=True, wrap=False, horizontal_alignment="right", gap="small", width="content",
                          key=f"btns_{cell.id}"):
            st.button("Re-run", key=f"rerun_{cell.id}", icon=":material/replay:", help="Re-run with the current settings",
                      on_click=on_rerun, args=(cell.id,), type="tertiary")
            if other_refs and on_rerun_on is not None and cell.context_mode != "selection":
                with st.popover("On ref…", icon=":material/call_split:", help="Re-run on another ref of this repository"):
                    for label, other in other_refs:
                        st.button(label, key=f"rerun_on_{cell.id}_{other}", on_click=on_rerun_on, args=(cell.id, other),
                                  type="tertiary")
            if on_lab is not None:
                st.button("Lab", key=f"lab_{cell.id}", icon=":material/science:", help="Open this question in the Retrieval lab",
                          on_click=on_lab, args=(cell.id,), type="tertiary")
            st.button("Delete", key=f"del_{cell.id}", icon=":material/delete:", help="Delete this cell",
                      on_click=on_delete, args=(cell.id,), type="tertiary")


def render_cell(
    cell: Cell, index: int, collection: str, *, show_diff: bool = False,
    on_rerun: Callable[[str], None], on_delete: Callable[[str], None], on_lab: Callable[[str], None] | None = None,
    notice: str | None = None, selected: bool = False,
    other_refs: Sequence[tuple[str, str]] = (), on_rerun_on: Callable[[str, str], None] | None = None,
) -> None:
    """``other_refs``: (label, collection) of the same repository's other refs, offered as "Re-run on"
    (the run is compared with this one like any re-run)."""
    run = cell.current
    if run is None:
        return
    ans = run.answer
    # the selected cell (the URL's ?cell=…, the newest answer) is outlined: a shared link points at it
    with st.container(border=True, key=f"cell_{cell.id}{'_sel' if selected else ''}"):
        _cell_head(cell, index, on_rerun=on_rerun, on_delete=on_delete, on_lab=on_lab, other_refs=other_refs,
                   on_rerun_on=on_rerun_on)
        badge_row(run, cell.context_mode)
        stamp_caption(run)
        if cell.selection and cell.context_mode != "corpus":
            sel = cell.selection
            st.caption(f"Selection: {md_inline(sel.get('source') or 'pasted text')} from line {int(sel.get('start_line') or 1)}"
                       f" ({len(str(sel.get('text') or ''))} characters)")
        if notice:
            st.caption(f":material/sync_problem: {md_inline(notice)}")
        answer_and_passages(cell, run, collection)
        latency = (ans.get("metadata") or {}).get("latency_ms") or {}
        if latency:
            st.caption(":material/timer: " + latency_line(latency))
        support_caption(run)
        if cell.previous is not None:
            with st.expander(f"What changed since the previous run ({len(cell.runs)} runs)", expanded=show_diff,
                             icon=":material/difference:"):
                diff_block(cell.previous, run)
        if run.evidence or (ans.get("validation") or {}).get("sentences"):
            meta = ans.get("metadata") or {}
            retrieved = meta.get("chunks_retrieved", len(ans.get("candidates") or []))
            n_sel = sum(1 for e in run.evidence if e.get("origin") == "selection")
            parts = [f"{len(run.evidence)} used"]
            if retrieved:
                parts.append(f"of {retrieved} retrieved")
            if n_sel:
                parts.append(f"({n_sel} from the selection)")
            label = "Evidence and checks — " + " ".join(parts)
            exp = st.expander(label, icon=":material/fact_check:", key=f"ev_{cell.id}_{len(cell.runs)}", on_change="rerun")
            with exp:
                if getattr(exp, "open", True):  # drawn only when opened: a long notebook stays light
                    evidence_details(run)
