"""AppTest: the Settings page — LLM endpoint (key never echoed), test connection, chunking, storage;
and answering through a real OpenAI-protocol server on 127.0.0.1 once an endpoint is saved."""

from __future__ import annotations

import json

import pytest

from tests.support.app_support import app_env, ask, ok, started  # noqa: F401
from tests.support.openai_server import Text, unused_port

pytestmark = pytest.mark.slow
SETTINGS = "pages/settings.py"
SECRET = "sk-test-very-secret-key-123"


def _by_label(widgets, label):
    return next(w for w in widgets if w.label == label)


def _every_text(at) -> str:
    parts = [m.value for m in at.markdown] + [c.value for c in at.caption] + [s.value for s in at.success] + \
        [e.value for e in at.error] + [i.value for i in at.info] + [c.value for c in at.code] + \
        [str(w.value) for w in at.text_input] + [w.placeholder for w in at.text_input]
    return "\n".join(parts)


def _save_endpoint(at, base_url: str, model: str, key: str | None = SECRET):
    _by_label(at.text_input, "Base URL").set_value(base_url)
    _by_label(at.text_input, "Model").set_value(model)
    if key is not None:
        _by_label(at.text_input, "API key").set_value(key)
    next(b for b in at.button if b.label == "Save endpoint").click().run()
    ok(at)


def test_endpoint_key_is_masked_and_never_echoed(app_env, openai_server):
    at = started(SETTINGS)
    assert "extractive" in "\n".join(m.value for m in at.markdown)
    assert _by_label(at.text_input, "API key").proto.type == 1  # PASSWORD
    _save_endpoint(at, openai_server.base_url, "test-model")
    text = _every_text(at)
    assert SECRET not in text
    assert "a key is set" in text
    assert "openai\\-chat\\:test\\-model" in text  # the active generator, in the sidebar too
    assert _by_label(at.text_input, "API key").value == ""
    # test connection: a real HTTP round trip to the scripted server
    at.button(key="set_test").click().run()
    ok(at)
    assert any("Connected to" in s.value for s in at.success), [s.value for s in at.success]
    assert SECRET not in _every_text(at)
    # saving again without typing a key keeps it
    _save_endpoint(at, openai_server.base_url, "test-model", key=None)
    assert at.session_state["rc_base"].llm.api_key == SECRET
    assert openai_server.requests and all(r.has_auth for r in openai_server.requests)


def test_connection_failure_is_a_clear_error(app_env):
    at = started(SETTINGS)
    _save_endpoint(at, f"http://127.0.0.1:{unused_port()}/v1", "nothing-here")
    at.button(key="set_test").click().run()
    assert not at.exception
    assert at.error and all("Traceback" not in e.value for e in at.error)
    assert any("127" in e.value or "connect" in e.value.lower() for e in at.error), [e.value for e in at.error]


def test_answers_come_from_the_configured_model_and_exports_keep_no_key(app_env, openai_server):
    openai_server.script([Text(["The threshold applies to the cosine similarity ", "between the question and the chunk [1]."])])
    at = started(SETTINGS)
    _save_endpoint(at, openai_server.base_url, "test-model")
    at.switch_page("pages/notebook.py").run()
    ask(at)
    cell = json.loads((app_env / "notebooks" / "guide.json").read_text())["cells"][-1]
    ans = cell["runs"][-1]["answer"]
    assert ans["metadata"]["generator"].startswith("openai-chat:test-model")
    assert "cosine similarity" in ans["answer"] and ans["citations"]
    assert ans["metadata"]["config"]["llm"]["api_key"] == "set"
    raw = (app_env / "notebooks" / "guide.json").read_text()
    assert SECRET not in raw
    caps = "\n".join(c.value for c in at.caption)
    assert "generator **openai\\-chat\\:test\\-model**" in caps and "API key **set**" in caps


def test_chunking_and_storage(app_env):
    at = started(SETTINGS)
    _by_label(at.number_input, "Chunk size (words)").set_value(120)
    _by_label(at.number_input, "Overlap (words)").set_value(20)
    next(b for b in at.button if b.label == "Save chunking").click().run()
    ok(at)
    s = at.session_state["rc_base"]
    assert (s.chunk_size, s.chunk_overlap) == (120, 20)
    assert any("120 words" in x.value for x in at.success)
    assert any(str(app_env) in c.value for c in at.code)
    assert "needs a restart" in "\n".join(c.value for c in at.caption)
    # the Library's ingest uses the session's chunking
    at.switch_page("pages/library.py").run()
    assert "120 words per chunk, 20 words overlap" in "\n".join(c.value for c in at.caption)


def test_calibrated_bar_toggle(app_env):
    """The demo collection's bar is calibrated; turning calibrated bars off puts the Settings bar in force."""
    at = started(SETTINGS)
    caps = "\n".join(c.value for c in at.caption)
    assert "Bar in force for the current collection: 0.4" in caps and "calibrated on guide\\-qa" in caps
    next(t for t in at.toggle if t.label.startswith("Use the collection's calibrated")).set_value(False)
    _by_label(at.number_input, "Abstain bar").set_value(0.61)
    next(b for b in at.button if b.label == "Save defaults").click().run()
    ok(at)
    s = at.session_state["rc_base"]
    assert (s.calibrated_bar, s.abstain_bar) == (False, 0.61)
    assert "Bar in force for the current collection: 0.610 (settings)" in "\n".join(c.value for c in at.caption)


def test_saved_settings_survive_a_new_session_and_say_where_they_come_from(app_env, monkeypatch):
    at = started(SETTINGS)
    _by_label(at.number_input, "Top-K").set_value(9)
    _by_label(at.number_input, "Threshold (cosine)").set_value(0.2)
    next(b for b in at.button if b.label == "Save defaults").click().run()
    ok(at)
    saved = json.loads((app_env / "app_settings.json").read_text())["settings"]
    assert saved["top_k"] == 9 and saved["threshold"] == 0.2
    assert any("kept across reloads and restarts" in x.value for x in at.success)
    # a new session (a reload, or the app restarted on the same data dir) starts from the file
    at2 = started()
    assert (at2.session_state["cfg_top_k"], at2.session_state["cfg_threshold"]) == (9, 0.2)
    assert "top-K 9 · threshold 0.20" in "\n".join(c.value for c in at2.caption)
    at2.switch_page(SETTINGS).run()
    sources = next(d.value for d in at2.dataframe if "from" in d.value.columns).set_index("setting")["from"]
    assert sources["top_k"] == "file" and sources["chunk_size"] == "default" and sources["llm.api_key"] == "default"
    # the environment wins over the file, and says so
    monkeypatch.setenv("RAGCORE_TOP_K", "4")
    at3 = started(SETTINGS)
    sources = next(d.value for d in at3.dataframe if "from" in d.value.columns).set_index("setting")["from"]
    assert sources["top_k"] == "environment (RAGCORE_TOP_K)" and at3.session_state["cfg_top_k"] == 4


def test_an_api_key_is_never_written_to_the_settings_file(app_env, openai_server):
    at = started(SETTINGS)
    _save_endpoint(at, openai_server.base_url, "test-model")
    text = (app_env / "app_settings.json").read_text()
    assert "test-model" in text and openai_server.base_url in text and SECRET not in text and "api_key" not in text
    assert any("browser session only" in x.value for x in at.success)


def test_url_credentials_never_shown_or_written(app_env, openai_server, monkeypatch):
    """``OPENAI_BASE_URL=http://user:SECRET@host/v1``: the field shows the URL without them,
    saving keeps them for the session, and the settings file never holds them."""
    creds_url = openai_server.base_url.replace("http://", "http://analyst:URLSECRET99@")
    monkeypatch.setenv("OPENAI_BASE_URL", creds_url)
    at = started(SETTINGS)
    assert "URLSECRET99" not in _every_text(at)
    assert _by_label(at.text_input, "Base URL").value == openai_server.base_url
    _save_endpoint(at, openai_server.base_url, "test-model", key=None)  # the field left as shown
    assert "URLSECRET99" not in _every_text(at)
    for f in app_env.rglob("*.json"):
        assert "URLSECRET99" not in f.read_text(encoding="utf-8"), f


def test_the_forms_are_the_catalogs(app_env):
    """Every setting the app saves (but the collection, chosen in the sidebar) has a widget on the page,
    labelled, ranged and explained by its rule in the settings catalog (issue 44: the page typed its own)."""
    from ragcore.settings import catalog

    at = started(SETTINGS)
    widgets = {w.label: w for kind in (at.number_input, at.selectbox, at.toggle, at.text_input) for w in kind}
    for name in catalog.persisted():
        if name == "collection":
            continue
        rule = catalog.entry(name).rule
        assert rule.label in widgets, name
        w = widgets[rule.label]
        if rule.kind in ("int", "float"):
            lo, hi, step = catalog.widget_range(name)
            assert (w.min, w.max, w.step) == (lo, hi, step), name
        if rule.kind == "choice":
            assert sorted(w.options) == sorted(rule.choices), name
        assert w.help == rule.help, name
