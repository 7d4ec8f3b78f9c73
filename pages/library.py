"""Library: ingest folders or uploads, collections, the document browser and the source viewer."""

from __future__ import annotations

from ui import shell

# before the slow imports below: Streamlit may run this page without app.py (ui/shell.py says
# when); the app's frame is drawn at once and runs this page inside it
# ruff: noqa: E402
shell.ensure_frame()

import re

import pandas as pd
import streamlit as st

from ragcore.ingest.read.loaders import kind_for
from ragcore.engine.selection import selection_problem
from ui import library_admin, state, streaming
from ui.notebook import Cell
from ui.cells import render_cell
from ui.render import md_code, md_inline
from ui.viewer import load_source, quoted_selection_lines, viewer_html

rt = shell.page_init()
ss = st.session_state
collection: str = ss["cfg_collection"]
info = rt.info(collection)

st.markdown("## Library")

# ---------------------------------------------------------------- citation links: ?path=…&lines=a-b[&page=p]
qp = st.query_params
link = (qp.get("path"), qp.get("lines"), qp.get("page"), qp.get("collection"))
if link[0] and link != ss.get("lib_link"):
    ss["lib_link"] = link
    a = b = None
    m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+))?\s*", link[1] or "")
    if m:
        a = int(m.group(1))
        b = int(m.group(2) or a)
        a, b = min(a, b), max(a, b)
    page = int(link[2]) if (link[2] or "").isdigit() else None
    ss["lib_doc"] = link[0]
    ss["lib_hl"] = (link[0], a, b, page) if a else None
    ss["lib_page"] = page
    if a:
        ss["lib_from"], ss["lib_to"] = a, b
    ss.pop("lib_whole", None)


def _doc_changed() -> None:
    ss["lib_doc"] = ss["lib_doc_w"]
    ss["lib_hl"] = None
    ss.pop("lib_from", None)
    ss.pop("lib_to", None)
    ss["lib_page"] = None
    if "path" in st.query_params:
        st.query_params.clear()
        ss["lib_link"] = (None, None, None, None)


def _pick_doc() -> None:
    rows = ss["lib_docs_table"].selection.rows
    paths = ss.get("lib_doc_paths") or []
    if rows and rows[0] < len(paths):
        ss["lib_doc_w"] = paths[rows[0]]
        _doc_changed()


tab_view, tab_cols, tab_ingest = st.tabs(["Documents & source viewer", "Collections", "Ingest"])

# ---------------------------------------------------------------- documents + source viewer
with tab_view:
    if info is None:
        st.info(f"The collection '{md_inline(collection)}' does not exist yet: ingest a folder or files in the Ingest tab.",
                icon=":material/info:")
    else:
        try:
            docs = rt.engine.documents(collection)
        except Exception as exc:  # noqa: BLE001
            state.show_error(exc, "Listing the documents")
            docs = []
        paths = [p for p, _ in docs]
        ss["lib_doc_paths"] = paths
        if ss.get("lib_doc") not in paths:
            if ss.get("lib_doc"):
                st.warning(f"{md_inline(ss['lib_doc'])} is not in the collection '{md_inline(collection)}'. "
                           "Choose the collection it belongs to in the sidebar, or pick a document below.")
            ss["lib_doc"] = paths[0] if paths else None
        if not paths:
            st.info("This collection has no documents.")
        else:
            ss["lib_doc_w"] = ss["lib_doc"]
            # the toggle keeps its label's width, the list takes the rest (a 28% column cut the label at 1024 px)
            with st.container(horizontal=True, vertical_alignment="bottom", gap="medium"):
                path = st.selectbox("Document", paths, key="lib_doc_w", on_change=_doc_changed, width="stretch",
                                    format_func=lambda p: f"{p}  ({dict(docs)[p]} chunks)")
                whole = st.toggle("Show the whole document", key="lib_whole", width="content")
            with st.expander(f"Document browser — {len(docs)} documents", icon=":material/folder_open:"):
                st.caption("Select a row to open the document.")
                st.dataframe(
                    pd.DataFrame([{"path": p, "type": kind_for(p) or "?", "chunks": n} for p, n in docs]),
                    hide_index=True, width="stretch", height=min(38 + 35 * len(docs), 420),
                    on_select=_pick_doc, selection_mode="single-row", key="lib_docs_table",
                )
            try:
                view = load_source(rt.engine, info, path)
            except Exception as exc:  # noqa: BLE001
                state.show_error(exc, "Opening the document")
                view = None
            if view is not None:
                pages = view.pages
                page = None
                if pages:
                    if ss.get("lib_page") not in pages:
                        ss["lib_page"] = pages[0]
                    page = st.select_slider("Page", pages, key="lib_page") if len(pages) > 1 else pages[0]
                first, last = view.first_last(page)
                hl_state = ss.get("lib_hl")
                hl = (hl_state[1], hl_state[2]) if hl_state and hl_state[0] == path and hl_state[3] == page else None

                # header: path, kind, where the lines came from, the cited lines' section
                st.markdown(f"#### :material/description: {md_inline(path)}")
                meta = [view.kind, f"{len(view.chunks)} chunks", f"lines {first}–{last}" + (f" of page {page}" if page else "")]
                meta.append({"disk": "from the file on disk", "git": "read from git at the recorded commit"}.get(
                    view.origin, "rebuilt from stored chunks"))
                st.caption(" · ".join(md_inline(x) for x in meta))
                if view.note:
                    st.caption(f":material/info: {md_inline(view.note)}")
                if hl:
                    section = view.section_of(hl[0], hl[1], page)
                    anchor = view.anchor_of(hl[0], hl[1], page)
                    bits = [f"**Cited lines {hl[0]}–{hl[1]}**" if hl[0] != hl[1] else f"**Cited line {hl[0]}**"]
                    if page:
                        bits.append(f"page {page}")
                    if section:
                        bits.append(f"section {md_inline(section)}")
                    if anchor:
                        bits.append(f"anchor {md_code('#' + anchor)}")
                    st.markdown(":material/format_quote: " + " · ".join(bits))

                # selection (line range) to ask about
                ss.setdefault("lib_from", hl[0] if hl else first)
                ss.setdefault("lib_to", hl[1] if hl else min(first + 9, last))
                ss["lib_from"] = min(max(int(ss["lib_from"]), first), last)
                ss["lib_to"] = min(max(int(ss["lib_to"]), ss["lib_from"]), last)
                selection = (int(ss["lib_from"]), int(ss["lib_to"]))

                window = None
                if not whole:
                    centre = hl or selection
                    lo = max(first, centre[0] - 12)
                    window = (lo, max(centre[1] + 40, lo + 60))
                viewer_slot = st.empty()

                def _draw_viewer(answered: Cell | None) -> None:
                    """The viewer, with the lines the latest answer about a selection here quoted marked."""
                    cits = answered.current.citations if answered is not None and answered.current is not None else ()
                    viewer_slot.html(viewer_html(view, page=page, highlight=hl, selection=selection, window=window,
                                                 quoted_lines=quoted_selection_lines(cits, path, page)))

                _draw_viewer(state.load_notebook(rt, collection).get(ss.get("lib_last_cell") or ""))
                if window and (window[0] > first or window[1] < last):
                    st.caption(f"Showing lines {max(window[0], first)}–{min(window[1], last)} of {first}–{last}; "
                               "turn on *Show the whole document* to read it all.")

                # ask about the selected lines
                with st.container(border=True):
                    st.markdown("**Ask about the selected lines** (highlighted in blue)")
                    sc = st.columns([0.16, 0.16, 0.68], vertical_alignment="bottom")
                    sc[0].number_input("From line", min_value=first, max_value=last, step=1, key="lib_from")
                    sc[1].number_input("To line", min_value=first, max_value=last, step=1, key="lib_to")
                    with sc[2]:
                        ctx = state.context_mode_control("lib_context", label="Context", options=("selection", "both"),
                                                         canon="lib_ctx")
                    qc = st.columns([0.82, 0.18], vertical_alignment="bottom")
                    lib_q = qc[0].text_input("Question about these lines", key="lib_question",
                                             placeholder="e.g. What does this passage say about the threshold?")
                    ask = qc[1].button("Ask", type="primary", key="lib_ask", icon=":material/send:", width="stretch")

                def _rerun(cid: str) -> None:
                    ss["lib_pending_rerun"] = cid

                def _delete(cid: str) -> None:
                    rt.notebooks.delete_cell(collection, cid)
                    ss.pop("lib_last_cell", None)

                def _draw(cell: Cell) -> None:
                    st.caption("The answer is also saved as a cell of this collection's notebook.")
                    render_cell(cell, len(state.load_notebook(rt, collection).cells), collection, on_rerun=_rerun, on_delete=_delete)

                s = state.settings()
                shown = False
                if ask:
                    sel_from, sel_to = int(ss["lib_from"]), int(ss["lib_to"])
                    if sel_to < sel_from:
                        sel_from, sel_to = sel_to, sel_from
                    text, numbers = view.selected(sel_from, sel_to, page)  # each text line with its own line number
                    if not (lib_q or "").strip():
                        st.error("Type a question about the selected lines first.", icon=":material/error:")
                    elif problem := selection_problem(text, s.min_selection_chars):
                        st.error(problem, icon=":material/error:")
                    else:
                        cell = Cell(question=lib_q.strip(), context_mode=ctx,  # type: ignore[arg-type]
                                    selection={"text": text, "source": path, "start_line": sel_from, "page": page,
                                               "line_numbers": list(numbers)})
                        ss["lib_last_cell"] = cell.id
                        shown = True
                        try:
                            streaming.stream_cell(rt, cell, collection, title="Selection ·", render_final=_draw)
                            _draw_viewer(cell)
                        except Exception as exc:  # noqa: BLE001
                            state.show_error(exc, "Answering")

                last_id = ss.get("lib_last_cell")
                if last_id and not shown:
                    cell = state.load_notebook(rt, collection).get(last_id)
                    if cell is not None:
                        if ss.pop("lib_pending_rerun", None) == cell.id:
                            streaming.stream_cell(rt, cell, collection, title="Selection ·", render_final=_draw)
                            _draw_viewer(cell)
                        else:
                            _draw(cell)


# ---------------------------------------------------------------- collections, ingest (ui/library_admin.py)
with tab_cols:
    library_admin.collections_tab(rt)
with tab_ingest:
    library_admin.ingest_tab(rt)
