"""The Library's git parts: ingest a ref of a repository, each collection's source and whether its
ref has moved, and the files a ref's ingest did not read (ragcore/engine/gitingest.py does the work)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import pandas as pd
import streamlit as st

from ragcore.types import IngestReport
from ui import state
from ui.jobs import IngestJob
from ui.render import md_inline


def source_text(row: Mapping[str, Any] | None) -> str:
    """``ref main @ 1a2b3c4d5e6f · moved: 2 commits, 3 files`` for the collections table ("–": not from git)."""
    src = (row or {}).get("source") or {}
    if not src.get("commit"):
        return "–"
    what = {"ref": f"ref {src.get('ref')}", "commit": "commit"}.get(str(src.get("mode")), "folder")
    text = f"{what} @ {str(src['commit'])[:12]}" + (" (uncommitted changes)" if src.get("dirty") else "")
    stale = (row or {}).get("staleness") or {}
    if stale.get("state") == "moved":
        text += f" · ref moved: {stale.get('commits_behind')} commits, {stale.get('files_changed')} files changed"
    elif stale.get("state") == "current":
        text += " · current"
    elif stale.get("state") == "unknown":
        text += f" · {stale.get('note')}"
    return text


def sources(rt: state.Runtime) -> dict[str, dict[str, Any]]:
    from ragcore.engine.gitingest import collection_sources

    try:
        return {r["name"]: r for r in collection_sources(rt.engine)}
    except Exception:  # noqa: BLE001 - the table still shows everything else
        return {}


def ref_inputs() -> tuple[str, str]:
    """The repository folder and the ref (branch, tag or commit) to ingest."""
    st.markdown("**A git ref** (read from git objects: any branch, tag or commit, a bare repository too)")
    c = st.columns([0.7, 0.3])
    repo = c[0].text_input("Repository", key="ing_git_repo", placeholder="/path/to/repository",
                           help="A work tree or a bare repository on the machine that runs the app.").strip()
    ref = c[1].text_input("Ref", key="ing_git_ref", placeholder="main, v2.0 or a commit id",
                          help="Ingesting the same ref again reads only the files changed since.").strip()
    return repo, ref


def start_ref_ingest(rt: state.Runtime, repo: str, ref: str, collection: str, s, *, rebuild: bool) -> int | None:
    """Start the ref's ingest in the background; the job's id, or None (the error shown) when the
    repository or the ref is not there."""
    from ragcore.ingest import gitrepo

    try:
        gitrepo.resolve(gitrepo.open_repo(Path(repo).expanduser()), ref)
    except gitrepo.GitError as exc:
        st.error(md_inline(str(exc)), icon=":material/error:")
        return None
    job = IngestJob(collection=collection, label=f"Ingest of {ref} from {Path(repo).name}")

    def work(job: IngestJob) -> IngestReport:
        return rt.engine.ingest_ref(Path(repo).expanduser(), ref, collection, progress=job.progress,
                                    chunk_progress=job.chunk_progress, settings=s, rebuild=rebuild)

    return rt.start_ingest(job, work).id


def show_source(report: IngestReport) -> None:
    """Which commit an ingest read, and the files of the tree it did not read (with why)."""
    src = report.source or {}
    if src.get("commit") and src.get("mode") != "path":
        how = "only the files changed since the last ingest" if report.incremental else "every file"
        st.caption(f":material/commit: {md_inline(src.get('ref'))} at commit {md_inline(str(src['commit'])[:12])} — "
                   f"read {how}; {report.chunks_embedded} chunks embedded, the rest reused from the repository's cache.")
    if report.skipped:
        st.markdown("**Not read from the repository**")
        st.dataframe(pd.DataFrame([{"file": o.path, "reason": o.reason} for o in report.skipped]), hide_index=True,
                     width="stretch")


def ref_reingest(rt: state.Runtime, info: Any, busy: bool) -> None:
    """A ref's collection in the Collections tab: its commit, whether the ref moved, and re-ingest
    (only the changed files are read)."""
    row = sources(rt).get(info.name)
    src = info.source
    st.markdown("**Git source and re-ingest**")
    st.caption(md_inline(source_text(row)))
    stale = (row or {}).get("staleness") or {}
    if stale.get("state") == "moved":
        st.warning(f"The ref {md_inline(src.get('ref'))} moved since this collection was built: "
                   f"{stale.get('commits_behind')} new commits, {stale.get('files_changed')} files changed.",
                   icon=":material/sync_problem:")
    if st.button("Re-ingest the ref", key=f"col_git_reingest_{info.name}", icon=":material/sync:",
                 disabled=busy or not src.get("repository")):
        jid = start_ref_ingest(rt, str(src["repository"]), str(src.get("ref") or src.get("commit")), info.name,
                               state.settings().with_(collection=info.name), rebuild=False)
        if jid is not None:
            st.session_state["ing_mine"] = jid
            st.rerun()


def sibling_refs(rt: state.Runtime, collection: str) -> list[tuple[str, str]]:
    """(label, collection) of the other refs of ``collection``'s repository: a notebook cell can be
    re-run on one of them, and its diff shows what the ref changes."""
    from ragcore.engine.gitingest import projects

    try:
        found = projects(rt.engine, check=False)
    except Exception:  # noqa: BLE001 - no git, or a repository gone: no such buttons
        return []
    for p in found:
        names = [c["name"] for r in p["refs"] for c in r["collections"]]
        if collection in names:
            return [(f"{r['ref'] or 'commit'} @ {str(c['commit'])[:10]} ({c['name']})", c["name"])
                    for r in p["refs"] for c in r["collections"] if c["name"] != collection]
    return []
