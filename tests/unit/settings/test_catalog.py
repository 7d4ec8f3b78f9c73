"""The settings catalog: docs/13's tables are written from it, and the clients' lists agree with the rules."""

from __future__ import annotations

from ragcore.settings import catalog, reference
from ragcore.settings.rules import check_value


def test_docs_13_tables_are_the_catalogs():
    page = reference.PAGE.read_text(encoding="utf-8")
    assert reference.render(page) == page, "docs/13 drifted: run python -m ragcore.settings.reference --write"
    assert reference.main(["--check"]) == 0


def test_every_setting_is_in_one_docs_table():
    listed = [e.name for g in catalog.GROUPS for e in catalog.group_entries(g)]
    assert sorted(listed) == sorted(e.name for e in catalog.entries())
    assert all(e.rule.help for e in catalog.entries())


def test_the_app_saves_no_secret_and_only_known_settings():
    saved = catalog.persisted()
    assert "llm.api_key" not in saved and "qdrant_api_key" not in saved
    assert {"top_k", "retrieval_mode", "llm.model", "chunk_size"} <= set(saved)


def test_widget_ranges_stay_inside_the_rules():
    for e in catalog.entries():
        if e.owner == "service" or not e.numeric or not (e.rule.app or e.rule.share):
            continue
        lo, hi, step = catalog.widget_range(e.name)
        assert lo <= hi and step > 0, e.name
        for v in (lo, hi):  # both ends are values the rule accepts
            check_value(e.field, e.rule, v)
    # the named-weight slider reaches the rule's 10 (it stopped at 2.0)
    assert catalog.widget_range("named_weight")[1] == 10.0


def test_sweepable_and_report_keys():
    assert "collection" in catalog.sweepable() and "collection" not in catalog.config_keys()
    assert set(catalog.lab_signals()) <= set(catalog.sweepable())
    assert catalog.share_params()["k"] == "top_k"
    assert {"collection", "top_k", "threshold", "mode", "path_filter"} <= {e.rule.request for e in catalog.request_entries()}
