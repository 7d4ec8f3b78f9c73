"""Saving a notebook: compact JSON, one line per cell, each cell serialised once per change
(ui/notebook/store.py); what is read back is what was saved, after every kind of change."""

from __future__ import annotations

import json

from ui.notebook import Cell, Notebook, NotebookStore, Run
from ui.notebook.store import notebook_json


def _run(text: str, n_candidates: int = 3) -> Run:
    cands = [{"rank": i, "chunk": {"chunk_id": f"c{i}", "text": f"passage {i} <b>"}} for i in range(n_candidates)]
    return Run(answer={"answer": text, "status": "ok", "candidates": cands, "metadata": {"corpus_version": "v1"}}, outcome="ok")


def _notebook(n: int) -> Notebook:
    cells = []
    for i in range(n):
        c = Cell(question=f"Question {i} — “quoted”?")
        c.add_run(_run(f"Answer {i} [1]."))
        cells.append(c)
    return Notebook("guide", cells)


def _same(store: NotebookStore, nb: Notebook) -> None:
    assert store.load("guide").to_dict() == json.loads(json.dumps(nb.to_dict()))


def test_the_file_is_the_notebooks_dict_one_line_per_cell(tmp_path):
    store, nb = NotebookStore(tmp_path), _notebook(4)
    store.save(nb)
    text = store.path_for("guide").read_text(encoding="utf-8")
    assert json.loads(text) == json.loads(json.dumps(nb.to_dict()))
    assert len(text.splitlines()) == 4 + 2  # the head, a line per cell, the closing bracket
    assert "“quoted”" in text  # not \\u-escaped, as before
    assert json.loads(notebook_json(Notebook("guide"))) == Notebook("guide").to_dict()


def test_every_change_to_a_cell_is_saved_though_unchanged_cells_are_reused(tmp_path):
    store, nb = NotebookStore(tmp_path), _notebook(3)
    store.save(nb)
    first = nb.cells[0]
    first.add_run(_run("A second answer."))  # the older run loses its candidate pool: a new answer dict
    store.save(nb)
    _same(store, nb)
    saved = store.load("guide").cells[0]
    assert [r.text for r in saved.runs] == ["Answer 0 [1].", "A second answer."]
    assert saved.runs[0].answer["candidates"] == [] and saved.runs[1].answer["candidates"]
    nb.cells[1].runs[-1].outcome = "cancelled"
    nb.cells[2].runs[-1].answer = {**nb.cells[2].runs[-1].answer, "answer": "changed"}
    nb.upsert(Cell(question="new"))
    store.save(nb)
    _same(store, nb)
    nb.remove(nb.cells[0].id)
    store.save(nb)
    _same(store, nb)


def test_a_save_after_an_answer_serialises_only_the_new_cell(tmp_path, monkeypatch):
    import ui.notebook.store as store_mod

    store, nb = NotebookStore(tmp_path), _notebook(20)
    store.save(nb)
    dumped: list[str] = []
    real = store_mod.json.dumps
    monkeypatch.setattr(store_mod.json, "dumps", lambda obj, **kw: dumped.append(str(obj.get("id"))) or real(obj, **kw))
    new = Cell(question="one more")
    new.add_run(_run("New."))
    store.upsert_cell("guide", new, known=(store.signature("guide"), nb))
    assert [d for d in dumped if d != "None"] == [new.id]  # the head has no id
    monkeypatch.undo()
    assert store.load("guide").cells[-1].id == new.id and len(store.load("guide").cells) == 21
