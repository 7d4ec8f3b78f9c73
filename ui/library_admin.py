"""The Library's Collections and Ingest tabs: manage collections, run an ingest in the background.

Every change goes through ragcore (``Engine`` and ``ragcore.engine.collections_admin``) on the app's one
Engine; nothing here opens a store of its own.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import streamlit as st

from ragcore.engine.collections_admin import delete_document, rename_collection
from ragcore.ingest.read.loaders import SUPPORTED_SUFFIXES
from ragcore.storage.names import collection_name_problem
from ragcore.types import CollectionInfo

from . import gitpanel, state
from .htmltable import Column, table_html
from .jobs import IngestJob
from .render import md_code, md_escape, md_inline

# folder names that say how documentation is built, not what it is about ("flask/docs/_build/html"):
# a collection is named after the nearest folder above them instead
GENERIC_FOLDERS = frozenset({
    "html", "htm", "docs", "doc", "documentation", "_build", "build", "site", "public", "dist", "out", "output",
    "src", "source", "content", "contents", "pages", "en", "en-us", "latest", "stable", "text", "txt", "md",
    "markdown", "pdf", "files", "data", "corpus", "_site", "www", "manual", "guide", "dirhtml", "singlehtml",
})


def slug(folder: str) -> str:
    """A collection name from a folder: its name in letters, digits, - and _, or the name of the
    nearest folder above it when its own is generic ("…/flask/docs/_build/html" → "flask")."""
    p = Path(folder.strip().rstrip("/")) if folder.strip() else None
    if p is None:
        return ""
    parts = [x for x in p.parts if x not in ("/", "")]
    name = parts[-1] if parts else ""
    for part in reversed(parts):
        if part.lower() not in GENERIC_FOLDERS:
            name = part
            break
    return re.sub(r"[^A-Za-z0-9_-]+", "-", name).strip("-_")[:60]


def _built(c: CollectionInfo) -> str:
    return (c.built_at or "").replace("T", " ").replace("+00:00", " UTC") or "–"


def _state_label(rt: state.Runtime, c: CollectionInfo) -> str:
    job = rt.job
    if job is not None and job.running and job.collection == c.name:
        return "ingesting…"
    st_ = rt.staleness(c.name)
    if st_ is None:
        return "–"
    if not st_.checked:
        why = "see git source" if "git ref" in st_.reason else "not checked (no folder)"
        return ("incomplete · " if st_.incomplete else "") + why
    return ("out of date: " + st_.summary()) if st_.stale else "up to date"


# --------------------------------------------------------------------------- collections

# HTML, its text wrapping in the cell: st.dataframe cut every column at 1400 px ("0.450 (calib",
# "embedding m") and showed the rest only on a hover per cell
COLLECTION_COLUMNS: tuple[Column, ...] = (
    Column("collection", "collection", "11%", "name", "The collection's name"),
    Column("documents", "documents", "6.5em", "num", "Documents in the collection"),
    Column("chunks", "chunks", "5em", "num", "Chunks (passages) in the collection"),
    Column("version", "version", "9%", "ver", "Corpus version: changes with every ingest that changes the collection"),
    Column("abstain bar", "abstain bar", "9%", "bar", "The abstain bar in force for the collection, and where it comes from"),
    Column("built", "built", "10%", "built", "When the collection was last built"),
    Column("state", "state", "auto", "state", "Up to date, out of date (what changed) or incomplete"),
    Column("embedding model", "embedding model", "11%", "model", "The model the collection was built with (and is queried with)"),
    Column("git source", "git source", "9%", "git", "The git ref the collection was built from, and whether it moved"),
    Column("folder", "folder", "13%", "folder", "The folder the collection was ingested from"),
)


def collections_tab(rt: state.Runtime) -> None:
    ss = st.session_state
    try:
        cols = rt.collections(max_age=0)
    except Exception as exc:  # noqa: BLE001
        state.show_error(exc, "Listing the collections")
        return
    if msg := ss.pop("col_msg", None):
        st.success(md_escape(msg), icon=":material/check_circle:")
    if not cols:
        st.info("No collections yet: ingest a folder or files in the Ingest tab.")
        return
    base = state.base_settings()
    git = gitpanel.sources(rt)  # each collection's git source and whether its ref moved
    rows = []
    for c in cols:
        bar, source = rt.engine.abstain_bar(base, c.name)
        rows.append({"collection": c.name, "documents": c.documents, "chunks": c.chunks, "version": c.corpus_version or "–",
                     "abstain bar": f"{bar:.3f} ({source.split(' (')[0]})", "built": _built(c), "state": _state_label(rt, c),
                     "embedding model": _model_label(rt, c.name), "git source": gitpanel.source_text(git.get(c.name)),
                     "folder": c.root or "–"})
    st.html(table_html(rows, COLLECTION_COLUMNS, box="rc-cols", wrap=True))
    st.caption(f"Data directory {md_code(rt.settings.data_dir)} · "
               + (f"Qdrant server {md_inline(rt.settings.qdrant_url)}" if rt.settings.qdrant_url else "embedded Qdrant"))
    names = [c.name for c in cols]
    if "col_manage_next" in ss:  # after a rename or a delete
        nxt = ss.pop("col_manage_next")
        ss.pop("col_manage", None)
        if nxt in names:
            ss["col_manage"] = nxt
    if ss.get("col_manage") not in names:
        ss.pop("col_manage", None)
    default = names.index(ss["cfg_collection"]) if ss.get("cfg_collection") in names else 0
    name = st.selectbox("Manage collection", names, index=default, key="col_manage")
    info = next(c for c in cols if c.name == name)
    job = rt.job
    busy = job is not None and job.running
    if busy and job.collection == name:
        st.info("An ingest into this collection is running; its management waits until it ends.", icon=":material/hourglass:")
    with st.container(border=True):
        _changes_and_reingest(rt, info, busy)
    left, right = st.columns(2, gap="large")
    with left, st.container(border=True):
        _rename(rt, info, busy)
    with right, st.container(border=True):
        _remove_document(rt, info, busy)
    _delete(rt, info, busy)


def _model_label(rt: state.Runtime, name: str) -> str:
    from ragcore.encoders.registry import MINILM_RECORD, record_of

    return (record_of(rt.engine.store.read_meta(name)) or MINILM_RECORD).label


def _changes_and_reingest(rt: state.Runtime, info: CollectionInfo, busy: bool) -> None:
    if info.source.get("mode") in ("ref", "commit"):  # a git ref's collection: re-ingest the ref (gitpanel.py)
        return gitpanel.ref_reingest(rt, info, busy)
    name = info.name
    st.markdown("**Changes on disk and re-ingest**")
    stale = rt.staleness(name)
    if stale is not None and stale.checked:
        if stale.stale:
            st.warning(f"Out of date: {md_inline(stale.summary())} in {md_code(stale.root)} since it was built.",
                       icon=":material/sync_problem:")
            for label, paths in (("added", stale.added), ("changed", stale.changed), ("removed", stale.removed)):
                if paths:
                    st.caption(f"**{label}**: " + ", ".join(md_code(p) for p in paths[:20])
                               + (f" … and {len(paths) - 20} more" if len(paths) > 20 else ""))
        else:
            st.caption(f":material/check_circle: Up to date with {md_code(stale.root)}.")
    elif stale is not None:
        st.caption(md_inline(stale.reason.capitalize() + "."))
    if st.button("Check again", key=f"col_check_{name}", icon=":material/refresh:", type="tertiary"):
        rt.forget_staleness(name)
        st.rerun()
    folder = st.text_input("Folder to re-ingest", value=info.root if info.root and info.root != "(upload)" else "",
                           key=f"col_root_{name}", placeholder="/path/to/the/folder",
                           help="The collection's own folder, or where it is now if it moved: files are matched by "
                                "their path inside the folder, so unchanged files are skipped.")
    if st.button("Re-ingest", key=f"col_reingest_{name}", icon=":material/sync:", disabled=busy or not folder.strip()):
        p = Path(folder.strip()).expanduser()
        if not p.is_dir():
            st.error(f"No such folder: {md_inline(p)}. The path is read on the machine that runs the app.", icon=":material/error:")
        else:
            s = state.settings().with_(collection=name)
            built = dict(info.settings or {})
            if built.get("chunk_size") and built.get("chunk_overlap") is not None:
                s = s.with_(chunk_size=int(built["chunk_size"]), chunk_overlap=int(built["chunk_overlap"]))
            st.session_state["ing_mine"] = state.start_folder_ingest(rt, p, name, s, label=f"Re-ingest of {p}").id
            st.rerun()


def _rename(rt: state.Runtime, info: CollectionInfo, busy: bool) -> None:
    ss = st.session_state
    st.markdown("**Rename**")
    new = st.text_input("New name", key=f"col_new_{info.name}", placeholder="letters, digits, - and _").strip()
    if st.button("Rename", key=f"col_rename_{info.name}", icon=":material/edit:", disabled=busy or not new):
        problem = collection_name_problem(new, "name")
        if problem:
            st.error(problem)
            return
        try:
            with st.spinner(f"Copying {info.chunks} chunks into '{new}'…"):
                rename_collection(rt.engine, info.name, new)
        except Exception as exc:  # noqa: BLE001
            state.show_error(exc, "Renaming the collection")
            return
        old_nb, new_nb = rt.notebooks.path_for(info.name), rt.notebooks.path_for(new)
        if old_nb.exists() and not new_nb.exists():
            old_nb.rename(new_nb)  # the notebook follows its collection
        _after_change(rt)
        if ss.get("cfg_collection") == info.name:
            ss["cfg_collection"] = new
        ss["col_manage_next"] = new  # the selectbox is drawn already: set it on the next run
        ss["col_msg"] = f"Renamed '{info.name}' to '{new}'."
        st.rerun()


def _remove_document(rt: state.Runtime, info: CollectionInfo, busy: bool) -> None:
    ss = st.session_state
    st.markdown("**Remove one document**")
    try:
        docs = [p for p, _ in rt.engine.documents(info.name)]
    except Exception as exc:  # noqa: BLE001
        state.show_error(exc, "Listing the documents")
        return
    path = st.selectbox("Document", docs, index=None, key=f"col_doc_{info.name}", placeholder="Choose a document")
    with st.popover("Remove…", icon=":material/delete:", disabled=busy or not path):
        st.write(f"Remove **{md_inline(path)}** from '{md_inline(info.name)}'? The file on disk is not touched; "
                 "re-ingesting the folder brings it back if it is still there.")
        if st.button("Remove the document", type="primary", key=f"col_doc_rm_{info.name}"):
            try:
                n = delete_document(rt.engine, info.name, str(path))
            except Exception as exc:  # noqa: BLE001
                state.show_error(exc, "Removing the document")
                return
            _after_change(rt)
            ss["col_msg"] = f"Removed {path} ({n} chunks) from '{info.name}'."
            st.rerun()


def _delete(rt: state.Runtime, info: CollectionInfo, busy: bool) -> None:
    ss = st.session_state
    with st.popover(f"Delete '{info.name}'…", icon=":material/delete_forever:", disabled=busy):
        st.warning(f"Delete the collection **{md_inline(info.name)}** ({info.documents} documents, {info.chunks} chunks) "
                   "and its notebook? This cannot be undone; export the notebook first if you need it.",
                   icon=":material/warning:")
        if st.button("Delete permanently", type="primary", key=f"col_delete_{info.name}"):
            try:
                rt.engine.drop(info.name)
                rt.notebooks.path_for(info.name).unlink(missing_ok=True)
            except Exception as exc:  # noqa: BLE001
                state.show_error(exc, "Deleting the collection")
                return
            _after_change(rt)
            ss["col_manage_next"] = None
            ss["col_msg"] = f"Deleted the collection '{info.name}'."
            st.rerun()


def _after_change(rt: state.Runtime) -> None:
    rt.invalidate_collections()
    rt.forget_staleness()
    st.session_state.pop("rc_nb_cache", None)


# --------------------------------------------------------------------------- ingest


def show_report(job: IngestJob) -> None:
    if job.error:
        st.error(md_escape(job.error), icon=":material/error:")
        return
    if job.cancelled:
        st.warning(md_inline(state.job_outcome(job)), icon=":material/cancel:")
        return
    r = job.report
    if r is None:
        return
    st.success(f"{md_inline(job.label)} into **{md_inline(r.collection)}** finished in {r.seconds:.1f} s · "
               f"{r.chunks_written} chunks written · corpus version {md_code(r.corpus_version)}", icon=":material/check_circle:")
    m = st.columns(5)
    for col, key in zip(m, ("added", "updated", "unchanged", "removed", "failed")):
        col.metric(key, r.count(key))
    if r.failed:
        st.markdown("**Skipped files**")
        st.dataframe(pd.DataFrame([{"file": o.path, "reason": o.reason} for o in r.failed]), hide_index=True, width="stretch")
    gitpanel.show_source(r)
    with st.expander("Every file"):
        st.dataframe(pd.DataFrame([{"file": o.path, "status": o.status, "chunks": o.chunks, "reason": o.reason or ""}
                                   for o in r.outcomes]), hide_index=True, width="stretch")


def job_panel(rt: state.Runtime) -> None:
    """The running (or last) ingest with Cancel; refreshed each second on its own while it runs."""
    job = rt.job
    running = job is not None and job.running

    @st.fragment(run_every=1.0 if running else None)
    def panel() -> None:
        j = rt.job
        if j is None:
            return
        if j.running:
            with st.container(border=True):
                st.progress(j.fraction, text=f"{md_inline(j.label)} → **{md_inline(j.collection)}**")
                row = st.columns([0.8, 0.2], vertical_alignment="center")
                row[0].caption(md_inline(j.status_line()))
                if j.cancel_event.is_set():
                    row[1].caption("Cancelling after the current batch…")
                elif row[1].button("Cancel", key=f"ing_cancel_{j.id}", icon=":material/cancel:", width="stretch",
                                   help="Stop after the current batch; what was written is kept, and a re-run completes it."):
                    j.cancel()
                    st.rerun(scope="fragment")
            st.caption("You can use the rest of the app meanwhile; a notification tells you when it is done.")
            return
        if running:  # it ended while this panel was refreshing: redraw the whole page once
            st.rerun(scope="app")
        show_report(j)

    panel()


def ingest_tab(rt: state.Runtime) -> None:
    ss = st.session_state
    s = state.settings()
    names = [c.name for c in rt.collections()]
    job = rt.job
    busy = job is not None and job.running
    st.caption(f"Chunking: {s.chunk_size} words per chunk, {s.chunk_overlap} words overlap (change on the Settings page). "
               f"Supported: Markdown, reST, text, HTML, PDF and source code, up to {s.max_file_bytes / 1e6:.0f} MB per file.")
    fc, uc = st.columns(2, gap="large")
    with fc, st.container(border=True):
        st.markdown("**A folder on this machine**")
        folder = st.text_input("Folder path", key="ing_folder", placeholder="/path/to/docs",
                               help="Read on the machine that runs the app. Unchanged files are skipped; deleted files are removed.")
    with uc, st.container(border=True):
        st.markdown("**Upload files**")
        files = st.file_uploader("Files", accept_multiple_files=True, key="ing_files",
                                 type=sorted(x.lstrip(".") for x in SUPPORTED_SUFFIXES), label_visibility="collapsed",
                                 help=f"Up to {s.max_file_bytes / 1e6:.0f} MB per file.")
    with st.container(border=True):
        git_repo, git_ref = gitpanel.ref_inputs()
    target = _target(names, folder or (f"{git_repo}-{git_ref}" if git_repo and git_ref else ""), files)
    # a new collection takes the model chosen here; an existing one keeps its own (embed_model None)
    model = _embed_model_choice(s) if target and target not in names else None
    if target and target not in names and model is None:
        target = ""  # a model that cannot be used: nothing to start
    s = s.with_(embed_model=model)
    rebuild = st.checkbox("Rebuild from scratch (delete the collection, then ingest the folder)", key="ing_rebuild",
                          disabled=target not in names)
    # a row of buttons as wide as their labels (in columns "Ingest uploaded files" broke over two lines at 1024 px)
    row = st.container(horizontal=True, gap="medium")
    go_folder = row.button("Ingest folder", type="primary", key="ing_go_folder", disabled=busy or not target or not (folder or "").strip())
    go_upload = row.button("Ingest uploaded files", type="primary", key="ing_go_upload", disabled=busy or not target or not files)
    go_ref = row.button("Ingest ref", type="primary", key="ing_go_ref", disabled=busy or not target or not (git_repo and git_ref))
    if go_ref and (jid := gitpanel.start_ref_ingest(rt, git_repo, git_ref, target, s.with_(collection=target), rebuild=rebuild)):
        ss["ing_mine"] = jid
        st.rerun()
    if go_folder:
        p = Path((folder or "").strip()).expanduser()
        if not p.exists():
            st.error(f"No such file or folder: {md_inline(p)}. The path is read on the machine that runs the app.", icon=":material/error:")
        else:
            ss["ing_mine"] = state.start_folder_ingest(rt, p, target, s.with_(collection=target), rebuild=rebuild).id
            st.rerun()  # the sidebar and the panel below start refreshing themselves
    if go_upload and files:
        payload = [(f.name, f.getvalue()) for f in files]
        up = IngestJob(collection=target, label=f"Upload of {len(payload)} file{'s' if len(payload) != 1 else ''}",
                       sizes={Path(n).name: len(d) for n, d in payload})

        def work(job: IngestJob, payload=payload, name: str = target, s=s):
            return rt.engine.ingest_uploads(payload, name, progress=job.progress, chunk_progress=job.chunk_progress, settings=s.with_(collection=name))

        ss["ing_mine"] = rt.start_ingest(up, work).id
        st.rerun()
    job_panel(rt)


def _embed_model_choice(s) -> str | None:
    """The embedding model of the new collection (docs/19-choosing-models.md); it is recorded with it."""
    value = st.text_input("Embedding model", value=s.embed_model or "minilm", key="ing_embed_model",
                          help="minilm (bundled, offline), openai:<model> (the endpoint in RAGCORE_EMBED_BASE_URL), "
                               "onnx:<folder> or fastembed:<name>. Questions on the collection always use it.").strip()
    from ragcore.settings.models import spec_problem

    problem = spec_problem("embed_model", value)
    if problem:
        st.error(problem, icon=":material/error:")
        return None
    return value or "minilm"


def _target(names: list[str], folder: str, files: list) -> str:
    """The collection to ingest into, chosen explicitly: a new one (named after the folder) by default."""
    ss = st.session_state
    st.markdown("**Into**")
    # the choice keeps its width and the name takes the rest (a 40% column broke the two options over two rows at 1024 px)
    row = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
    kind = row.segmented_control("Target", ["A new collection", "An existing collection"], default="A new collection",
                                 key="ing_target_kind", required=True, label_visibility="collapsed")
    if kind == "An existing collection":
        if not names:
            row.caption("No collection yet.")
            return ""
        return row.selectbox("Existing collection", names, index=None, key="ing_existing", placeholder="Choose a collection",
                             label_visibility="collapsed", width="stretch") or ""
    suggested = slug(folder or "") or ("uploads" if files else "")
    name = row.text_input("New collection name", key="ing_new_name", placeholder=suggested or "name of the new collection",
                          label_visibility="collapsed", help="Empty: named after the folder.", width="stretch").strip() or suggested
    problem = collection_name_problem(name) if name else None
    if problem:
        st.error(problem)
        return ""
    job = state.runtime().job
    if name in names and job is not None and job.collection == name and ss.get("ing_mine") == job.id:
        # the collection this session's ingest is creating (or just created): no warning about it
        st.caption(f"{'Building' if job.running else 'Built'} the collection **{md_inline(name)}** (below).")
        return ""
    if name in names:
        st.warning(f"A collection '{md_inline(name)}' already exists: choose *An existing collection* to add to it, "
                   "or another name.", icon=":material/warning:")
        return ""
    if name:
        st.caption(f"Creates the collection **{md_inline(name)}**.")
    ss["ing_resolved"] = name
    return name
