"""The git parts of `ragcore ingest REPO --ref REF` and `ragcore collections`: the source a
collection was built from and how far its ref has moved since (engine/gitingest.py)."""

from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Mapping

from ragcore.cli.common import UsageError, term_safe
from ragcore.settings.config import RagcoreSettings
from ragcore.types import IngestReport


def add_ref_arguments(ing: argparse.ArgumentParser) -> None:
    ing.add_argument("--ref", help="read the tree of this branch, tag or commit of the git repository PATH from git "
                     "objects (not the work tree; a bare repository works); a re-ingest reads only changed files")
    ing.add_argument("--full", action="store_true", help="with --ref: read every file, not only those changed since "
                     "the collection's commit")


def ingest_ref(engine: Any, args: argparse.Namespace, s: RagcoreSettings,
               progress: Callable[[int, int, str], None]) -> IngestReport:
    if len(args.paths) != 1:
        raise UsageError(f"--ref reads one repository: give one PATH, not {len(args.paths)}")
    if args.no_prune:
        raise UsageError("--no-prune does not go with --ref: a ref's collection is its tree at that commit")
    return engine.ingest_ref(args.paths[0], args.ref, s.collection, progress=progress, calibrate=not args.no_calibrate,
                             rebuild=args.rebuild, full=args.full)


def print_source(report: IngestReport) -> None:
    """The source lines of an ingest's text report: which commit, incremental or not, what was skipped."""
    src = report.source or {}
    if src.get("commit"):
        how = "only the files changed since the last ingest were read" if report.incremental else "every file was read"
        print(f"source {describe(src)}; {how}")
    elif src.get("mode") == "path":
        print("source: a folder (not inside a git work tree)")
    for o in report.skipped:
        print(f"  not read {term_safe(o.path)}: {term_safe(o.reason)}")


def describe(src: Mapping[str, Any]) -> str:
    """``ref main at 1a2b3c4d5e6f (2026-11-28T10:00:00+00:00)`` and ``, dirty`` when it is."""
    what = {"ref": f"ref {src.get('ref')}", "commit": "commit"}.get(str(src.get("mode")), "folder in a work tree"
                                                                 + (f" on {src.get('ref')}" if src.get("ref") else ""))
    text = f"{what} at {str(src.get('commit'))[:12]} ({src.get('commit_time')})"
    if src.get("dirty"):
        text += ", with uncommitted changes"
    if src.get("remote"):
        text += f", remote {src.get('remote')}"
    return term_safe(text)


def staleness_text(stale: Mapping[str, Any] | None) -> str | None:
    """One line for `ragcore collections`: None for a collection not built from git."""
    if not stale:
        return None
    state = stale.get("state")
    if state == "moved":
        return (f"STALE: the ref moved to {str(stale.get('head'))[:12]}, {stale.get('commits_behind')} commit(s) "
                f"ahead, {stale.get('files_changed')} file(s) changed; ingest the ref again (only those files are read)")
    if state == "dirty":
        return "the folder has uncommitted changes since its HEAD"
    if state == "unknown":
        return f"staleness unknown: {term_safe(stale.get('note'))}"
    return "pinned to a commit" if state == "pinned" else "up to date with its ref"


def source_rows(engine: Any) -> dict[str, dict[str, Any]]:
    """{collection: {source, staleness}} for `ragcore collections` (git is asked once per collection)."""
    from ragcore.engine.gitingest import collection_sources

    try:
        return {row["name"]: row for row in collection_sources(engine)}
    except Exception as exc:  # noqa: BLE001 - the listing still shows everything else
        print(f"note: could not read the collections' git sources ({term_safe(exc)})", file=sys.stderr)
        return {}


def print_source_lines(row: Mapping[str, Any] | None, indent: str) -> None:
    src = (row or {}).get("source") or {}
    if not src.get("commit"):
        return
    print(f"{indent} source {describe(src)}")
    stale = staleness_text(row.get("staleness") if row else None)
    if stale:
        print(f"{indent} {stale}")
