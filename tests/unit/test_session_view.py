"""ui/session.py: the typed view of the session's values (plain dicts stand in for st.session_state, which
is a mapping: the functions take one)."""

from __future__ import annotations

from ragcore.settings.config import RagcoreSettings
from ui import session


def _ss(base: RagcoreSettings) -> dict:
    ss = {"cfg_collection": "guide", "cfg_context": "corpus", "cfg_mode": "hybrid", "cfg_top_k": 6, "cfg_threshold": 0.0}
    session.init_lab(base, ss)
    return ss


def test_the_lab_starts_from_the_settings_and_the_notebooks_cuts():
    base = RagcoreSettings()
    ss = _ss(base)
    lab = session.lab_setup(ss)
    assert (lab.mode, lab.top_k, lab.threshold) == ("hybrid", 6, 0.0)
    assert lab.fusion == base.fusion and set(lab.signals) == set(session.SIGNALS)
    assert not session.lab_differs_from_notebook(base, ss)
    s = lab.settings(base)
    assert s == base.with_(retrieval_mode="hybrid", top_k=6, threshold=0.0)


def test_one_reading_builds_the_settings_and_the_copy_into_the_notebook():
    base = RagcoreSettings()
    ss = _ss(base)
    ss.update(lab_cfg_threshold=0.29, lab_cfg_top_k=9, lab_field_weight=2, lab_prf_terms=5)
    lab = session.lab_setup(ss)
    s = lab.settings(base)
    assert (s.threshold, s.top_k, s.field_weight, s.prf_terms) == (0.29, 9, 2.0, 5)
    assert isinstance(s.prf_terms, int) and isinstance(s.field_weight, float)
    assert "field weight 2" in lab.signals_summary() and "5 expansion terms" in lab.signals_summary()
    assert session.lab_differs_from_notebook(base, ss)
    new_base = session.lab_into_notebook(base, ss)
    assert (ss["cfg_threshold"], ss["cfg_top_k"]) == (0.29, 9) and new_base.field_weight == 2
    assert not session.lab_differs_from_notebook(new_base, ss)
    nb = session.notebook_controls(ss)
    assert (nb.top_k, nb.threshold, nb.collection) == (9, 0.29, "guide")
