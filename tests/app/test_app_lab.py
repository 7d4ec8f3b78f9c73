"""AppTest: the Retrieval lab — evidence table, live re-cuts without re-query, histogram, A/B, probe."""

from __future__ import annotations

import pytest

from tests.support.app_support import QUESTION, app_env, html_table, markdown_text, ok, started  # noqa: F401

pytestmark = pytest.mark.slow
LAB = "pages/retrieval_lab.py"


def _lab(question: str = QUESTION):
    at = started(LAB)
    at.text_input(key="lab_q").set_value(question).run()
    ok(at)
    return at


def _table(at):
    """The lab's chunk table (st.html): what each cell shows, its hover text, kept or cut."""
    df = html_table(at, "rc-lab")
    return df.assign(kept=df["row class"] == "kept", status=df["kept / cut"])


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_table_has_every_score_and_the_sliders_recut_without_querying(app_env):
    at = _lab()
    queries = at.session_state["lab_queries"]
    df = _table(at)
    for col in ("rank", "kept / cut", "cosine", "BM25", "fused", "locator", "section", "passage"):
        assert col in df.columns, col
    assert set(df.loc[~df["kept"], "status"]) <= {"cut: top-K", "cut: dedupe", "cut: threshold"}
    # top-K 6, then one seat (RAGCORE_EVIDENCE_SEATS=1: the best passage of a page the top-K lacked), marked
    assert list(df.loc[df["kept"], "status"]) == [f"kept [{i}]" for i in range(1, 7)] + ["kept [7] seat"]
    assert df.loc[df["status"] == "kept [7] seat", "kept / cut title"].iloc[0].startswith("Kept by a seat")  # why, on hover
    # shortened to fit 1280 px, in full on hover
    assert df["locator"].str.len().max() <= 30 and df["locator title"].str.fullmatch(r"[\w./-]+\.md:\d+-\d+").all()
    assert (df["locator title"].str.len() > df["locator"].str.len()).any()
    assert all(t.endswith(s.removeprefix("› ")) for s, t in zip(df["section"], df["section title"]) if t)
    assert (df["passage title"].str.len() >= df["passage"].str.len() - 1).all()
    cut = df.loc[~df["kept"]].iloc[0]
    assert cut["kept / cut title"].startswith("Cut: ")  # why it was cut, on hover
    assert df["cosine"].between(-1, 1).all()
    assert any(c.proto.spec and "threshold" in c.proto.spec for c in at.get("vega_lite_chart")), "histogram with the threshold rule"
    n_candidates = len(df)

    # threshold: rows switch to cut with reason "threshold" — same pool, no new query
    at.slider(key="lab_threshold").set_value(0.4).run()
    ok(at)
    df2 = _table(at)
    assert len(df2) == n_candidates
    assert (df2["status"] == "cut: threshold").sum() > 0
    assert (df2.loc[df2["cosine"] < 0.4, "status"] == "cut: threshold").all()
    assert not df2.loc[df2["kept"], "cosine"].lt(0.4).any()
    assert at.session_state["lab_queries"] == queries
    assert _metrics(at)["Cut: threshold"] == str((df2["status"] == "cut: threshold").sum())
    # the lab's controls are its own: the notebook keeps its threshold until the analyst applies the lab's
    assert at.session_state["cfg_threshold"] == pytest.approx(0.0) and at.session_state["lab_cfg_threshold"] == pytest.approx(0.4)
    assert not at.sidebar.get("slider"), "no retrieval slider in the sidebar"

    # top-K: rows past the new K switch to cut with reason top_k — still no new query
    at.slider(key="lab_threshold").set_value(0.0).run()
    at.slider(key="lab_top_k").set_value(2).run()
    ok(at)
    df3 = _table(at)
    assert list(df3.loc[df3["kept"], "status"])[:2] == ["kept [1]", "kept [2]"]
    assert list(df3.loc[df3["kept"], "status"])[2:] in ([], ["kept [3] seat"])
    assert at.session_state["lab_queries"] == queries

    # a different mode is a different ranking: that one queries again
    at.button_group(key="lab_mode").set_value("dense").run()
    ok(at)
    assert at.session_state["lab_queries"] > queries
    df4 = _table(at)
    assert df4["cosine"].head(5).is_monotonic_decreasing
    assert at.session_state["cfg_mode"] == "hybrid" and at.session_state["cfg_top_k"] == 6

    # "Use these settings in the notebook" copies them over, explicitly
    at.button(key="lab_apply").click().run()
    ok(at)
    assert (at.session_state["cfg_mode"], at.session_state["cfg_top_k"]) == ("dense", 2)
    assert at.button(key="lab_apply").disabled


def test_picking_a_rank_shows_the_chunk_text_and_rows_sort_by_a_score(app_env):
    at = _lab()
    assert not at.code  # nothing picked yet
    at.selectbox(key="lab_pick").set_value(1).run()
    ok(at)
    assert at.code and "threshold" in at.code[0].value.lower()
    assert any("lines=" in p.proto.query_string for p in at.get("page_link") if "Open these lines" in p.proto.label)
    # sorted by BM25, highest first, chunks without a BM25 score last; the rank column still says each one's rank
    at.segmented_control(key="lab_order").set_value("BM25").run()
    ok(at)
    df = _table(at)
    scores = df["BM25"].dropna()
    assert scores.is_monotonic_decreasing and df["BM25"].isna().sum() == len(df) - len(scores)
    assert sorted(df["rank"]) == list(range(1, len(df) + 1)) and list(df["rank"]) != sorted(df["rank"])


def test_ab_comparison_shows_overlap_added_dropped_moved(app_env):
    at = _lab()
    m = _metrics(at)
    assert {"Evidence A", "Evidence B", "Overlap", "Added in B", "Dropped in B"} <= set(m)
    ab = html_table(at, "rc-ab")  # "–" where one side does not keep the chunk (st.dataframe drew "None")
    assert int(m["Evidence A"]) == ab["A [n]"].notna().sum()
    assert not ab.isin(["None"]).any().any()
    kinds = " ".join(ab["change"])
    assert "same" in kinds or "moved" in kinds
    # B: top-K 12 against A's 6 → B adds chunks, drops none (each has its seat: RAGCORE_EVIDENCE_SEATS=1)
    a = int(m["Evidence A"])
    assert a == 7
    at.number_input(key="ab_B_top_k_w").set_value(12).run()
    at.selectbox(key="ab_B_retrieval_mode_w").set_value("hybrid").run()
    ok(at)
    m = _metrics(at)
    assert m["Evidence B"] == "13" and m["Dropped in B"] == "0" and m["Added in B"] == str(13 - a)


def test_ab_configuration_b_has_a_control_for_each_setting_the_catalog_marks_ab(app_env):
    """B's controls are generated from the settings catalog (``ab=True``), not a hand list: one per field,
    the fusion's own parameter only with that fusion, and each moves B's retrieval."""
    from ragcore.settings import catalog

    at = _lab()
    keys = {w.key for kind in (at.number_input, at.selectbox, at.toggle) for w in kind if str(w.key).startswith("ab_B_")}
    expected = {f"ab_B_{f}_w" for f in catalog.ab_fields() if f != "dense_weight"}  # fusion rrf: its k, no weight
    assert keys == expected
    at.selectbox(key="ab_B_fusion_w").set_value("weighted").run()
    keys = {w.key for kind in (at.number_input, at.selectbox, at.toggle) for w in kind if str(w.key).startswith("ab_B_")}
    assert "ab_B_dense_weight_w" in keys and "ab_B_rrf_k_w" not in keys
    at.number_input(key="ab_B_threshold_w").set_value(0.99).run()
    ok(at)
    assert _metrics(at)["Evidence B"] == "0"


def test_probe_explains_why_a_chunk_was_not_retrieved(app_env):
    at = _lab()
    at.selectbox(key="probe_path").set_value("16-security.md").run()
    at.button(key="probe_go").click().run()
    ok(at)
    verdict = " ".join(w.value for w in at.warning)
    assert "Verdict" in verdict and ("top\\-K" in verdict or "not a candidate" in verdict or "threshold" in verdict)
    assert any("RAGCORE" in i.value for i in at.info)
    details = next(d.value for d in at.dataframe if "cosine" in d.value.columns and "dense rank (all chunks)" in d.value.columns)
    assert float(details["cosine"].iloc[0]) < 0.5
    # a file that answers the question is kept
    at.selectbox(key="probe_path").set_value("05-scores-top-k-and-threshold.md").run()
    at.button(key="probe_go").click().run()
    assert any("retrieved" in s.value for s in at.success)
    # a pasted passage is found verbatim, then judged with the threshold the analyst set
    at.slider(key="lab_threshold").set_value(0.9).run()
    at.segmented_control(key="probe_kind").set_value("A pasted passage").run()
    at.text_area(key="probe_passage").set_value("The threshold defaults to 0.0, which cuts nothing.").run()
    at.button(key="probe_go").click().run()
    ok(at)
    assert any("cut by the threshold" in w.value for w in at.warning), [w.value for w in at.warning]
    details = next(d.value for d in at.dataframe if "passage match" in d.value.columns)
    assert details["passage match"].iloc[0] == "verbatim"
    # something the collection does not have
    at.text_area(key="probe_passage").set_value("Zebras migrate across the Serengeti every year in search of grass.").run()
    at.button(key="probe_go").click().run()
    assert any("no matching chunk" in w.value for w in at.warning)
    assert "Verdict" in markdown_text(at) or at.warning


def test_retrieval_signals_are_the_labs_own_and_show_when_on(app_env):
    at = _lab()
    shown = list(_table(at).columns)
    assert {"doc", "doc #"} <= set(shown) and "field" not in shown, shown  # documents ranked by default
    assert not any(c.value.startswith("expanded with:") for c in at.caption)
    # every signal off: no empty columns
    at.number_input(key="lab_doc_decay_w").set_value(0.0).run()
    at.number_input(key="lab_named_weight_w").set_value(0.0).run()
    at.number_input(key="lab_doc_title_weight_w").set_value(0.0).run()
    ok(at)
    assert not {"field", "doc", "doc #"} & set(_table(at).columns)
    queries = at.session_state["lab_queries"]

    # fielded BM25 on: a new ranking (queries again), the field part shown; the notebook's settings untouched
    at.number_input(key="lab_field_weight_w").set_value(2.0).run()
    ok(at)
    assert at.session_state["lab_queries"] > queries
    df = _table(at)
    assert "field" in df.columns
    assert df["field"].notna().all() and (df["field"] > 0).any() and (df["field"] <= df["BM25"] + 1e-6).all()
    assert at.session_state["rc_base"].field_weight == 0.0

    # documents, then passages: every chunk carries its document's score and rank; one document, one score
    at.number_input(key="lab_doc_decay_w").set_value(1.0).run()
    ok(at)
    df = _table(at)
    assert {"doc", "doc #"} <= set(df.columns)
    assert df["doc #"].min() == 1 and df["doc"].notna().all()
    per_doc = df.assign(path=df["locator title"].str.split(":").str[0]).groupby("path")["doc #"].nunique()
    assert (per_doc == 1).all()

    # expansion: the terms it added, with their weights, above the table
    at.number_input(key="lab_prf_terms_w").set_value(4).run()
    ok(at)
    line = next(c.value for c in at.caption if c.value.startswith("expanded with:"))
    terms = at.session_state["lab_result"][1].expansion_terms
    assert 1 <= len(terms) <= 4 and all(f"`{t}` ({w:.2f})" in line for t, w in terms), line

    # the picked chunk: its matched fields and its document
    at.selectbox(key="lab_pick").set_value(1).run()
    ok(at)
    detail = next(c.value for c in at.caption if "matched fields" in c.value)
    assert "document rank" in detail and ":" in detail.split("matched fields")[1]

    # carried over to the notebook only on request
    at.button(key="lab_apply").click().run()
    ok(at)
    b = at.session_state["rc_base"]
    assert (b.field_weight, b.doc_decay, b.prf_terms) == (2.0, 1.0, 4)
    assert any("field weight 2" in t.value for t in at.toast)


def test_probe_shows_the_chunks_signals(app_env):
    at = _lab()
    at.number_input(key="lab_field_weight_w").set_value(2.0).run()
    at.number_input(key="lab_doc_decay_w").set_value(1.0).run()
    at.number_input(key="lab_prf_terms_w").set_value(5).run()
    at.selectbox(key="probe_path").set_value("05-scores-top-k-and-threshold.md").run()
    at.button(key="probe_go").click().run()
    ok(at)
    sig = next(d.value for d in at.dataframe if "matched fields" in d.value.columns)
    assert float(sig["field part of BM25"].iloc[0]) > 0 and "threshold" in sig["matched fields"].iloc[0]
    assert sig["document rank"].iloc[0] == "1"
    assert sig["expansion terms in the chunk"].iloc[0].endswith("(of 5)")
    # signals off: no signal table
    at.number_input(key="lab_field_weight_w").set_value(0.0).run()
    at.number_input(key="lab_doc_decay_w").set_value(0.0).run()
    at.number_input(key="lab_named_weight_w").set_value(0.0).run()
    at.number_input(key="lab_doc_title_weight_w").set_value(0.0).run()
    at.number_input(key="lab_prf_terms_w").set_value(0).run()
    at.button(key="probe_go").click().run()
    ok(at)
    assert not any("matched fields" in d.value.columns for d in at.dataframe)


def test_the_abstain_signals_show_in_order(app_env):
    """The lab shows each abstain signal's own line (abstain/signals.py), and which one would veto."""
    at = _lab()
    at.button(key="lab_abstain_check").click().run()
    ok(at)
    text = markdown_text(at)
    assert "It would answer." in text or "It would abstain:" in text
    for name in ("evidence", "coverage", "support"):
        assert f"**{name}**" in text, name
    assert text.index("**evidence**") < text.index("**coverage**") < text.index("**support**")
    assert at.session_state["lab_abstain"][1][0].signal == "evidence"
