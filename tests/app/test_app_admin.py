"""Collection management (ragcore/engine/collections_admin.py) and the persisted settings file
(ragcore/settings/app_file.py), against a real Engine over embedded Qdrant in a temp folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # real ingests: a few seconds each

from ragcore.settings.app_file import SettingsFileError, load_app_settings, save_app_settings, settings_path
from ragcore.settings.config import RagcoreSettings
from ragcore.settings.resolve import resolve
from ragcore.engine.collections_admin import (
    AdminError, Cancelled, delete_document, is_incomplete, record_cancelled, rename_collection, staleness,
)
from tests.conftest import REPO


def _folder(tmp_path: Path, n: int = 3) -> Path:
    d = tmp_path / "notes"
    d.mkdir()
    for i in range(n):
        (d / f"note{i}.md").write_text(f"# Note {i}\n\nThe number {i} is about topic {i} and threshold tuning.\n" * 3)
    return d


def test_rename_moves_points_vectors_and_metadata(make_engine, tmp_path):
    e = make_engine()
    folder = _folder(tmp_path)
    e.ingest([folder], "notes", calibrate=False)
    before = e.store.info("notes")
    hits_before = [c.chunk.chunk_id for c in e.retrieve("topic 1", collection="notes").kept]
    e.ingest([folder], "other", calibrate=False)
    with pytest.raises(AdminError, match="already exists"):
        rename_collection(e, "notes", "other")
    moved = rename_collection(e, "notes", "renamed")
    assert moved == before.chunks
    assert not e.store.exists("notes") and e.store.read_meta("notes") == {}
    after = e.store.info("renamed")
    assert (after.chunks, after.corpus_version, after.root, after.documents) == (before.chunks, before.corpus_version, before.root, 3)
    assert [c.chunk.chunk_id for c in e.retrieve("topic 1", collection="renamed").kept] == hits_before
    # the renamed collection is still incremental: a re-ingest finds every file unchanged
    report = e.ingest([folder], "renamed", calibrate=False)
    assert report.count("unchanged") == 3 and report.chunks_written == 0


def test_delete_document_and_staleness(make_engine, tmp_path):
    e = make_engine()
    folder = _folder(tmp_path)
    e.ingest([folder], "notes", calibrate=False)
    v0 = e.store.info("notes").corpus_version
    assert staleness(e, "notes").summary() == "up to date"
    delete_document(e, "notes", "note1.md")
    info = e.store.info("notes")
    assert info.documents == 2 and info.corpus_version != v0
    assert [p for p, _ in e.documents("notes")] == ["note0.md", "note2.md"]
    with pytest.raises(AdminError):
        delete_document(e, "notes", "note1.md")
    # on disk: note1 is still there (→ added), note2 changes, note0 goes, note3 is new
    (folder / "note2.md").write_text("# Note 2\n\nRewritten.\n")
    (folder / "note0.md").unlink()
    (folder / "note3.md").write_text("# Note 3\n\nNew.\n")
    st = staleness(e, "notes")
    assert st.checked and st.stale
    assert (st.added, st.changed, st.removed) == (("note1.md", "note3.md"), ("note2.md",), ("note0.md",))
    e.ingest([folder], "notes", calibrate=False)
    assert not staleness(e, "notes").stale


def test_cancel_from_progress_keeps_what_was_written(make_engine, tmp_path):
    e = make_engine()
    folder = _folder(tmp_path, n=4)
    seen = []

    def progress(done: int, total: int, path: str) -> None:
        seen.append(done)
        if done == 2:
            raise Cancelled()

    with pytest.raises(Cancelled):
        e.ingest([folder], "notes", progress=progress, calibrate=False)
    record_cancelled(e, "notes", str(folder))
    meta = e.store.read_meta("notes")
    assert is_incomplete(meta) and meta["root"] == str(folder)
    st = staleness(e, "notes")
    assert st.stale and st.incomplete
    report = e.ingest([folder], "notes", calibrate=False)  # a re-run completes it
    assert report.count("failed") == 0 and e.store.info("notes").documents == 4
    assert not staleness(e, "notes").stale


def test_settings_file_default_file_environment(tmp_path):
    d = tmp_path / "data"
    loaded = load_app_settings(d, env={})
    assert loaded.settings.top_k == 6 and loaded.source("top_k") == "default"
    save_app_settings(d, {"top_k": 9, "llm.model": "m1", "llm.base_url": "http://127.0.0.1:1/v1"})
    loaded = load_app_settings(d, env={})
    assert (loaded.settings.top_k, loaded.settings.llm.model) == (9, "m1")
    assert loaded.source("top_k") == "file" and loaded.source("llm.model") == "file"
    # the environment wins, and says so
    loaded = load_app_settings(d, env={"RAGCORE_TOP_K": "4", "OPENAI_API_KEY": "sk-env"})
    assert loaded.settings.top_k == 4 and loaded.source("top_k") == "environment (RAGCORE_TOP_K)"
    assert loaded.source("llm.api_key") == "environment (OPENAI_API_KEY)"
    # a key from the secrets store, never from the file
    secrets = tmp_path / "secrets.toml"
    secrets.write_text('OPENAI_API_KEY = "sk-from-secrets"\n')
    loaded = resolve(RagcoreSettings, {}, overrides={"data_dir": d}, secrets_files=[secrets])
    assert loaded.settings.llm.api_key == "sk-from-secrets" and loaded.source("llm.api_key") == "secrets (OPENAI_API_KEY)"
    with pytest.raises(SettingsFileError, match="secret"):
        save_app_settings(d, {"llm.api_key": "sk-x"})
    assert "sk-" not in settings_path(d).read_text()
    # a bad value in the file is ignored with a reason, not a crash
    raw = json.loads(settings_path(d).read_text())
    raw["settings"]["top_k"] = 0
    settings_path(d).write_text(json.dumps(raw))
    loaded = load_app_settings(d, env={})
    assert loaded.settings.top_k == 6 and loaded.problems and "top_k" in loaded.problems[0]
    save_app_settings(d, {"top_k": None})
    assert "top_k" not in json.loads(settings_path(d).read_text())["settings"]


def test_html_viewer_numbers_every_row_of_a_source_line():
    from ui.viewer import Row, SourceView, viewer_html

    rows = [Row(86, 86, "concrete model"), Row(86, 86, ""), Row(86, 86, "A non-abstract model."), Row(87, 87, "field")]
    html = viewer_html(SourceView("g.html", "html", rows, "disk"), page=None, highlight=None, selection=None, window=None)
    # issue 42: a row without a number read as a line outside the source; the continuing row is dimmed
    assert html.count('<span class="rc-no">86</span>') == 2 and '<span class="rc-no"></span>' not in html
    assert html.count('class="rc-line cont" data-line="86"') == 1
    assert "A non-abstract model." in html and html.count('data-line="86"') == 2  # the blank continuation is dropped


def test_upload_limit_matches_the_file_limit_and_the_evaluate_page_suggests_the_bundled_set():
    import tomllib

    from ragcore.settings.config import RagcoreSettings

    cfg = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["maxUploadSize"] * 1_000_000 == RagcoreSettings().max_file_bytes
