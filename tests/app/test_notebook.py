"""ui.notebook (the app's notebooks): cells, persistence, recording a stream, diffs, stamps and exports (no Streamlit)."""

from __future__ import annotations

import json
import time

import pytest

from ragcore.settings.config import LlmSettings, RagcoreSettings
from ui.notebook import (
    FORMAT, MAX_RUNS, Cell, Notebook, NotebookError, NotebookStore, Run, RunRecorder, badges, cells_from_export,
    config_stamp, diff_runs, export_html, export_json, export_markdown,
)
from ragcore.types import Answer, Chunk, Citation, Event, Evidence, SentenceCheck, Validation


def chunk(path: str, a: int, b: int, text: str = "Some text.") -> Chunk:
    return Chunk(chunk_id=f"{path}:{a}-{b}", text=text, path=path, doc_hash="h", kind="markdown", start_line=a, end_line=b,
                 section=("Guide", "Part"))


def answer(text: str, ev: list[Chunk], *, top_k: int = 6, version: str = "v1", key: str | None = None, status="ok") -> Answer:
    evidence = tuple(Evidence(n=i, chunk=c, origin="corpus", score=0.5 - i / 100, score_kind="rrf") for i, c in enumerate(ev, 1))
    cits = tuple(
        Citation(n=e.n, chunk_id=e.chunk.chunk_id, path=e.chunk.path, start_line=e.chunk.start_line, end_line=e.chunk.end_line,
                 section=e.chunk.section, page=None, anchor=None, url=f"?path={e.chunk.path}&lines={e.chunk.start_line}-{e.chunk.end_line}",
                 retrieval_score=e.score, score_kind="rrf", support=0.9)
        for e in evidence[:1]
    )
    s = RagcoreSettings(top_k=top_k, llm=LlmSettings(model="m" if key else None, api_key=key))
    val = Validation(sentences=(SentenceCheck(text="x", citations=(), support=0.0, flags=("uncited",)),))
    return Answer(question="Q?", answer=text, status=status, citations=cits, evidence=evidence, validation=val,
                  metadata={"context": "corpus", "collection": "guide", "config": s.public_dict(), "corpus_version": version,
                            "generator": "extractive", "latency_ms": {"total": 12.0}, "request_id": "r"})


def ev(kind: str, seq: int, **data) -> Event:
    return Event(type=kind, request_id="rid", seq=seq, ts=time.time(), data=data)  # type: ignore[arg-type]


def test_store_roundtrip_upsert_delete_and_run_cap(tmp_path):
    store = NotebookStore(tmp_path / "nb")
    assert store.load("guide").cells == []
    cell = Cell(question="What?", context_mode="both", selection={"text": "passage", "source": "a.md", "start_line": 3})
    for i in range(MAX_RUNS + 2):
        cell.add_run(Run(answer=answer(f"Answer {i} [1].", [chunk("a.md", 1, 4)]).to_dict(), outcome="ok"))
    store.upsert_cell("guide", cell)
    # a second session adds a cell meanwhile: nothing is lost
    other = NotebookStore(tmp_path / "nb")
    other.upsert_cell("guide", Cell(question="Other?"))
    nb = store.load("guide")
    assert [c.question for c in nb.cells] == ["What?", "Other?"]
    got = nb.cells[0]
    assert len(got.runs) == MAX_RUNS and got.current.text == f"Answer {MAX_RUNS + 1} [1]."
    assert got.selection == {"text": "passage", "source": "a.md", "start_line": 3} and got.context_mode == "both"
    store.delete_cell("guide", got.id)
    assert [c.question for c in store.load("guide").cells] == ["Other?"]
    assert store.path_for("../evil/name").parent == store.directory
    store.clear("guide")
    assert store.load("guide").cells == []


def test_a_damaged_file_is_kept_aside_with_a_clear_message(tmp_path):
    store = NotebookStore(tmp_path)
    store.path_for("guide").write_text("{not json")
    with pytest.raises(NotebookError, match="damaged"):
        store.load("guide")
    assert store.load("guide").cells == []
    assert list(tmp_path.glob("guide.corrupt-*.json"))


def test_recorder_keeps_a_finished_answer_and_builds_a_partial_one_when_stopped():
    a = answer("Done [1].", [chunk("a.md", 1, 2)])
    r = RunRecorder("Q?", context_mode="corpus", collection="guide", config={"top_k": 6}, corpus_version="v1")
    for i, e in enumerate([ev("started", 0), ev("sources", 1, evidence=a.evidence, candidates=()), ev("token", 2, text="Done "),
                           ev("message", 3, text="Done [1]."), ev("done", 4, status="ok", answer=a)]):
        r.feed(e)
    run = r.finish()
    assert run.outcome == "ok" and run.answer == a.to_dict()

    r = RunRecorder("Q?", context_mode="corpus", collection="guide", config={"top_k": 6}, corpus_version="v1")
    r.feed(ev("sources", 1, evidence=a.evidence, candidates=()))
    r.feed(ev("token", 2, text="Half an "))
    r.feed(ev("token", 3, text="answer"))
    run = r.finish(cancelled=True)
    assert run.outcome == "cancelled" and run.text == "Half an answer"
    assert run.answer["status"] == "partial" and "Stopped" in run.answer["error_message"]
    assert run.evidence and run.answer["metadata"]["corpus_version"] == "v1" and run.answer["metadata"]["cancelled"]
    json.dumps(run.to_dict())

    # the engine's own cancelled ending is recorded as cancelled too
    partial = Answer(question="Q?", answer="Half", status="partial", error_message="Cancelled by the user.")
    r = RunRecorder("Q?", context_mode="corpus", collection="guide", config={})
    r.feed(ev("done", 1, status="cancelled", answer=partial))
    assert r.finish().outcome == "cancelled"


def test_diff_reports_answer_evidence_status_and_config_changes():
    c1, c2, c3 = chunk("a.md", 1, 4), chunk("b.md", 5, 9), chunk("c.md", 1, 2)
    old = Run(answer=answer("First claim [1]. Second claim [2].", [c1, c2]).to_dict(), outcome="ok")
    new = Run(answer=answer("Second claim [1]. New claim [2].", [c2, c3], top_k=2, version="v2").to_dict(), outcome="ok")
    d = diff_runs(old, new)
    assert d.changed and d.answer_changed
    assert ("-", "First claim [1].") in d.answer_diff and ("+", "New claim [2].") in d.answer_diff
    assert [c.locator for c in d.added] == ["c.md:1-2"] and [c.locator for c in d.dropped] == ["a.md:1-4"]
    assert [(c.locator, c.old_n, c.new_n) for c in d.moved] == [("b.md:5-9", 2, 1)]
    keys = {k: (a, b) for k, a, b in d.config_changes}
    assert keys["top_k"] == (6, 2) and keys["corpus_version"] == ("v1", "v2")
    assert "request_id" not in keys and not any(k.startswith("latency") for k in keys)
    assert "1 evidence added" in d.summary() and "answer changed" in d.summary()
    same = diff_runs(old, old)
    assert not same.changed and same.summary().startswith("No change")
    bumped = old.answer | {"evidence": [dict(e, score=e["score"] + 0.1) for e in old.answer["evidence"]]}
    d = diff_runs(old, Run(answer=bumped, outcome="ok"))
    assert [c.locator for c in d.rescored] == ["a.md:1-4", "b.md:5-9"] and not d.moved and d.changed


def test_stamp_and_badges_never_show_a_key():
    run = Run(answer=answer("A [1].", [chunk("a.md", 1, 2)], key="sk-secret").to_dict(), outcome="partial")
    stamp = config_stamp(run.answer)
    assert stamp["collection"] == "guide" and stamp["top-K"] == "6" and stamp["threshold"] == "0.00"
    assert stamp["API key"] == "set" and "sk-secret" not in json.dumps(stamp)
    labels = dict(badges(run))
    assert labels["partial"] == "warn" and labels["1 uncited"] == "warn"


def test_the_confidence_badge_sits_beside_the_status():
    base = answer("A [1].", [chunk("a.md", 1, 2)]).to_dict()
    sure = dict(badges(Run(answer=base | {"confidence": {"value": 0.86, "level": "high"}}, outcome="ok")))
    assert list(sure)[:2] == ["ok", "confidence high (0.86)"] and sure["confidence high (0.86)"] == "ok"
    unsure = dict(badges(Run(answer=base | {"confidence": {"value": 0.31, "level": "low"}}, outcome="partial")))
    assert unsure["confidence low (0.31)"] == "warn"
    assert not any(k.startswith("confidence") for k in dict(badges(Run(answer=base, outcome="ok"))))
    hint = base | {"confidence": {"value": 0.48, "level": "low", "decides": False}}  # not calibrated yet: not shown
    assert not any(k.startswith("confidence") for k in dict(badges(Run(answer=hint, outcome="ok"))))


def test_exports_markdown_html_json():
    evil = chunk("evil.md", 1, 1, "x")
    nb = Notebook("guide", [
        Cell(question="What <b>is</b> it?", runs=[Run(answer=answer("It is <script>alert(1)</script> [1].", [evil]).to_dict(), outcome="ok")]),
        Cell(question="Not run yet"),
    ])
    data = json.loads(export_json(nb))
    assert data["format"] == FORMAT and len(data["cells"]) == 1
    a = data["cells"][0]["answer"]
    assert a["answer"] == "It is <script>alert(1)</script> [1]." and a["citations"][0]["path"] == "evil.md"
    assert cells_from_export(data)[0]["question"] == "What <b>is</b> it?"
    md = export_markdown(nb)
    assert "## 1. What &lt;b&gt;is&lt;/b&gt; it?" in md and "&lt;script&gt;" in md and "- [1] `evil.md:1-1`" in md
    page = export_html(nb)
    assert "<script" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<b>is</b>" not in page
    assert 'href="#c-' in page and "evil.md:1-1" in page


def test_recorder_keeps_the_cited_lines_and_they_survive_a_reload(tmp_path):
    text = "line one\nline two\nline three\nline four"
    md = chunk("a.md", 10, 13, text)
    html_chunk = Chunk(chunk_id="h", text="- item one\n  more\n- item two", path="p.html", doc_hash="h", kind="html",
                       start_line=40, end_line=60)
    a = answer("Two [1]. Item [2].", [md, html_chunk])
    cits = list(a.citations)
    narrowed = Citation(**{**cits[0].__dict__, "start_line": 11, "end_line": 12})  # the checker narrowed [1]
    whole = Citation(n=2, chunk_id="h", path="p.html", start_line=40, end_line=60, section=(), page=None, anchor=None,
                     url="?path=p.html&lines=40-60", retrieval_score=0.4, score_kind="rrf", support=0.8)
    a = Answer(**{**a.__dict__, "citations": (narrowed, whole)})
    r = RunRecorder("Q?", context_mode="corpus", collection="guide", config={})
    r.feed(ev("done", 1, status="ok", answer=a))
    run = r.finish()
    # [1]: only the cited lines of the chunk; [2] (HTML, lines are not 1:1): the whole chunk
    assert run.passages == {"1": "line two\nline three", "2": "- item one\n  more\n- item two"}
    assert run.answer == a.to_dict()  # the Answer contract itself is unchanged
    store = NotebookStore(tmp_path)
    store.upsert_cell("guide", Cell(question="Q?", runs=[run]))
    back = store.load("guide").cells[0].current
    assert back.passages == run.passages and back.passage(1) == "line two\nline three"
    md_out = export_markdown(store.load("guide"))
    assert "```text\nline two\nline three\n```" in md_out
    # a stopped run has no citations, hence no passages, and says so with an empty record
    r = RunRecorder("Q?", context_mode="corpus", collection="guide", config={})
    r.feed(ev("token", 1, text="Half"))
    assert r.finish(cancelled=True).passages == {}
