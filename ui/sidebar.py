"""The sidebar of every page: the collection (shared by every page), its state, the generator, and a
running ingest with how it ended."""

from __future__ import annotations

import streamlit as st

from ragcore.eval.demo import DEMO_COLLECTION

from .controls import bound
from .jobs import IngestJob
from .process import show_error
from .render import md_code, md_inline
from .runtime import Runtime
from .session_settings import generator_name, settings
from .warmup import ensure_warm


def sidebar(rt: Runtime) -> None:
    """The collection (shared by every page), its state, the generator and a running ingest.

    Context, retrieval mode, top-K and the threshold are the notebook's own controls (above its
    question box), and the lab has its own: one set of controls per job.
    """
    ss = st.session_state
    with st.sidebar:
        job_status(rt)
        try:
            cols = rt.collections()
        except Exception as exc:  # noqa: BLE001
            show_error(exc, "Listing the collections")
            cols = []
        names = [c.name for c in cols]
        if names:
            if ss["cfg_collection"] not in names:
                ss["cfg_collection"] = DEMO_COLLECTION if DEMO_COLLECTION in names else names[0]
            bound(st.selectbox, "Collection", "cfg_collection", key="sb_collection", options=names)
            share_collection(ss["cfg_collection"])
            info = next(c for c in cols if c.name == ss["cfg_collection"])
            ensure_warm(rt, info)
            built = (info.built_at or "").replace("T", " ").replace("+00:00", " UTC")
            st.caption(
                f"{info.documents} documents · {info.chunks} chunks · version {md_code(info.corpus_version or '–')}"
                + (f"  \nbuilt {md_inline(built)}" if built else "")
            )
            stale = rt.staleness(info.name)
            if stale is not None and stale.stale:
                st.caption(f":orange-badge[:material/sync_problem: out of date] {md_inline(stale.summary())}")
        elif rt.job is None or not rt.job.running:
            st.info("No collection yet. Ingest a folder or files on the Library page.", icon=":material/info:")
        s = settings()
        gen = generator_name(s)
        st.markdown("**Generator** " + (f":green-badge[{md_inline(gen)}]" if s.llm.configured else ":gray-badge[extractive]"))
        if not s.llm.configured:
            st.caption("Quotes the evidence; no model needed. Connect an LLM on the Settings page.")


def share_collection(name: str) -> None:
    """The URL names the collection, so a reload (or a copied link) opens the same one."""
    from .share import set_param

    set_param("collection", name)


def job_status(rt: Runtime) -> None:
    """A running ingest in the sidebar of every page, refreshed each second on its own (a
    fragment), and a notification when it ends — the rest of the app stays usable meanwhile."""
    job = rt.job
    running = job is not None and job.running

    @st.fragment(run_every=1.0 if running else None)
    def draw() -> None:
        ss = st.session_state
        j = rt.job
        if j is None:
            return
        if j.running:
            st.progress(j.fraction, text=f"Ingesting into **{md_inline(j.collection)}**")
            st.caption(md_inline(j.status_line()))
            return
        if running:  # it ended while this fragment was refreshing: redraw the whole app (collections changed)
            st.rerun(scope="app")
        if ss.get("rc_job_seen") == j.id:
            return
        ss["rc_job_seen"] = j.id
        if ss.get("rc_job_watch") == j.id:  # this session saw it running: tell it how it ended
            st.toast(job_outcome(j), icon=":material/task_alt:" if j.report else ":material/info:")
        if ss.get("ing_mine") == j.id and j.report is not None:  # this session started it: open what it built
            ss["cfg_collection"] = j.collection

    draw()
    if running:
        st.session_state["rc_job_watch"] = job.id


def job_outcome(job: IngestJob) -> str:
    if job.report is not None:
        r = job.report
        return (f"Ingest into '{job.collection}' done: {r.count('added')} added, {r.count('updated')} updated, "
                f"{r.count('removed')} removed, {len(r.failed)} skipped, {r.chunks_written} chunks in {r.seconds:.0f} s.")
    if job.cancelled:
        return job.cancel_summary()
    return job.error or "The ingest ended."
