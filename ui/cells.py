"""Rendering of a finished notebook cell: question, stamp, answer, sources, badges, latency, diff."""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd
import streamlit as st

from ragcore.answerability import describe

from .notebook import CONTEXT_LABELS, Cell, Run, badges, config_stamp, diff_runs, locator
from .render import (
    BADGE_COLORS, answer_markdown, fmt_score, latency_line, md_escape, md_inline, shorten, viewer_params,
)
from .viewer import Row, SourceView, viewer_html

LIBRARY_PAGE = "pages/library.py"
MAX_QUESTION_CHARS = 2000  # a question longer than this is refused (paste long text as a selection)
TITLE_CHARS = 240  # a cell's title shows this much of its question; the rest is on hover


def badge_row(run: Run, context_mode: str) -> None:
    with st.container(horizontal=True, gap="small"):
        st.badge(CONTEXT_LABELS.get(context_mode, context_mode), icon=":material/filter_center_focus:", color="gray")
        for label, sev in badges(run):
            icon = {"ok": ":material/check_circle:", "error": ":material/error:", "warn": ":material/warning:"}.get(sev)
            st.badge(label, color=BADGE_COLORS.get(sev, "blue"), icon=icon)  # type: ignore[arg-type]


def stamp_caption(run: Run) -> None:
    stamp = config_stamp(run.answer)
    st.caption(" · ".join(f"{md_inline(k)} **{md_inline(v)}**" for k, v in stamp.items()))


def _evidence_by_n(run: Run) -> dict[int, dict[str, Any]]:
    return {int(e["n"]): e for e in run.evidence if e.get("n") is not None}


def passage_header(c: dict[str, Any], e: dict[str, Any] | None) -> str:
    """[n] path:lines · section · cosine / BM25 / fused · support — the cited passage's provenance."""
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


def passage_html(c: dict[str, Any], e: dict[str, Any] | None) -> str:
    """The evidence chunk's lines with their numbers, the cited lines highlighted (escaped HTML)."""
    ch = (e or {}).get("chunk") or {}
    text = str(ch.get("text") or "")
    start, end = int(ch.get("start_line") or c.get("start_line") or 1), int(ch.get("end_line") or c.get("end_line") or 1)
    lines = text.split("\n")
    if len(lines) == end - start + 1:
        rows = [Row(start + i, start + i, t) for i, t in enumerate(lines)]
    else:  # a chunk whose text does not map 1:1 to lines (PDF, HTML): one block
        rows = [Row(start, end, text)]
    view = SourceView(str(c.get("path") or ""), str(ch.get("kind") or ""), rows, "chunks")
    hl = (int(c.get("start_line") or start), int(c.get("end_line") or end))
    return viewer_html(view, page=None, highlight=hl, selection=None, window=None).replace("max-height:560px", "max-height:300px")


def citation_preview(run: Run, collection: str, key: str) -> None:
    """Beside the answer: pick [n] and read the cited passage in place; 'open in viewer' stays."""
    cits = [c for c in run.citations if c.get("n") is not None]
    if not cits:
        return
    by_n = {int(c["n"]): c for c in cits}
    ev = _evidence_by_n(run)

    @st.fragment
    def panel() -> None:  # a fragment: picking another [n] redraws only this panel
        n = st.pills("Cited passages", list(by_n), format_func=lambda n: f"[{n}]", default=next(iter(by_n)),
                     key=key, help="Pick a citation to read its passage here; hover an [n] in the answer for a quick look.")
        if n is None:
            st.caption("Pick a citation to read its passage.")
            return
        c, e = by_n[int(n)], ev.get(int(n))
        st.caption(md_inline(passage_header(c, e)))
        if e is not None and (e.get("chunk") or {}).get("text"):
            st.html(passage_html(c, e))
        if c.get("path") and c.get("path") != "(selection)":
            st.page_link(LIBRARY_PAGE, label="Open in the source viewer", icon=":material/open_in_new:",
                         query_params=viewer_params(str(c["path"]), int(c["start_line"]), int(c["end_line"]), c.get("page"), collection))

    with st.container(border=True):
        panel()


def evidence_frame(run: Run) -> pd.DataFrame:
    """Narrow enough for 1280 px: [n], cited, the three scores, then shortened locator and section."""
    cited = {c["n"] for c in run.citations}
    rows = []
    for e in run.evidence:
        ch = e.get("chunk") or {}
        where = locator(ch) if e.get("origin") != "selection" else f"selection: {locator(ch)}"
        rows.append({
            "n": f"[{e.get('n')}]" if e.get("n") is not None else "–", "cited": e.get("n") in cited,
            "cosine": e.get("dense_score"), "BM25": e.get("sparse_score"), "fused": e.get("fused_score"),
            "locator": shorten(where, 34), "section": shorten(" › ".join(ch.get("section") or []), 26),
        })
    return pd.DataFrame(rows)


def evidence_styled(run: Run) -> Any:
    df = evidence_frame(run)
    return df.style.format({"cosine": "{:.3f}", "BM25": "{:.2f}", "fused": "{:.4f}"}, na_rep="–") if not df.empty else df


EVIDENCE_COLUMNS = {
    "n": st.column_config.TextColumn("[n]", width=44),
    "cited": st.column_config.CheckboxColumn("cited", width=48),
    "cosine": st.column_config.NumberColumn("cosine", width=64, help="Dense score: cosine similarity, -1..1"),
    "BM25": st.column_config.NumberColumn("BM25", width=58, help="Sparse score: BM25 with Qdrant's IDF"),
    "fused": st.column_config.NumberColumn("fused", width=70, help="RRF or weighted fusion score"),
    "locator": st.column_config.TextColumn("locator", width="medium", help="path:lines, shortened (the [n] preview shows it in full)"),
    "section": st.column_config.TextColumn("section", width="medium", help="Section path, shortened"),
}


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
        st.code("\n".join(f"{op} {text}" for op, text in d.answer_diff if op != " ") or "(only whitespace changed)",
                language="diff", wrap_lines=True)
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


def _plain(v: Any) -> str:
    return "–" if v is None else str(v)


def evidence_details(run: Run) -> None:
    if run.evidence:
        st.dataframe(evidence_styled(run), hide_index=True, width="stretch", column_config=EVIDENCE_COLUMNS)
    sf = sentence_frame(run)
    if not sf.empty:
        st.caption("Sentence checks: support is 0..1, how well the cited evidence backs the sentence.")
        st.dataframe(sf, hide_index=True, width="stretch",
                     column_config={"support": st.column_config.ProgressColumn(min_value=0.0, max_value=1.0, format="%.2f")})
    for a in (run.answer.get("validation") or {}).get("guardrail_actions") or []:
        st.caption(f"Guardrail: {md_inline(a)}")


def support_caption(run: Run) -> None:
    """Why the engine answered or abstained: the support score against the bar in force."""
    meta = run.answer.get("metadata") or {}
    sup, bar = meta.get("support"), meta.get("abstain_bar")
    if not sup or not bar:
        return
    verdict = "Abstained" if run.answer.get("status") == "abstained" else "Answered"
    st.caption(md_inline(f"{verdict}: {describe(sup, float(bar['value']))}; bar {bar['source']}."))


def render_cell(
    cell: Cell, index: int, collection: str, *, show_diff: bool = False,
    on_rerun: Callable[[str], None], on_delete: Callable[[str], None], on_lab: Callable[[str], None] | None = None,
    notice: str | None = None,
) -> None:
    run = cell.current
    if run is None:
        return
    ans = run.answer
    with st.container(border=True):
        head = st.columns([0.62, 0.38], vertical_alignment="center")
        q = cell.question
        head[0].markdown(f"**{index}.** {md_inline(shorten(q, TITLE_CHARS))}", help=md_escape(q[:MAX_QUESTION_CHARS]) if len(q) > TITLE_CHARS else None)
        with head[1], st.container(horizontal=True, horizontal_alignment="right", gap="small"):
            st.button("Re-run", key=f"rerun_{cell.id}", icon=":material/replay:", help="Re-run with the current settings",
                      on_click=on_rerun, args=(cell.id,), type="tertiary")
            if on_lab is not None:
                st.button("Lab", key=f"lab_{cell.id}", icon=":material/science:", help="Open this question in the Retrieval lab",
                          on_click=on_lab, args=(cell.id,), type="tertiary")
            st.button("Delete", key=f"del_{cell.id}", icon=":material/delete:", help="Delete this cell",
                      on_click=on_delete, args=(cell.id,), type="tertiary")
        badge_row(run, cell.context_mode)
        stamp_caption(run)
        if cell.selection and cell.context_mode != "corpus":
            sel = cell.selection
            st.caption(f"Selection: {md_inline(sel.get('source') or 'pasted text')} from line {int(sel.get('start_line') or 1)}"
                       f" ({len(str(sel.get('text') or ''))} characters)")
        if notice:
            st.caption(f":material/sync_problem: {md_inline(notice)}")
        # an inline [n] shows its passage on hover and jumps to the preview beside the answer
        targets = {int(c["n"]): f"#cited-{cell.id}" for c in run.citations}
        if run.citations:
            left, right = st.columns([0.58, 0.42], gap="medium")
        else:
            left, right = st.container(), None
        with left:
            text = run.text.strip()
            if text:
                st.markdown(answer_markdown(text, targets, hover_titles(run)))
            elif run.outcome != "error":
                st.caption("(no answer text)")
            if ans.get("error_message"):
                (st.error if run.outcome == "error" else st.warning)(md_escape(ans["error_message"]))
        if right is not None:
            with right:
                st.html(f'<span id="cited-{cell.id}"></span>')
                citation_preview(run, collection, key=f"cite_{cell.id}_{len(cell.runs)}")
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
