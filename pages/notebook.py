"""Notebook: ask questions in cells; re-run, compare, stop, export."""

from __future__ import annotations

from ui import shell

# before the slow imports below: Streamlit may run this page without app.py (ui/shell.py says
# when); the app's frame is drawn at once and runs this page inside it
# ruff: noqa: E402
shell.ensure_frame()

import streamlit as st

from ragcore.engine.selection import selection_problem
from ui import firststart, gitpanel, share, state, streaming
from ui.notebook.model import recent_turns
from ui.notebook import Cell, export_filename, export_html, export_json, export_markdown
from ui.cells import MAX_QUESTION_CHARS, SHOWN_CELLS, earlier_cells_control, first_shown, render_cell
from ui.render import md_escape, md_inline

SLIDER_PX = 170  # the top-K and threshold sliders' width: the four controls fit one row at 1400 px

rt = shell.page_init()
ss = st.session_state
collection: str = ss["cfg_collection"]

st.markdown("## Notebook")
if rt.info(collection) is None and firststart.building(rt, collection) is None:
    st.info(f"The collection '{md_inline(collection)}' does not exist yet. Ingest documents first.", icon=":material/info:")
    st.page_link("pages/library.py", label="Open the Library", icon=":material/library_books:")
    st.stop()

nb = state.load_notebook(rt, collection)
pending = ss.pop("nb_pending", None)


def _follow_link() -> tuple[Cell | None, str | None]:
    """A link that opened the notebook (?cell=…&q=…): (the cell to scroll to, a question to ask). The
    link's question picks its cell when the notebook has it (the latest so asked), else it is asked."""
    url_cell, q = share.link_target(ss)
    cell = nb.get(url_cell) if url_cell else None
    if q and (cell is None or cell.question.strip() != q):
        cell = next((c for c in reversed(nb.cells) if c.question.strip() == q and c.current is not None), None)
        if cell is None:
            return None, q
    return cell, None


link_cell, link_ask = _follow_link()
if link_ask and not pending:  # a link carries a question, never a passage: it asks the corpus
    pending = {"kind": "new", "question": link_ask, "context": "corpus"}
if link_cell is not None:
    ss["nb_selected_cell"] = link_cell.id
stale = rt.staleness(collection)
stale_notice = (f"Answered from '{collection}' while its folder has changes ({stale.summary()}): the answer may miss "
                "them. Bring it up to date below." if stale is not None and stale.stale else None)


def _rerun(cell_id: str) -> None:
    ss["nb_pending"] = {"kind": "rerun", "id": cell_id}


def _rerun_on(cell_id: str, other: str) -> None:
    """Re-run on another ref's collection of the same repository: the diff shows what the ref changes."""
    ss["nb_pending"] = {"kind": "rerun", "id": cell_id, "on": other}


other_refs = gitpanel.sibling_refs(rt, collection)  # the same repository's other refs (collections)


def _delete(cell_id: str) -> None:
    try:
        state.remember_notebook(rt, rt.notebooks.delete_cell(collection, cell_id))
    except Exception as exc:  # noqa: BLE001
        ss["nb_error"] = state.friendly(exc, "Deleting the cell")


def _lab(cell_id: str) -> None:
    cell = state.load_notebook(rt, collection).get(cell_id)
    if cell is not None:  # a follow-up is searched as the answer read it, not as typed ("How do I turn it on?")
        ss["lab_question"] = cell.read_as or cell.question
        ss["nb_goto_lab"] = True


def _submit() -> None:
    q = (ss.get("nb_question") or "").strip()
    if not q:
        ss["nb_error"] = "Type a question first: the question was empty."
    elif len(q) > MAX_QUESTION_CHARS:
        ss["nb_error"] = (f"The question is {len(q):,} characters long; the limit is {MAX_QUESTION_CHARS:,}. "
                          "Shorten it, or paste a long passage as Selected text and ask about it.")
    else:
        ss["nb_pending"] = {"kind": "new", "question": q}


if ss.pop("nb_goto_lab", False):
    st.switch_page("pages/retrieval_lab.py")

# the count, exports and Clear sit above the cells but are drawn by the fragment below (into this
# placeholder), last: a question answered in the fragment changes them, and a full run is not made for it
toolbar = st.empty()
if err := ss.pop("nb_error", None):
    st.error(md_escape(err))

# ---------------------------------------------------------------- cells
# The cells already in the notebook are drawn by the page's full run; everything that happens at
# the question box (asking, streaming, the cells answered since, their buttons, the controls) runs
# in one fragment below them, so pressing Enter in a notebook of 50 cells reruns only that
# fragment: the old cells are neither recomputed nor re-sent (docs/09 says so).

def _from_current(cell: Cell) -> bool:
    """Was the cell's latest run answered from the collection as it is now (not an older build)?"""
    meta = (cell.current.answer.get("metadata") or {}) if cell.current is not None else {}
    info = rt.info(collection)
    return info is not None and cell.context_mode != "selection" and meta.get("corpus_version") == info.corpus_version


def _renderer(index: int, *, show_diff: bool = False):
    def draw(cell: Cell) -> None:
        render_cell(cell, index, collection, show_diff=show_diff, on_rerun=_rerun, on_delete=_delete, on_lab=_lab,
                    other_refs=other_refs, on_rerun_on=_rerun_on,
                    notice=stale_notice if cell.current is not None and _from_current(cell) else None,
                    selected=ss.get("nb_selected_cell") == cell.id)
    return draw


def _draw_cells(cells: list[Cell], first_index: int, pending: dict | None) -> None:
    for i, cell in enumerate(cells, first_index):
        if pending and pending["kind"] == "rerun" and pending["id"] == cell.id:
            try:
                streaming.stream_cell(rt, cell, collection, title=f"{i}.", render_final=_renderer(i, show_diff=True),
                                      ask_on=pending.get("on"))
            except Exception as exc:  # noqa: BLE001
                state.show_error(exc, "Re-running the cell")
            continue
        _renderer(i)(cell)


frozen = len(nb.cells)  # the cells this full run draws; the fragment draws those answered after it
ss["nb_frozen"] = (collection, frozen)
shown: dict = ss.setdefault("nb_shown", {})  # per collection: how many of the newest cells are drawn
keep = next((i for i, c in enumerate(nb.cells) if link_cell is not None and c.id == link_cell.id), None)
start = first_shown(frozen, shown.get(collection, SHOWN_CELLS), keep)
shown[collection] = max(shown.get(collection, SHOWN_CELLS), frozen - start)  # a linked older cell stays drawn


def _show_more(n: int) -> None:
    shown[collection] = frozen - start + n


if start:
    earlier_cells_control(start, _show_more)
_draw_cells(list(nb.cells)[start:], start + 1, pending)
if link_cell is not None:  # outlined above (selected); bring it into view once it is drawn
    st.html(share.scroll_to_cell_css(link_cell.id))
_sel = nb.get(ss.get("nb_selected_cell") or "")
share.write(share.notebook_params(_sel.id, _sel.question) if _sel is not None else {})  # a link reproduces it


@st.fragment
def live() -> None:
    """The new cells, the question box and its controls: Enter reruns only this."""
    pending_here = ss.pop("nb_pending", None)
    if ss.get("nb_goto_lab"):
        st.rerun(scope="app")  # switching pages is the whole app's business
    if err := ss.pop("nb_error", None):
        st.error(md_escape(err))
    cur = state.load_notebook(rt, collection)
    fz = ss.get("nb_frozen", (collection, 0))
    start = fz[1] if fz[0] == collection else len(cur.cells)
    _draw_cells(list(cur.cells)[start:], start + 1, pending_here)
    s = state.settings()
    context: str = ss["cfg_context"]
    if pending_here and pending_here["kind"] == "new":
        context = pending_here.get("context") or context
        _answer_new(pending_here["question"], context, len(cur.cells) + 1, s, recent_turns(cur.cells))
    elif not cur.cells:
        st.info(firststart.example_prompt(rt, collection), icon=":material/lightbulb:")
    _question_box()
    with toolbar.container():
        _toolbar(state.load_notebook(rt, collection), asking=bool(ss.get("nb_pending")))


def _answer_new(question: str, context: str, index: int, s, history: list[tuple[str, str]]) -> None:
    sel = None
    if context in ("selection", "both"):
        if problem := selection_problem(ss.get("nb_passage"), s.min_selection_chars):
            st.error(problem, icon=":material/error:")
            return
        sel = {"text": ss.get("nb_passage") or "", "source": None, "start_line": 1}
    cell = Cell(question=question, context_mode=context, selection=sel)  # type: ignore[arg-type]
    if not firststart.wait_for_demo(rt, collection):
        ss["nb_pending"] = {"kind": "new", "question": question}  # asked again on the next run
        return
    ss["nb_selected_cell"] = cell.id  # the newest answer is the selected cell: outlined when drawn, named in the URL
    try:
        streaming.stream_cell(rt, cell, collection, title=f"{index}.", render_final=_renderer(index), history=history)
        share.write(share.notebook_params(cell.id, cell.question))
    except Exception as exc:  # noqa: BLE001
        state.show_error(exc, "Answering")


def _question_box() -> None:
    with st.container(border=False, key="nb_controls"):
        # a row that wraps control by control: in four columns at 1024 px the segmented controls
        # broke into a stack of options ("Both" on its own line) and the slider labels wrapped
        with st.container(horizontal=True, gap="medium", vertical_alignment="bottom", key="nb_opts"):
            context = state.context_mode_control("nb_context", label="Context")
            state.retrieval_mode_control("nb_mode", label="Retrieval")
            with st.container(width=SLIDER_PX):
                state.top_k_control("nb_top_k")
            with st.container(width=SLIDER_PX):
                state.threshold_control("nb_threshold")
        s = state.settings()
        if context in ("selection", "both"):
            st.text_area(
                "Selected text", key="nb_passage", height=110,
                placeholder="Paste the passage to ask about (or select lines in the Library's source viewer).",
                help=f"At least {s.min_selection_chars} characters.",
            )
        retrieval = "" if context == "selection" else f"{s.retrieval_mode} · top-K {s.top_k} · threshold {s.threshold:.2f} · "
        st.caption(f"Asking **{md_inline(collection)}** · {retrieval}generator **{md_inline(state.generator_name(s))}**")
        if stale is not None and stale.stale:
            sc = st.columns([0.75, 0.25], vertical_alignment="center")
            sc[0].warning(f"'{md_inline(collection)}' is out of date: {md_inline(stale.summary())} since it was built. "
                          "Answers come from the collection as it was built.", icon=":material/sync_problem:")
            if sc[1].button("Bring up to date", key="nb_refresh", icon=":material/sync:",
                            disabled=not stale.checked or (rt.job is not None and rt.job.running)):
                state.start_refresh(rt, collection, stale.root)
                st.rerun(scope="app")
    with st.container(key="nb_chatbox"):
        st.chat_input(f"Ask a question about '{collection}'…", key="nb_question", on_submit=_submit,
                      max_chars=MAX_QUESTION_CHARS)


def _toolbar(nb, *, asking: bool) -> None:
    """The notebook's cell count, exports and Clear, for the notebook as saved now (``asking``: a
    question is waiting to be answered, so the exports are offered already)."""
    bar = st.columns([0.5, 0.5], vertical_alignment="center")
    n = len(nb.cells)
    bar[0].caption(f"Collection **{md_inline(collection)}** · {n} cell{'s' if n != 1 else ''} · saved automatically",
                   help=f"Saved in {rt.notebooks.path_for(collection)}")
    with bar[1], st.container(horizontal=True, horizontal_alignment="right", gap="small"):
        has_cells = any(c.current is not None for c in nb.cells) or asking

        def _export(kind: str):
            # made when clicked, from the notebook on disk: it includes the cells answered since this run
            def make() -> str:
                fresh = rt.notebooks.load(collection)
                return {"md": export_markdown, "html": export_html, "json": export_json}[kind](fresh)
            return make

        st.download_button("Markdown", data=_export("md"), file_name=export_filename(collection, "md"), mime="text/markdown",
                           icon=":material/download:", on_click="ignore", disabled=not has_cells, key="dl_md")
        st.download_button("HTML", data=_export("html"), file_name=export_filename(collection, "html"), mime="text/html",
                           icon=":material/download:", on_click="ignore", disabled=not has_cells, key="dl_html")
        st.download_button("JSON", data=_export("json"), file_name=export_filename(collection, "json"), mime="application/json",
                           icon=":material/download:", on_click="ignore", disabled=not has_cells, key="dl_json")
        with st.popover("Clear", icon=":material/delete_sweep:", disabled=not nb.cells):
            st.write("Delete every cell of this notebook? This cannot be undone; export first if you need them.")
            if st.button("Delete all cells", type="primary", key="nb_clear"):
                try:
                    state.remember_notebook(rt, rt.notebooks.clear(collection))
                except Exception as exc:  # noqa: BLE001
                    state.show_error(exc, "Clearing the notebook")
                st.rerun(scope="app")


firststart.demo_progress(rt, collection)
if pending and pending["kind"] == "new":
    ss["nb_pending"] = pending  # a question asked from a full run (a link, a reload) is answered by the fragment
live()

