"""The app's notebooks: the model, its store (one JSON file per collection), recording a streamed
run, diffs of two runs, and exports. Pure Python, no Streamlit: the pages render these objects."""

from .diff import EvidenceChange, RunDiff, diff_runs
from .export import cells_from_export, export_filename, export_html, export_json, export_markdown
from .model import (
    CONTEXT_LABELS, FORMAT, MAX_RUNS, Cell, ContextMode, Notebook, NotebookError, Outcome, Run, locator, utc_now,
)
from .reading import badges, config_stamp
from .recorder import RunRecorder
from .store import NotebookStore

__all__ = [
    "CONTEXT_LABELS", "FORMAT", "MAX_RUNS", "Cell", "ContextMode", "EvidenceChange", "Notebook", "NotebookError",
    "NotebookStore", "Outcome", "Run", "RunDiff", "RunRecorder", "badges", "cells_from_export", "config_stamp",
    "diff_runs", "export_filename", "export_html", "export_json", "export_markdown", "locator", "utc_now",
]
