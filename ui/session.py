"""The typed view of this session's values: the notebook's retrieval controls and the lab's setup.

Streamlit keeps widget values under string keys in ``st.session_state``; the keys of a concern are named
here once, and pages read a frozen dataclass (``notebook_controls()``, ``lab_setup()``) instead of
indexing the session with strings. Widgets still write the keys (``ui/controls.py`` ``bound``): this is
a reading, taken once per run, so one run uses one set of values everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, MutableMapping

import streamlit as st

from ragcore.settings import catalog
from ragcore.settings.config import RagcoreSettings

# the notebook's controls (above its question box), shared by every page
NOTEBOOK_KEYS = {"collection": "cfg_collection", "context": "cfg_context", "mode": "cfg_mode", "top_k": "cfg_top_k",
                 "threshold": "cfg_threshold"}
# the lab's own controls: they start from the notebook's and never change them, except through "Use these
# settings in the notebook". The cuts under ``lab_cfg_*``, the rest under ``lab_<settings field>`` (ui/share.py too)
LAB_CUT_KEYS = {"retrieval_mode": "lab_cfg_mode", "top_k": "lab_cfg_top_k", "threshold": "lab_cfg_threshold"}
LAB_TO_NOTEBOOK = {"lab_cfg_mode": "cfg_mode", "lab_cfg_top_k": "cfg_top_k", "lab_cfg_threshold": "cfg_threshold"}
SIGNALS = catalog.lab_signals()  # fielded BM25, documents then passages, expansion: the settings catalog's lab settings
LAB_POOL = ("fusion", "rrf_k", "dense_weight", "candidates", "dedupe")
LAB_TO_BASE = {f"lab_{f}": f for f in (*LAB_POOL, *SIGNALS)}


def lab_key(field: str) -> str:
    """The session key of the lab's value of a settings field (its link, its A/B configuration A)."""
    return LAB_CUT_KEYS.get(field, f"lab_{field}")


@dataclass(frozen=True)
class NotebookControls:
    collection: str
    context: str
    mode: str
    top_k: int
    threshold: float


@dataclass(frozen=True)
class LabSetup:
    question: str
    mode: str
    top_k: int
    threshold: float
    fusion: str
    rrf_k: int
    dense_weight: float
    candidates: int
    dedupe: bool
    signals: Mapping[str, Any]  # settings field → value, for every field of SIGNALS

    def settings(self, base: RagcoreSettings) -> RagcoreSettings:
        """``base`` with the lab's setup: what the lab retrieves with."""
        return base.with_(
            retrieval_mode=self.mode, top_k=self.top_k, threshold=round(self.threshold, 4), fusion=self.fusion,
            rrf_k=self.rrf_k, dense_weight=self.dense_weight, candidates=self.candidates, dedupe=self.dedupe,
            **{f: _typed(base, f, v) for f, v in self.signals.items()},
        )

    def signals_summary(self) -> str:
        s = self.signals
        on = [f"field weight {float(s['field_weight']):g}" if s["field_weight"] > 0 else "",
              f"document decay {float(s['doc_decay']):g}" if s["doc_decay"] > 0 else "",
              f"{int(s['per_doc'])} per document" if s["per_doc"] > 0 else "",
              f"named pages {float(s['named_weight']):g}" if s["named_weight"] > 0 else "",
              f"title {float(s['doc_title_weight']):g}" if s["doc_title_weight"] > 0 else "",
              f"{int(s['prf_terms'])} expansion terms" if s["prf_terms"] > 0 else ""]
        return ", ".join(x for x in on if x) or "off"


def _typed(base: RagcoreSettings, field: str, v: Any) -> Any:
    return int(v) if isinstance(getattr(base, field), int) and not isinstance(getattr(base, field), bool) else float(v)


def _session(ss: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
    return st.session_state if ss is None else ss


def notebook_controls(ss: MutableMapping[str, Any] | None = None) -> NotebookControls:
    ss = _session(ss)
    return NotebookControls(collection=ss["cfg_collection"], context=ss["cfg_context"], mode=ss["cfg_mode"],
                            top_k=int(ss["cfg_top_k"]), threshold=float(ss["cfg_threshold"]))


def init_lab(base: RagcoreSettings, ss: MutableMapping[str, Any] | None = None) -> None:
    """The lab's values on its first run in this session: the settings' pool and signals, the notebook's cuts."""
    ss = _session(ss)
    ss.setdefault("lab_question", "")
    ss.setdefault("lab_queries", 0)
    for f in (*LAB_POOL, *SIGNALS):
        ss.setdefault(f"lab_{f}", getattr(base, f))
    ss.setdefault("lab_cfg_mode", ss["cfg_mode"])
    ss.setdefault("lab_cfg_top_k", int(ss["cfg_top_k"]))
    ss.setdefault("lab_cfg_threshold", float(ss["cfg_threshold"]))


def lab_setup(ss: MutableMapping[str, Any] | None = None) -> LabSetup:
    ss = _session(ss)
    return LabSetup(
        question=str(ss["lab_question"]), mode=ss["lab_cfg_mode"], top_k=int(ss["lab_cfg_top_k"]),
        threshold=float(ss["lab_cfg_threshold"]), fusion=ss["lab_fusion"], rrf_k=int(ss["lab_rrf_k"]),
        dense_weight=float(ss["lab_dense_weight"]), candidates=int(ss["lab_candidates"]), dedupe=bool(ss["lab_dedupe"]),
        signals={f: ss[f"lab_{f}"] for f in SIGNALS},
    )


def lab_differs_from_notebook(base: RagcoreSettings, ss: MutableMapping[str, Any] | None = None) -> bool:
    ss = _session(ss)
    return (any(ss[k] != ss[v] for k, v in LAB_TO_NOTEBOOK.items())
            or any(ss[k] != getattr(base, f) for k, f in LAB_TO_BASE.items()))


def lab_into_notebook(base: RagcoreSettings, ss: MutableMapping[str, Any] | None = None) -> RagcoreSettings:
    """Copy the lab's cuts into the notebook's controls; returns ``base`` with the lab's pool and signals."""
    ss = _session(ss)
    for lab_key, nb_key in LAB_TO_NOTEBOOK.items():
        ss[nb_key] = ss[lab_key]
    return base.with_(**{f: ss[k] for k, f in LAB_TO_BASE.items()})

