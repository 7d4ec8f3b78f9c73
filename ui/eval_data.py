"""Evaluate's data sets: the one suggested for a collection, the folder last used with it, and loading
a folder or an upload (cached: a data set is read once per change)."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from ragcore.eval.dataset import EvalDataset, load_dataset, load_dataset_bytes

ROOT = Path(__file__).resolve().parent.parent  # the folder of app.py
BUNDLED_DATASET = ROOT / "bench" / "data" / "guide-qa"  # questions about the user guide (the demo collection)
DJANGO_DATASET = ROOT.parent / "shared" / "data" / "django-docs-qa"


def suggested_dataset(collection: str) -> Path | None:
    """The bundled set for the demo collection, the Django set (when present) for a Django
    collection, else none: another collection's data set would calibrate a wrong bar."""
    if collection == "guide" and BUNDLED_DATASET.is_dir():
        return BUNDLED_DATASET
    if "django" in collection.lower() and DJANGO_DATASET.is_dir():
        return DJANGO_DATASET
    return None


def folder_for(collection: str) -> str:
    """The data set folder last used with ``collection`` on this page, else the suggested one.
    Kept per collection outside the widget (whose state Streamlit drops when the page is left),
    so coming back, or moving the sidebar's collection, never puts the guide's set next to
    another collection."""
    used = st.session_state.setdefault("ev_folders", {})
    if collection in used:
        return used[collection]
    suggested = suggested_dataset(collection)
    return str(suggested) if suggested is not None else ""

@st.cache_data(show_spinner=False, max_entries=8)
def load_folder(path: str, mtime: float) -> EvalDataset:
    return load_dataset(path)


@st.cache_data(show_spinner=False, max_entries=8)
def load_upload(data: bytes, name: str) -> EvalDataset:
    return load_dataset_bytes(data, name)
