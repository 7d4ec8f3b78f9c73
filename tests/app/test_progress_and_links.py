"""Honest ingest progress (by chunks, an ETA after the first batches, a cancel message that says what
was kept), meaningful default collection names, links that carry the lab's setup, passages in place."""

from __future__ import annotations

from ui.citepanel import panel_html, quoted_test
from ui.jobs import IngestJob
from ui.library_admin import slug
from ui.share import parse_params


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_progress_moves_with_chunks_and_estimates_after_the_first_batch():
    clock = Clock()
    sizes = {f"p{i:02d}.html": 10_000 for i in range(74)}
    job = IngestJob(collection="flask", label="x", sizes=sizes, clock=clock, started=clock.t)
    for i in range(10):  # the reader runs ahead of the model: ten files read, none written
        job.progress(0, 74, f"p{i:02d}.html")
    assert job.eta_s is None and "estimating" in job.status_line()
    clock.t += 8
    job.chunk_progress(64, 120)  # the first batch written: 64 of 120 chunks queued from 10 of 74 files
    assert job.chunks_expected == 120 + round(64 * 10_000 * 120 / 100_000)
    assert 0 < job.fraction < 0.1
    assert job.eta_s is not None and "left" in job.status_line() and "64 of ~" in job.status_line()
    before = job.fraction
    clock.t += 4
    job.chunk_progress(128, 130)
    assert job.fraction > before  # moves with every batch, whatever the file counter says


def test_cancel_message_says_what_the_collection_kept():
    job = IngestJob(collection="flask", label="x", sizes={"a": 1}, done=1, total=74)
    job.kept = (2, 192)
    assert "keeps 2 documents (192 chunks)" in job.cancel_summary()


def test_default_name_skips_generic_folder_names():
    assert slug("/home/me/flask/docs/_build/html") == "flask"
    assert slug("/data/field-notes/") == "field-notes"
    assert slug("") == ""


def test_a_link_sets_the_lab_and_the_cell_and_bad_values_are_dropped():
    got = parse_params({"q": "What is top-K?", "k": "99", "thr": "0.29", "mode": "dense", "fusion": "bogus",
                        "dedupe": "0", "cell": "abc123", "fw": "x"})
    assert got == {"lab_question": "What is top-K?", "lab_cfg_top_k": 50, "lab_cfg_threshold": 0.29,
                   "lab_cfg_mode": "dense", "lab_dedupe": False, "nb_selected_cell": "abc123"}
    assert "nb_selected_cell" not in parse_params({"cell": "<script>"})


def test_passages_panel_escapes_text_and_marks_the_quoted_line():
    cits = [{"n": 1, "path": "a.md", "start_line": 3, "end_line": 3}, {"n": 2, "path": "b.html", "start_line": 40, "end_line": 44}]
    ev = {1: {"chunk": {"text": "# T\n\nThe threshold applies to cosine <script>x</script>.\nmore", "start_line": 1, "end_line": 4}},
          2: {"chunk": {"text": "one block of html text", "start_line": 40, "end_line": 44}}}
    out = panel_html("c1", cits, ev, {1: "[1] a.md:3", 2: "[2] b.html:40-44"},
                     {1: ["The threshold applies to cosine <script>x</script>. [1]"]}, "guide", source=None)
    assert 'id="cite-c1-1"' in out and 'id="cite-c1-2"' in out and 'href="#cite-c1-2"' in out
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert 'class="rc-line hl q" data-line="3"' in out  # cited and quoted
    assert "library?path=a.md&amp;lines=3-3&amp;collection=guide" in out
    assert quoted_test(["Short."])("Short.") is False  # too short to mark reliably
