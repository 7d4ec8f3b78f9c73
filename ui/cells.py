"""Rendering of a finished notebook cell: question, stamp, answer, sources, badges, latency, diff."""

from __future__ import annotations

from typing import Any, Callable

import pandas as pd
import streamlit as st

from ragcore.answerability import describe

from .notebook import CONTEXT_LABELS, Cell, Run, badges, config_stamp, diff_runs, locator
from .render import (
    BADGE_COLORS, answer_markdown, fmt_score, latency_line, link_targets, md_escape, md_inline, viewer_params,
)

LIBRARY_PAGE = "pages/library.py"


def badge_row(run: Run, context_mode: str) -> None:
    with st.container(horizontal=True, gap="small"):
        st.badge(CONTEXT_LABELS.get(context_mode, context_mode), icon=":material/filter_center_focus:", color="gray")
        for label, sev in badges(run):
            icon = {"ok": ":material/check_circle:", "error": ":material/error:", "warn": ":material/warning:"}.get(sev)
            st.badge(label, color=BADGE_COLORS.get(sev, "blue"), icon=icon)  # type: ignore[arg-type]


def stamp_caption(run: Run) -> None:
    stamp = config_stamp(run.answer)
    st.caption(" · ".join(f"{md_inline(k)} **{md_inline(v)}**" for k, v in stamp.items()))


def citation_links(run: Run, collection: str) -> None:
    cits = run.citations
    if not cits:
        return
    for c in cits:
        origin = "selection" if c.get("origin") == "selection" else "corpus"
        label = f"\\[{c['n']}\\] {md_inline(locator(c))}"
        if origin == "selection":
            label += f" · from your selection · support {float(c.get('support', 0)):.2f}"
        else:
            section = " › ".join(c.get("section") or [])
            score = c.get("retrieval_score")
            if section:
                label += f" — {md_inline(section)}"
            if isinstance(score, (int, float)):
                label += f" · {md_inline(c.get('score_kind'))} {fmt_score(score)}"
            label += f" · support {float(c.get('support', 0)):.2f} · corpus"
        if c.get("path") and c.get("path") != "(selection)":
            st.page_link(
                LIBRARY_PAGE, label=label, icon=":material/format_quote:" if origin == "corpus" else ":material/select_all:",
                query_params=viewer_params(str(c["path"]), int(c["start_line"]), int(c["end_line"]), c.get("page"), collection),
            )
        else:
            st.caption(label)


def evidence_frame(run: Run) -> pd.DataFrame:
    cited = {c["n"] for c in run.citations}
    rows = []
    for e in run.evidence:
        ch = e.get("chunk") or {}
        rows.append({
            "n": e.get("n"), "cited": e.get("n") in cited, "origin": e.get("origin"), "locator": locator(ch),
            "section": " › ".join(ch.get("section") or []), "cosine": e.get("dense_score"), "BM25": e.get("sparse_score"),
            "fused": e.get("fused_score"), "rank score": f"{e.get('score_kind')}",
        })
    return pd.DataFrame(rows)


EVIDENCE_COLUMNS = {
    "n": st.column_config.NumberColumn("[n]", width="small"),
    "cited": st.column_config.CheckboxColumn("cited", width="small"),
    "cosine": st.column_config.NumberColumn("cosine", format="%.3f", help="Dense score: cosine similarity, -1..1"),
    "BM25": st.column_config.NumberColumn("BM25", format="%.2f", help="Sparse score: BM25 with Qdrant's IDF"),
    "fused": st.column_config.NumberColumn("fused", format="%.4f", help="RRF or weighted fusion score"),
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
        st.dataframe(evidence_frame(run), hide_index=True, width="stretch", column_config=EVIDENCE_COLUMNS)
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
) -> None:
    run = cell.current
    if run is None:
        return
    ans = run.answer
    with st.container(border=True):
        head = st.columns([0.62, 0.38], vertical_alignment="center")
        head[0].markdown(f"**{index}.** {md_inline(cell.question)}")
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
        targets = link_targets(run.citations, run.evidence, collection)
        text = run.text.strip()
        if text:
            st.markdown(answer_markdown(text, targets))
        elif run.outcome != "error":
            st.caption("(no answer text)")
        if ans.get("error_message"):
            (st.error if run.outcome == "error" else st.warning)(md_escape(ans["error_message"]))
        citation_links(run, collection)
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
