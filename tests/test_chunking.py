"""The chunker on real fixtures: sizes, overlap, boundaries, provenance, stable ids."""

from __future__ import annotations

import hashlib
import html
import re
from pathlib import Path

import pytest

from ragcore.ingest.chunking import (
    chunk_document,
    chunk_id,
    chunk_matches_source,
    normalize_ws,
    text_of_lines,
)
from ragcore.ingest.loaders import load_bytes, load_file
from ragcore.types import Chunk, LoadedDocument, SourceLine

DATA = Path(__file__).parent / "data" / "loaders"
FIXTURES = [
    "notes.txt",
    "guide.md",
    "doc.rst",
    "engine.py",
    "widget.js",
    "tricky.html",
    "django-tutorial01.html",
    "django-geoip2.html",
]
SIZES = [(180, 30), (60, 15), (25, 0)]


def load(name: str) -> LoadedDocument:
    return load_file(DATA / name, DATA, max_bytes=20_000_000)


def words(text: str) -> int:
    return len(text.split())


def visible(raw_line: str) -> str:
    """A crude reading of one HTML source line: <br> is a space, other tags vanish."""
    return normalize_ws(html.unescape(re.sub(r"<[^>]*>", "", re.sub(r"<br\s*/?>", " ", raw_line))))


def text_doc(lines: list[str], path: str = "t.txt") -> LoadedDocument:
    return load_bytes("\n".join(lines).encode() + b"\n", path)


def make_pdf(path: Path, pages: list[list[str]]) -> None:
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=A4)
    for lines in pages:
        for i, text in enumerate(lines):
            c.drawString(40, 810 - 14 * i, text)
        c.showPage()
    c.save()


@pytest.fixture(scope="module")
def docs() -> dict[str, LoadedDocument]:
    return {name: load(name) for name in FIXTURES}


# --------------------------------------------------------------------------- provenance


@pytest.mark.parametrize("size,overlap", SIZES)
@pytest.mark.parametrize("name", FIXTURES)
def test_provenance_of_every_chunk(
    docs: dict[str, LoadedDocument], name: str, size: int, overlap: int
) -> None:
    doc = docs[name]
    chunks = chunk_document(doc, chunk_size=size, chunk_overlap=overlap)
    assert chunks
    raw_lines = (DATA / name).read_text().split("\n")
    for c in chunks:
        assert chunk_matches_source(doc, c), c.locator
        if doc.kind == "html":
            # The extractor's own lines contain the chunk ...
            source = text_of_lines(doc, c.start_line, c.end_line)
            assert normalize_ws(c.text) in normalize_ws(source)
            # ... and every chunk line really is on a source line inside the span.
            span = [visible(raw) for raw in raw_lines[c.start_line - 1 : c.end_line]]
            for line in c.text.split("\n"):
                for cell in normalize_ws(line).removeprefix("| ").split(" | "):
                    assert any(cell in s for s in span), (c.locator, line)
        else:
            # Text kinds: the original file's lines start..end are the chunk, exactly.
            assert "\n".join(raw_lines[c.start_line - 1 : c.end_line]) == c.text, c.locator


def test_pdf_chunks_keep_pages_and_provenance(tmp_path: Path) -> None:
    page1 = [f"Page one line {i} talks about vector search and evidence." for i in range(40)]
    page2 = [f"Page two line {i} talks about citations and answers." for i in range(30)]
    make_pdf(tmp_path / "p.pdf", [page1, page2])
    doc = load_file(tmp_path / "p.pdf", tmp_path, max_bytes=20_000_000)
    chunks = chunk_document(doc, chunk_size=60, chunk_overlap=10)
    assert {c.page for c in chunks} == {1, 2}
    for c in chunks:
        assert chunk_matches_source(doc, c)
        own = [line for line in doc.lines if line.text and line.text in c.text.split("\n")]
        assert all(line.page == c.page for line in own)
        assert ("one" in c.text) != ("two" in c.text)  # never both pages in one chunk
    assert next(c for c in chunks if "Page two line 0 " in c.text).start_line == 1


def test_text_of_lines_returns_the_source_lines(docs: dict[str, LoadedDocument]) -> None:
    raw = (DATA / "guide.md").read_text().split("\n")
    assert text_of_lines(docs["guide.md"], 6, 8) == "\n".join(raw[5:8])
    tricky = text_of_lines(docs["tricky.html"], 15, 16)
    assert tricky == "\nSecond paragraph, unclosed, with inline\ncode spanning lines."


# --------------------------------------------------------------------------- size & boundaries


@pytest.mark.parametrize("size,overlap", SIZES)
def test_chunks_respect_size_and_never_cross_sections(
    docs: dict[str, LoadedDocument], size: int, overlap: int
) -> None:
    for name, doc in docs.items():
        chunks = chunk_document(doc, chunk_size=size, chunk_overlap=overlap)
        assert [c.ordinal for c in chunks] == list(range(len(chunks)))
        for c in chunks:
            assert words(c.text) <= size, (name, c.locator)
            assert re.search(r"[^\W_]", c.text)
            assert c.text == c.text.strip("\n") and c.text.split("\n")[0].strip()
            assert c.title == doc.title and c.path == doc.path and c.doc_hash == doc.doc_hash
            inside = [
                ln for ln in doc.lines if c.start_line <= ln.no <= c.end_line and ln.text.strip()
            ]
            if doc.kind != "html":
                assert all(ln.section == c.section and ln.anchor == c.anchor for ln in inside)
            else:
                # HTML lines can share a source line across a boundary; the chunk's own can't.
                own = [ln for ln in inside if ln.text in c.text.split("\n")]
                assert any(ln.section == c.section and ln.anchor == c.anchor for ln in own)
            if doc.kind == "html":
                assert "\n\n\n" not in c.text


def test_section_change_forces_a_cut() -> None:
    doc = load_bytes(b"# A\none two\n# B\nthree four\n", "s.md")
    chunks = chunk_document(doc, chunk_size=100, chunk_overlap=10)
    got = [(c.section, c.start_line, c.end_line) for c in chunks]
    assert got == [(("A",), 1, 2), (("B",), 3, 4)]
    assert [c.anchor for c in chunks] == ["a", "b"]


def test_python_chunks_follow_functions(docs: dict[str, LoadedDocument]) -> None:
    chunks = chunk_document(docs["engine.py"], chunk_size=180, chunk_overlap=30)
    assert [c.section for c in chunks] == [
        (),
        ("def top",),
        ("class Engine",),
        ("class Engine", "def ask"),
        ("class Engine", "def run"),
        (),
    ]


def test_overlap_is_whole_lines_worth_about_overlap_words() -> None:
    # 20 lines of 10 words; 50-word chunks with 20 words of overlap: 5 lines, step 3.
    lines = [" ".join(f"w{i}_{j}" for j in range(10)) for i in range(1, 21)]
    chunks = chunk_document(text_doc(lines), chunk_size=50, chunk_overlap=20)
    spans = [(c.start_line, c.end_line) for c in chunks]
    assert spans == [(1, 5), (4, 8), (7, 11), (10, 14), (13, 17), (16, 20)]
    assert chunk_document(text_doc(lines), chunk_size=50, chunk_overlap=0)[1].start_line == 6


def test_cuts_prefer_paragraph_breaks() -> None:
    para = lambda k: [f"paragraph {k} line {i} has some words" for i in range(4)]  # noqa: E731
    lines = para(1) + [""] + para(2) + [""] + para(3)  # 7 words per line, 28 per paragraph
    chunks = chunk_document(text_doc(lines), chunk_size=50, chunk_overlap=0)
    # 50 words would end inside paragraph 2; the cut moves back to the blank line.
    assert [(c.start_line, c.end_line) for c in chunks] == [(1, 4), (6, 9), (11, 14)]


def test_over_long_line_becomes_word_windows() -> None:
    long_line = "  ".join(f"word{i}" for i in range(250))  # double spaces: slices, not re-joins
    doc = text_doc(["Short intro line.", long_line, "Short outro line."])
    chunks = chunk_document(doc, chunk_size=100, chunk_overlap=10)
    windows = [c for c in chunks if c.start_line == 2]
    others = [c.text for c in chunks if c.start_line != 2]
    assert others == ["Short intro line.", "Short outro line."]
    assert len(windows) == 3
    for c in windows:
        assert c.end_line == 2 and words(c.text) <= 100
        assert c.text in long_line and chunk_matches_source(doc, c)
    assert windows[0].text.split()[-10:] == windows[1].text.split()[:10]
    assert windows[-1].text.endswith("word249")
    assert len({c.chunk_id for c in windows}) == 3


def test_chunks_without_letters_or_digits_are_skipped() -> None:
    doc = load_bytes(b"---\n\n***\n\n+++\n", "x.txt")
    assert chunk_document(doc, chunk_size=3, chunk_overlap=1) == []


def test_heading_only_chunks_are_skipped() -> None:
    # "# Title" directly followed by "## Sub": the title alone says nothing worth a slot
    doc = load_bytes(b"# Title\n\n---\n\n## Empty\n\n***\n\n## Full\n\nReal text here.\n", "x.md")
    chunks = chunk_document(doc, chunk_size=50, chunk_overlap=5)
    assert [c.text for c in chunks] == ["## Full\n\nReal text here."]


# --------------------------------------------------------------------------- ids


def test_chunk_id_formula_and_determinism(docs: dict[str, LoadedDocument]) -> None:
    assert chunk_id("a.md", 1, 2, "x") == hashlib.sha256(b"a.md\x001\x002\x00x").hexdigest()[:32]
    doc = docs["django-tutorial01.html"]
    first = chunk_document(doc, chunk_size=180, chunk_overlap=30)
    again = chunk_document(load("django-tutorial01.html"), chunk_size=180, chunk_overlap=30)
    assert first == again
    assert len({c.chunk_id for c in first}) == len(first)
    for c in first:
        assert c.chunk_id == chunk_id(c.path, c.start_line, c.end_line, c.text)
    moved = LoadedDocument(path="other.html", kind=doc.kind, doc_hash=doc.doc_hash, lines=doc.lines)
    assert chunk_document(moved, chunk_size=180, chunk_overlap=30)[0].chunk_id != first[0].chunk_id


def test_bad_parameters() -> None:
    doc = LoadedDocument(path="a.txt", kind="text", doc_hash="0", lines=(SourceLine(1, "hi"),))
    with pytest.raises(ValueError):
        chunk_document(doc, chunk_size=10, chunk_overlap=10)
    with pytest.raises(ValueError):
        chunk_document(doc, chunk_size=0, chunk_overlap=0)
    assert [c.text for c in chunk_document(doc, chunk_size=1, chunk_overlap=0)] == ["hi"]


def test_django_chunks_read_like_documentation(docs: dict[str, LoadedDocument]) -> None:
    doc = docs["django-tutorial01.html"]
    chunks: list[Chunk] = chunk_document(doc, chunk_size=180, chunk_overlap=30)
    first = "Writing your first Django app, part 1\n\nLet’s learn by example."
    assert chunks[0].text.startswith(first)
    assert chunks[0].anchor == "writing-your-first-django-app-part-1"
    route = next(c for c in chunks if c.section[-1:] == ("path() argument: route",))
    assert route.anchor == "path-argument-route"
    assert route.locator.startswith("django-tutorial01.html:")
    assert route.locator.endswith("#path-argument-route")
    assert chunks[-1].text.endswith("to start working with the\ndatabase.")
