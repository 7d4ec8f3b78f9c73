from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragcore.eval.dataset import DatasetError, EvalDataset, load_dataset, load_dataset_bytes
from tests.conftest import REPO

DJANGO = REPO.parent / "shared" / "data" / "django-docs-qa"


def _jsonl(*rows: object) -> str:
    return "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n"


@pytest.mark.skipif(
    not (DJANGO / "questions.jsonl").is_file(),
    reason=f"the django-docs-qa data set is not at {DJANGO}",
)
def test_loads_django_docs_qa() -> None:
    ds = load_dataset(DJANGO)
    assert ds.name == "django-docs-qa"
    assert ds.root == DJANGO and ds.corpus_dir == DJANGO / "corpus"
    assert (len(ds.answerable), len(ds.unanswerable), len(ds)) == (28, 40, 68)
    q = ds.questions[0]
    assert q.id == "dj-faq-0001"
    assert q.relevant == ("ref/settings.html#std-setting-SESSION_COOKIE_DOMAIN",)
    assert q.relevant_docs == ("ref/settings.html",)
    assert q.source and q.answer.startswith("The login cookie")
    assert sum(len(q.relevant) for q in ds.questions) == 48  # README: relevance links
    assert all(not q.relevant_docs for q in ds.unanswerable)
    for q in ds.answerable:  # every judged page is in the corpus
        assert q.relevant_docs and all((ds.corpus_dir / d).is_file() for d in q.relevant_docs)


def test_folder_defaults_and_derived_fields(tmp_path: Path) -> None:
    (tmp_path / "questions.jsonl").write_text(
        _jsonl(
            {"id": "q1", "question": "How?", "relevant": ["a.html#x", "a.html#y", "b.html"]},
            "",  # blank lines are skipped
            {"question": "  No links?  "},
            {"id": "q3", "question": "Judged elsewhere?", "answerable": True},
        ),
        encoding="utf-8",
    )
    (tmp_path / "unanswerable.jsonl").write_text(
        _jsonl({"id": "u1", "question": "Off topic?", "answer": "n/a", "relevant": []}),
        encoding="utf-8",
    )
    ds = load_dataset(str(tmp_path))
    assert isinstance(ds, EvalDataset) and ds.name == tmp_path.name
    assert ds.corpus_dir is None  # no corpus/ folder here
    q1, q2, q3, u1 = ds.questions
    assert q1.relevant_docs == ("a.html", "b.html") and q1.answerable
    assert q1.answer == "" and q1.source is None
    assert q2.id == "questions-3"  # default id: file stem and line number
    assert q2.question == "No links?" and not q2.answerable and q2.relevant_docs == ()
    assert q3.answerable and q3.relevant_docs == ()
    assert not u1.answerable and u1.answer == "n/a"
    assert [q.id for q in ds.answerable] == ["q1", "q3"]


def test_single_file_and_corpus_next_to_it(tmp_path: Path) -> None:
    (tmp_path / "corpus").mkdir()
    f = tmp_path / "mine.jsonl"
    f.write_text(_jsonl({"id": "q1", "question": "Q?", "relevant_docs": ["x.md"]}), "utf-8")
    ds = load_dataset(f)
    assert ds.name == "mine" and ds.root == tmp_path and ds.corpus_dir == tmp_path / "corpus"
    assert ds.questions[0].relevant_docs == ("x.md",) and ds.questions[0].answerable


def test_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "questions.jsonl"
    f.write_text(_jsonl({"question": "ok"}, {"question": "ok 2"}, '{"question": "broken"'), "utf-8")
    with pytest.raises(DatasetError, match=r"questions\.jsonl, line 3: malformed JSON") as exc:
        load_dataset(tmp_path)
    assert isinstance(exc.value, ValueError)
    assert str(f) in str(exc.value)


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"id": "q"}, "line 2: missing or empty 'question'"),
        ({"question": "Q", "relevant": "a.html"}, "line 2: 'relevant' must be a list of strings"),
        ({"question": "Q", "relevant": ["/abs.html"]}, "line 2: 'relevant' entry '/abs.html'"),
        ({"question": "Q", "answerable": "yes"}, "line 2: 'answerable' must be true or false"),
        ([1, 2], "line 2: expected a JSON object"),
    ],
)
def test_invalid_rows(tmp_path: Path, row: object, message: str) -> None:
    f = tmp_path / "q.jsonl"
    f.write_text(_jsonl({"question": "fine"}, row), "utf-8")
    with pytest.raises(DatasetError, match=message.replace("(", r"\(")):
        load_dataset(f)


def test_missing_and_duplicate(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="no such file"):
        load_dataset(tmp_path / "nope")
    with pytest.raises(DatasetError, match="no questions.jsonl"):
        load_dataset(tmp_path)
    with pytest.raises(DatasetError, match="duplicate question id 'q'"):
        dup = _jsonl({"id": "q", "question": "A"}, {"id": "q", "question": "B"})
        load_dataset_bytes(dup.encode(), "d.jsonl")


def test_bytes_upload() -> None:
    row = {"id": "q1", "question": "Was ist’s?", "relevant": ["p.html#a"]}
    data = ("\ufeff" + _jsonl(row)).encode()
    ds = load_dataset_bytes(data, "upload.jsonl")
    assert ds.name == "upload" and ds.root is None and ds.corpus_dir is None
    assert ds.questions[0].question == "Was ist’s?"  # BOM dropped, UTF-8 kept
    assert ds.questions[0].relevant_docs == ("p.html",)

    with pytest.raises(DatasetError, match=r"^upload\.jsonl, line 2: malformed JSON"):
        load_dataset_bytes(b'{"question": "a"}\nnot json\n', "upload.jsonl")
    with pytest.raises(DatasetError, match="upload.jsonl: not UTF-8"):
        load_dataset_bytes(b'{"question": "\xff"}\n', "upload.jsonl")
