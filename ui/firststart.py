"""The first start: the demo collection builds in the background while the app is already usable.

On a fresh data folder the app used to ingest and calibrate the guide before drawing anything
(16 s on a quiet machine, 30–47 s under load, the main area blank meanwhile). Now the build is the
app's ingest job (``ui/jobs.py``): the sidebar and the notebook show its progress, the Library
its Cancel, and a question asked meanwhile waits for it with a visible status.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import streamlit as st

from ragcore.eval.demo import DEMO_COLLECTION, demo_corpus_dir, ensure_demo_collection

from .jobs import IngestJob
from .render import md_escape, md_inline
from .runtime import friendly

if TYPE_CHECKING:
    from ragcore.types import IngestReport

    from .runtime import Runtime

GUIDE_EXAMPLE = "What does the threshold apply to?"


def _demo_missing(rt: "Runtime") -> bool:
    store = rt.engine.store
    return not (store.exists(DEMO_COLLECTION) and store.count(DEMO_COLLECTION) > 0)


def start_demo(rt: "Runtime") -> None:
    """Build the demo collection as a background job when it is missing (once per process);
    when it exists, finish its calibration here (a no-op but on the first start of an old folder)."""
    if _demo_missing(rt) and demo_corpus_dir().is_dir():
        root = demo_corpus_dir()
        sizes = {str(p.relative_to(root)): p.stat().st_size for p in sorted(root.rglob("*")) if p.is_file()}
        job = IngestJob(collection=DEMO_COLLECTION, label="First start: the demo corpus (a copy of the user guide)",
                        root=str(root), sizes=sizes)

        def work(job: IngestJob) -> "IngestReport":
            report = ensure_demo_collection(rt.engine, progress=job.progress, chunk_progress=job.chunk_progress)
            job.current = "loading the search index"
            rt.engine.encoder.encode(["warm up the embedding model"])
            rt.engine.hybrid_search.index(DEMO_COLLECTION)
            rt.demo_report = report
            assert report is not None  # the collection was missing: it was ingested
            return report

        rt.start_ingest(job, work)
        return
    rt.demo_report = ensure_demo_collection(rt.engine)


def building(rt: "Runtime", collection: str) -> IngestJob | None:
    """The job building ``collection`` right now, if any."""
    job = rt.job
    return job if job is not None and job.running and job.collection == collection else None


def demo_progress(rt: "Runtime", collection: str) -> None:
    """While ``collection`` is being built: its progress, refreshed each second; the page redraws when it is done."""
    if building(rt, collection) is None:
        return

    @st.fragment(run_every=1.0)
    def draw() -> None:
        job = building(rt, collection)
        if job is None:
            st.rerun(scope="app")
        st.progress(job.fraction, text=f"Building **{md_inline(collection)}** — you can type your question now; "
                                       "it is answered as soon as the collection is ready.")
        st.caption(md_inline(job.status_line()))

    with st.container(border=True, key="nb_building"):
        draw()


def wait_for_demo(rt: "Runtime", collection: str, poll_s: float = 0.25) -> bool:
    """A question asked while its collection is being built waits for it, with a visible status.
    Returns False when the build failed or was cancelled (the page says so)."""
    job = building(rt, collection)
    if job is None:
        return True
    with st.status(f"Waiting for '{collection}' to finish building…", expanded=True) as box:
        line = st.empty()
        while job.running:
            line.caption(md_inline(job.status_line()))
            time.sleep(poll_s)
        box.update(label=f"'{collection}' is ready.", state="complete", expanded=False)
    rt.invalidate_collections()
    if job.report is None:
        st.error(md_escape(job.error or f"Building '{collection}' did not finish; ask again once it is built."))
        return False
    return True


def example_question(rt: "Runtime", collection: str) -> str:
    """A question the current collection can answer: the guide's own example, else one about the
    heading of its largest document (an empty Flask notebook must not suggest the guide's question)."""
    if collection == DEMO_COLLECTION:
        return GUIDE_EXAMPLE
    info = rt.info(collection)
    key = (collection, info.corpus_version if info else None)
    cache: dict = st.session_state.setdefault("rc_examples", {})
    if key not in cache:
        cache[key] = _question_from_headings(rt, collection)
    return cache[key]


def _question_from_headings(rt: "Runtime", collection: str) -> str:
    try:
        docs = sorted(rt.engine.documents(collection), key=lambda d: -d[1])[:3]
        for path, _n in docs:
            for ch in rt.engine.document_chunks(path, collection=collection)[:8]:
                for heading in [*ch.section[1:], *ch.section[:1], ch.title or ""]:
                    h = " ".join(str(heading).split()).strip(" #:")
                    if 3 <= len(h) <= 60 and not h.lower().startswith(("index", "contents", "table of")):
                        return f"What does the documentation say about {h}?"
            stem = Path(path).stem.replace("-", " ").replace("_", " ").strip()
            if stem:
                return f"What is {stem}?"
    except Exception:  # noqa: BLE001 - a suggestion must never break the page
        pass
    return "What is this collection about?"


def example_prompt(rt: "Runtime", collection: str) -> str:
    return (f"Ask a question below, for example *{md_inline(example_question(rt, collection))}* Each question becomes "
            "a cell with its answer, citations, evidence, checks and timings; cells are saved and can be re-run.")


def ensure_demo(rt: "Runtime") -> None:
    """First start: build demo/ into 'guide' in the background (``ui/firststart.py``); once per process.
    The page draws at once; the sidebar and the notebook show the build's progress."""
    if rt.demo_checked:
        return
    with rt.lock:
        if rt.demo_checked:
            return
        try:
            _copy_old_store(rt.engine.store)
            start_demo(rt)
        except Exception as exc:  # noqa: BLE001

            rt.demo_error = friendly(exc, "Preparing the demo collection")
        finally:
            rt.demo_checked = True
            rt.invalidate_collections()
    if rt.demo_error:
        st.error(md_escape(rt.demo_error))


def _copy_old_store(store) -> None:
    """A data folder an older version wrote in local mode is copied into Qdrant Edge once, on the
    first open (edge_migrate.py): minutes at a million points, so say so and show it moving."""
    if not store.migration_pending():
        return
    with st.status("Copying this data folder's collections into Qdrant Edge: once, on the first start of "
                   "this version (the old folder is left as it was)…", expanded=True) as box:
        lines: dict[str, Any] = {}  # one line per collection, updated batch by batch

        def show(name: str, n: int, total: int) -> None:
            if name not in lines:
                lines[name] = st.empty()
            lines[name].text(f"{name}: {n:,} of {total:,} points copied")

        store.migrate_pending_copy(show)
        box.update(label="Copied this data folder's collections into Qdrant Edge.", state="complete", expanded=False)
