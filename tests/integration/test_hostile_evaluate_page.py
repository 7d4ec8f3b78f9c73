"""The Evaluate page never calibrates a collection on another corpus's questions without a word
(issue 26, case 7): the data set field keeps the folder used with the sidebar's collection (it
used to reset to the bundled guide set), a mismatched data set is refused, and replacing a stored
bar asks first and can be undone. Streamlit's AppTest over the app's real engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragcore.eval.calibration import stored_bars
from tests.support.app_support import ROOT, app_env, ok, shared_runtime, started  # noqa: F401
from tests.conftest import write_corpus
from tests.integration.test_hostile_calibration import ANSWERABLE, CORPUS
from tests.integration.test_hostile_calibration import _dataset as calibration_dataset

pytestmark = pytest.mark.slow

NAME = "hostile-garden"
GUIDE_SET = str(ROOT / "bench" / "data" / "guide-qa")


def _dataset(root: Path, answerable: list[str]) -> str:
    return str(calibration_dataset(root, answerable=answerable))


@pytest.fixture
def garden(app_env, tmp_path_factory):
    rt = shared_runtime()
    engine = rt.engine
    if not engine.store.exists(NAME):
        engine.ingest([write_corpus(tmp_path_factory.mktemp("garden"), CORPUS)], NAME, calibrate=False)
    engine.store.write_meta(NAME, {"calibration": None, "calibration_history": []})  # each test starts with none
    # written behind the app's back: its list of collections (kept up to 5 s) must be read again, or
    # a page started within 5 s of another test's run does not know NAME and shows the guide instead
    rt.invalidate_collections()
    return engine


def _button(at, key: str):
    return next(b for b in at.button if b.key == key)


def _texts(at) -> str:
    return "\n".join(x.value for x in (*at.warning, *at.error, *at.success, *at.markdown))


def test_the_data_set_field_follows_the_collection_not_the_guide(garden, tmp_path):
    at = started("pages/evaluate.py", cfg_collection=NAME)
    ok(at)
    assert at.text_input(key="ev_folder").value != GUIDE_SET  # before: the guide's set, next to another collection
    mine = _dataset(tmp_path / "garden-qa", ANSWERABLE)
    at.text_input(key="ev_folder").set_value(mine).run()
    ok(at)
    at.switch_page("pages/library.py").run()
    at.switch_page("pages/evaluate.py").run()
    ok(at)
    assert at.text_input(key="ev_folder").value == mine  # kept across pages


def test_calibrating_refuses_another_corpus_and_confirms_before_replacing(garden, tmp_path):
    guide_before = stored_bars(garden, "guide")
    at = started("pages/evaluate.py", cfg_collection=NAME)
    at.text_input(key="ev_folder").set_value(GUIDE_SET).run()
    _button(at, "ev_calibrate").click().run()
    assert any("not in the collection" in e.value for e in at.error), _texts(at)
    assert stored_bars(garden, NAME) == (None, [])  # nothing stored from the guide's questions

    at.text_input(key="ev_folder").set_value(_dataset(tmp_path / "qa1", ANSWERABLE)).run()
    _button(at, "ev_calibrate").click().run()
    ok(at)
    first = stored_bars(garden, NAME)[0]
    assert first["dataset"] == "qa1"

    at.text_input(key="ev_folder").set_value(_dataset(tmp_path / "qa2", ANSWERABLE[:2] + ["Why do tomatoes split?"])).run()
    _button(at, "ev_calibrate").click().run()
    assert any("already has a calibrated abstain bar" in w.value for w in at.warning), _texts(at)
    assert stored_bars(garden, NAME)[0] == first  # one click does not replace it
    _button(at, "ev_cal_replace").click().run()
    ok(at)
    current, history = stored_bars(garden, NAME)
    assert current["dataset"] == "qa2" and history == [first]

    at.selectbox(key="ev_bar_pick").select(0).run()
    _button(at, "ev_bar_restore").click().run()
    ok(at)
    current, history = stored_bars(garden, NAME)
    assert current == first and [h["dataset"] for h in history] == ["qa2"]
    assert any("Restored the abstain bar" in s.value for s in at.success)
    assert stored_bars(garden, "guide") == guide_before  # the sidebar's other collections are untouched
