"""Loaders on real files: fixtures in tests/data/loaders, bad files made in tmp_path."""

from __future__ import annotations

import codecs
import hashlib
import html
import os
import re
from pathlib import Path

import pytest

from ragcore.ingest.read.html import extract_html
from ragcore.ingest.read.loaders import (
    SUPPORTED_SUFFIXES,
    LoadError,
    kind_for,
    load_bytes,
    load_file,
)
from ragcore.types import LoadedDocument
from tests.conftest import REPO
from bench.support.pdfs import make_pdf  # noqa: F401  (other test modules import it from here too)

DATA = REPO / "tests" / "data" / "loaders"
BIG = 20_000_000
PNG_MAGIC = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x10\x00\x00\x00\x10\x08\x06"


def load(name: str) -> LoadedDocument:
    return load_file(DATA / name, DATA, max_bytes=BIG)


def by_text(doc: LoadedDocument, text: str):
    return next(line for line in doc.lines if line.text == text)


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def reason_of(path: Path, root: Path, max_bytes: int = BIG) -> str:
    with pytest.raises(LoadError) as err:
        load_file(path, root, max_bytes=max_bytes)
    assert str(err.value) == err.value.reason
    return err.value.reason


# --------------------------------------------------------------------------- dispatch


def test_kind_for_dispatches_by_suffix_case_insensitively() -> None:
    assert kind_for(Path("a/README.md")) == "markdown"
    assert kind_for(Path("x.MARKDOWN")) == "markdown"
    assert kind_for(Path("index.rst")) == "rst"
    assert kind_for(Path("notes.txt")) == "text"
    assert kind_for(Path("page.HTM")) == "html"
    assert kind_for(Path("paper.pdf")) == "pdf"
    assert kind_for(Path("engine.py")) == "code"
    assert kind_for(Path("cfg.yaml")) == "code"
    assert kind_for(Path("photo.png")) is None
    assert kind_for(Path("Makefile")) is None


def test_supported_suffixes_cover_the_documented_set() -> None:
    wanted = {".md", ".markdown", ".rst", ".txt", ".html", ".htm", ".pdf", ".py", ".js", ".ts",
              ".tsx", ".jsx", ".java", ".go", ".rs", ".c", ".cc", ".cpp", ".h", ".hpp", ".cs",
              ".rb", ".php", ".sh", ".sql", ".yaml", ".yml", ".toml", ".json", ".css", ".kt",
              ".swift", ".scala"}  # fmt: skip
    assert wanted <= SUPPORTED_SUFFIXES
    assert all(kind_for(Path("f" + s)) is not None for s in SUPPORTED_SUFFIXES)


# --------------------------------------------------------------------------- text


def test_text_lines_are_verbatim_with_path_and_hash(tmp_path: Path) -> None:
    raw = (DATA / "notes.txt").read_bytes()
    nested = write(tmp_path, "sub/dir/notes.txt", raw)
    doc = load_file(nested, tmp_path, max_bytes=BIG)
    assert doc.path == "sub/dir/notes.txt"
    assert doc.kind == "text"
    assert doc.doc_hash == hashlib.sha256(raw).hexdigest()
    assert [line.text for line in doc.lines] == raw.decode().split("\n")
    assert [line.no for line in doc.lines] == list(range(1, len(doc.lines) + 1))
    assert by_text(doc, "\tTabs and   spaces stay exactly as written.").no == 4
    assert by_text(doc, "Line five has trailing spaces.   ").no == 6
    assert all(line.section == () and line.page is None for line in doc.lines)


def test_crlf_line_endings_are_stripped(tmp_path: Path) -> None:
    path = write(tmp_path, "w.txt", b"one\r\ntwo\r\n\r\nfour\r\n")
    doc = load_file(path, tmp_path, max_bytes=BIG)
    got = [(line.no, line.text) for line in doc.lines]
    assert got == [(1, "one"), (2, "two"), (3, ""), (4, "four")]


def test_load_bytes_matches_load_file() -> None:
    for name in ("guide.md", "doc.rst", "engine.py", "tricky.html"):
        assert load_bytes((DATA / name).read_bytes(), name) == load(name)


def test_utf8_bom_is_accepted_and_dropped(tmp_path: Path) -> None:
    path = write(tmp_path, "b.md", codecs.BOM_UTF8 + "# Café\n".encode())
    doc = load_file(path, tmp_path, max_bytes=BIG)
    assert doc.lines[0].text == "# Café"
    assert doc.lines[0].section == ("Café",)


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_with_bom_is_accepted(tmp_path: Path, codec: str) -> None:
    bom = codecs.BOM_UTF16_LE if codec.endswith("le") else codecs.BOM_UTF16_BE
    data = bom + "Grüße\r\nzweite Zeile\r\n".encode(codec)
    doc = load_file(write(tmp_path, "u.txt", data), tmp_path, max_bytes=BIG)
    assert [line.text for line in doc.lines] == ["Grüße", "zweite Zeile"]


# --------------------------------------------------------------------------- errors


def test_empty_file(tmp_path: Path) -> None:
    assert reason_of(write(tmp_path, "e.md", b""), tmp_path) == "empty file"


def test_whitespace_only_file_yields_no_text(tmp_path: Path) -> None:
    assert "no text" in reason_of(write(tmp_path, "w.txt", b" \n\n\t\n"), tmp_path)


def test_png_renamed_to_md_is_binary(tmp_path: Path) -> None:
    path = write(tmp_path, "image.md", PNG_MAGIC + b"\x00" * 64)
    assert reason_of(path, tmp_path) == "binary content, not text"


def test_control_characters_without_nul_are_binary(tmp_path: Path) -> None:
    data = bytes(range(1, 9)) * 40 + b"some text"
    assert reason_of(write(tmp_path, "c.txt", data), tmp_path) == "binary content, not text"


def test_oversized_file(tmp_path: Path) -> None:
    path = write(tmp_path, "big.txt", b"x" * 2048)
    assert reason_of(path, tmp_path, max_bytes=1000) == "file is 2.0 KB, over the 1.0 KB limit"
    with pytest.raises(LoadError, match="over the"):
        load_bytes(b"x" * 2048, "big.txt", max_bytes=1000)


def test_oversized_message_in_megabytes(tmp_path: Path) -> None:
    path = tmp_path / "huge.txt"
    with path.open("wb") as fh:
        fh.truncate(25_300_000)  # sparse: the size is checked before anything is read
    reason = reason_of(path, tmp_path, max_bytes=20_000_000)
    assert reason == "file is 25.3 MB, over the 20.0 MB limit"


def test_latin1_text_is_not_utf8(tmp_path: Path) -> None:
    data = b"x" * 1234 + "café".encode("latin-1")
    reason = reason_of(write(tmp_path, "l.txt", data), tmp_path)
    assert reason == "not valid UTF-8 text (first bad byte 0xe9 at offset 1237)"


def test_unsupported_suffix(tmp_path: Path) -> None:
    assert "unsupported" in reason_of(write(tmp_path, "a.png", b"x"), tmp_path)
    with pytest.raises(LoadError):
        load_bytes(b"x", "a.exe")


def test_directory_and_missing_file(tmp_path: Path) -> None:
    (tmp_path / "folder.md").mkdir()
    assert reason_of(tmp_path / "folder.md", tmp_path) == "is a directory"
    assert reason_of(tmp_path / "gone.md", tmp_path) == "file not found"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path, "secret.md", b"# hi\n")
    path.chmod(0)
    try:
        assert reason_of(path, tmp_path) == "permission denied"
    finally:
        path.chmod(0o600)


def test_html_without_visible_text(tmp_path: Path) -> None:
    page = (
        b"<html><head><title>T</title><script>var x = 1;</script></head>"
        b"<body><nav>menu</nav></body></html>"
    )
    assert reason_of(write(tmp_path, "x.html", page), tmp_path) == "HTML has no visible text"


# --------------------------------------------------------------------------- markdown


def test_markdown_sections_anchors_and_code_fences() -> None:
    doc = load("guide.md")
    assert doc.kind == "markdown" and doc.title == "Guide"
    raw = (DATA / "guide.md").read_text().split("\n")[:-1]
    assert [line.text for line in doc.lines] == raw
    # Front matter: kept, but no section (and its closing --- is not a setext underline).
    assert all(line.section == () for line in doc.lines[:5])
    assert by_text(doc, "Intro paragraph with **bold** text.").section == ("Guide",)
    assert by_text(doc, "Some text.").section == ("Guide", "Install")  # trailing #s cleaned
    pip = by_text(doc, "pip install ragcore")
    assert pip.section == ("Guide", "Install", "From PyPI") and pip.anchor == "from-pypi"
    # '#' lines inside ``` and ~~~ fences are code, not headings.
    assert by_text(doc, "# not a heading").section == ("Guide", "Install", "From PyPI")
    assert by_text(doc, "## also not a heading").section == ("Guide", "Install", "From PyPI")
    # Setext headings, the title line included; link markup cleaned from the heading text.
    assert by_text(doc, "Setext Title").section == ("Setext Title",)
    sub = by_text(doc, "Sub title with [a link](http://x)")
    assert sub.section == ("Setext Title", "Sub title with a link")
    assert sub.anchor == "sub-title-with-a-link"
    # "- item" followed by "---" is a list and a rule, not a heading.
    assert by_text(doc, "Done.").section == ("Setext Title", "Sub title with a link")


def test_markdown_duplicate_headings_get_github_suffixes(tmp_path: Path) -> None:
    path = write(tmp_path, "d.md", b"# A\n## Usage\nx\n# B\n## Usage\ny\n")
    doc = load_file(path, tmp_path, max_bytes=BIG)
    assert by_text(doc, "x").anchor == "usage"
    assert by_text(doc, "y").anchor == "usage-1"
    assert by_text(doc, "y").section == ("B", "Usage")


# --------------------------------------------------------------------------- reST


def test_rst_sections_by_adornment_style() -> None:
    doc = load("doc.rst")
    assert doc.kind == "rst" and doc.title == "The Doc"
    assert [line.text for line in doc.lines] == (DATA / "doc.rst").read_text().split("\n")[:-1]
    assert doc.lines[0].section == ("The Doc",) and doc.lines[0].anchor == "the-doc"
    assert by_text(doc, "Text one.").section == ("The Doc", "Section One")
    text_a = by_text(doc, "Text A::")
    assert text_a.section == ("The Doc", "Section One", "Sub A") and text_a.anchor == "sub-a"
    # An indented literal block's "-------" is not an underline.
    assert by_text(doc, "    literal").section == ("The Doc", "Section One", "Sub A")
    two = by_text(doc, "Text two.")
    assert two.section == ("The Doc", "Section Two") and two.anchor == "section-two"


# --------------------------------------------------------------------------- code


def test_python_sections_follow_classes_and_defs() -> None:
    doc = load("engine.py")
    assert doc.kind == "code"
    assert [line.text for line in doc.lines] == (DATA / "engine.py").read_text().split("\n")[:-1]
    assert by_text(doc, "import os").section == ()
    assert by_text(doc, "@decorator").section == ("def top",)  # decorators go with their def
    assert by_text(doc, "# helper comment").section == ("def top",)
    # Text at column 0 inside a docstring does not end the function.
    assert by_text(doc, "with text at column 0").section == ("def top",)
    assert by_text(doc, "    return a").section == ("def top",)
    assert by_text(doc, "    x = 1").section == ("class Engine",)
    assert by_text(doc, "    @property").section == ("class Engine", "def ask")
    # The ")" of a multi-line signature does not close the method; nested defs stay inside.
    assert by_text(doc, "    ):").section == ("class Engine", "def run")
    assert by_text(doc, "            pass").section == ("class Engine", "def run")
    assert by_text(doc, "CONST = 2").section == ()


def test_other_code_is_verbatim_without_sections() -> None:
    doc = load("widget.js")
    assert doc.kind == "code"
    assert [line.text for line in doc.lines] == (DATA / "widget.js").read_text().split("\n")[:-1]
    assert all(line.section == () for line in doc.lines)


# --------------------------------------------------------------------------- PDF


def test_pdf_pages_and_line_numbers(tmp_path: Path) -> None:
    make_pdf(
        tmp_path / "paper.pdf",
        [["Grounded answers need evidence.", "Every chunk knows its page."],
         ["Second page starts here.", "It mentions Qdrant collections."]],
        title="Two Pages",
    )  # fmt: skip
    doc = load_file(tmp_path / "paper.pdf", tmp_path, max_bytes=BIG)
    assert doc.kind == "pdf" and doc.title == "Two Pages"
    assert {line.page for line in doc.lines} == {1, 2}
    first = by_text(doc, "Grounded answers need evidence.")
    assert (first.page, first.no) == (1, 1)
    qdrant = next(line for line in doc.lines if "Qdrant" in line.text)
    assert (qdrant.page, qdrant.no) == (2, 2)
    assert by_text(doc, "Second page starts here.").page == 2
    assert all(line.section == () for line in doc.lines)


def test_pdf_without_text(tmp_path: Path) -> None:
    make_pdf(tmp_path / "scan.pdf", [[]])
    assert reason_of(tmp_path / "scan.pdf", tmp_path) == "PDF has no extractable text (scanned?)"


def test_corrupt_pdfs(tmp_path: Path) -> None:
    random_pdf = write(tmp_path, "random.pdf", os.urandom(4096).replace(b"\x00", b"\x01"))
    assert reason_of(random_pdf, tmp_path).startswith("could not read PDF: ")
    good = make_pdf(tmp_path / "good.pdf", [["Some text on a page."]])
    truncated = write(tmp_path, "truncated.pdf", good[: len(good) // 2])
    assert reason_of(truncated, tmp_path).startswith("could not read PDF: ")


# --------------------------------------------------------------------------- HTML

CHROME = [
    "Django 3.2.25 documentation",  # the #hd banner (the <title> suffix is not a line)
    "Back to Top",
    "Table of Contents",
    "Previous topic",
    "Next topic",
    "Quick search",
    "Last update",
    "Table of contents",  # global nav
    "Module index",
    "previous",
    "¶",
    "django_template_builtins",  # inline <script>
    "$(document)",
]


_LIST_MARK = re.compile(r"^\s*(?:- |\d+\. )?")


@pytest.mark.parametrize("name", ["django-tutorial01.html", "django-geoip2.html"])
def test_django_page_is_documentation_text_only(name: str) -> None:
    doc = load(name)
    text = "\n".join(line.text for line in doc.lines)
    for chrome in CHROME:
        assert chrome not in text, chrome
    raw = (DATA / name).read_text()
    ids = set(re.findall(r'\sid="([^"]+)"', raw))
    anchors = {line.anchor for line in doc.lines}
    assert None not in anchors and anchors <= ids
    assert not any(a.startswith("s-") for a in anchors)  # Sphinx's "s-" twins are avoided
    # Every line's text is really on the source line it claims (tags stripped, entities decoded;
    # a list item's marker and indent are the loader's, see test_html_lists_are_markdown_lists).
    raw_lines = raw.split("\n")
    for line in doc.lines:
        if line.text:
            source = " ".join(html.unescape(re.sub(r"<[^>]*>", "", raw_lines[line.no - 1])).split())
            text = _LIST_MARK.sub("", line.text)
            for cell in " ".join(text.split()).removeprefix("| ").split(" | "):
                assert cell in source, (line.no, line.text)


def test_django_tutorial_sections_and_anchors() -> None:
    doc = load("django-tutorial01.html")
    assert doc.title == "Writing your first Django app, part 1 — Django 3.2.25 documentation"
    first = doc.lines[0]
    assert (first.no, first.text) == (97, "Writing your first Django app, part 1")
    assert first.section == ("Writing your first Django app, part 1",)
    assert first.anchor == "writing-your-first-django-app-part-1"
    learn = by_text(doc, "Let’s learn by example.")
    assert learn.no == 98 and learn.section == first.section
    route = by_text(doc, "path() argument: route")
    assert route.section == (
        "Writing your first Django app, part 1", "Write your first view", "path() argument: route"
    )
    assert route.anchor == "path-argument-route"
    # Code in <pre> keeps its lines and indentation; console tab sections do not become anchors.
    startproject = by_text(doc, "$ django-admin startproject mysite")
    assert startproject.anchor == "creating-a-project"
    assert by_text(doc, "    manage.py").section[-1] == "Creating a project"
    # The text after the last heading ends the document: no footer, no sidebar.
    assert doc.lines[-1].text == "database."


def test_django_reference_page_tables_and_sphinx_ids() -> None:
    doc = load("django-geoip2.html")
    top = doc.lines[0]
    assert top.text == "Geolocation with GeoIP2"
    # <div class="section" id="s-module-…"> + <span id="module-…">: the id without "s-".
    assert top.anchor == "module-django.contrib.gis.geoip2"
    assert by_text(doc, "Keyword Arguments").no + 1 == by_text(doc, "| Description").no
    methods = by_text(doc, "Instantiating")
    assert methods.section == ("Geolocation with GeoIP2", "Methods", "Instantiating")
    assert methods.anchor == "instantiating"


def test_tricky_html() -> None:
    doc = load("tricky.html")
    assert doc.title == "Tricky & Co"
    got = [(line.no, line.text) for line in doc.lines]
    assert got == [
        (13, "Tricky page"),
        (13, ""),
        (14, "First paragraph & entities: café <tag> — done."),
        (15, ""),
        (15, "Second paragraph, unclosed, with inline"),
        (16, "code spanning lines."),
        (17, ""),
        (18, "- one"),  # a list is one block: items as Markdown list lines, no breaks between
        (19, "- two bolditalic"),
        (20, "- three after break"),
        (21, ""),
        (22, "Code"),
        (22, ""),
        (23, "def f(x):"),
        (24, "    return x  # <ok>"),
        (25, ""),
        (26, "print(f(1))"),
        (26, ""),
        (28, "Name | Value"),
        (28, ""),
        (29, "alpha | 1"),
        (29, ""),
        (30, "beta"),
        (31, "| 2"),
        (31, ""),
        (34, "Last wordshere."),
    ]
    assert doc.lines[0].section == ("Tricky page",) and doc.lines[0].anchor == "top-title"
    code = by_text(doc, "def f(x):")
    assert code.section == ("Tricky page", "Code") and code.anchor == "code"


def test_html_lists_are_markdown_lists() -> None:
    """<ul>/<ol> come out as a Markdown list block right after the sentence that introduces it:
    markers, continuation indents, nesting, numbering; line numbers stay the source's."""
    page = (
        "<p>The view does the following:</p>\n"  # 1
        "<ul class='simple'>\n"
        "<li><p>If the user is not logged in, redirect\n"  # 3
        "to the login page.</p></li>\n"  # 4
        "<li>Otherwise run the view:<pre>view(request)\n"  # 5
        "\n"
        "  return response</pre>\n"  # 7
        "<ol start='3'><li>third</li><li value='7'>seventh<li>eighth</ol></li>\n"  # 8
        "</ul>\n"
        "<p>After the list.</p>\n"  # 10
        "<nav><ul><li>Home</li></ul></nav><li>stray item</li>\n"  # 11
    )
    lines, _ = extract_html(page)
    assert [(line.no, line.text) for line in lines] == [
        (1, "The view does the following:"),
        (1, ""),
        (3, "- If the user is not logged in, redirect"),
        (4, "  to the login page."),
        (5, "- Otherwise run the view:"),
        # code in an item is a block of its own, never run into the item's sentence; a blank
        # line inside it does not end it; what follows it in the item is not indented
        (5, ""),
        (5, "view(request)"),
        (7, "  return response"),
        (7, ""),
        (8, "3. third"),
        (8, "7. seventh"),
        (8, "8. eighth"),
        (9, ""),
        (10, "After the list."),
        (10, ""),
        (11, "- stray item"),
    ]


def test_git_page_definition_lists_code_in_items_and_admonitions() -> None:
    """A real Git manual page (asciidoc): each option and what it does are one block, code in a
    list item is a block of its own, and an admonition's text does not read as a table row.
    Every line still stands for its source line (checked against the raw file)."""
    doc = load("git-commit-tree.html")
    raw_lines = (DATA / "git-commit-tree.html").read_text().split("\n")
    for line in doc.lines:
        if line.text:
            source = " ".join(html.unescape(re.sub(r"<[^>]*>", "", raw_lines[line.no - 1])).split())
            assert " ".join(_LIST_MARK.sub("", line.text).split()) in source, (line.no, line.text)
    got = [(line.no, line.text) for line in doc.lines]

    def after(text: str, n: int) -> list[tuple[int, str]]:
        i = next(k for k, (_, t) in enumerate(got) if t == text)
        return got[i : i + n]

    # <dt>/<dd>: the first term marked, further terms and the definition's paragraph under it;
    # each term's line ends in a hard line break (no sentence runs a term into its definition)
    assert after("- -p <parent>  ", 3) == [
        (797, "- -p <parent>  "), (801, "  Each -p indicates the id of a parent commit object."), (802, ""),
    ]
    assert after("- -S[<keyid>]  ", 4) == [
        (824, "- -S[<keyid>]  "), (827, "  --gpg-sign[=<keyid>]  "), (830, "  --no-gpg-sign  "),
        (834, "  GPG-sign commits. The keyid argument is optional and"),
    ]
    # <pre> inside an <li>: apart from the item's sentence, not indented; the item goes on
    # unindented after it
    assert after("   have i18n.commitEncoding in .git/config file, like this:", 6) == [
        (973, "   have i18n.commitEncoding in .git/config file, like this:"), (977, ""),
        (977, "[i18n]"), (978, "        commitEncoding = ISO-8859-1"), (978, ""),
        (980, "Commit objects created with the above setting record the value"),
    ]
    # an admonition (a one-row layout table: icon cell, then the text): no "| " before the text
    assert after("Note", 3) == [
        (909, "Note"), (909, ""), (911, "In addition, the date part is accepted in the following formats:"),
    ]
    assert not any(t.lstrip().startswith("|") for _, t in got)


def test_html_definition_lists_are_entries() -> None:
    """<dl>: an entry (its terms, its definition's first paragraph) is one block, marked as a list
    item when the definition is that one paragraph; further paragraphs and code follow as blocks
    (and the entry is then not a list item); nested and unclosed tags too. A term's line ends in
    a hard line break where its definition goes on under it."""
    page = (
        "<dl><dt>user.name</dt>\n"  # 1
        "<dd><p>Your name,\n"  # 2
        "as in commits.</p></dd>\n"  # 3
        "<dt>core.editor</dt><dd><p>Commands use this editor.</p><p>More text.</p></dd>\n"  # 4
        "<dt>-a</dt><dt>--all</dt><dd><pre>$ git commit -a</pre><p>Stages all.</p></dd>\n"  # 5
        "<dt>glossary</dt><dd>Plain text.<dl><dt>inner</dt><dd>Nested.</dd></dl></dd></dl>\n"  # 6
        "<ul><li>item<dl><dt>t</dt><dd>d</dd></dl></li></ul>\n"  # 7
        "<p>After.</p>\n"  # 8
    )
    lines, _ = extract_html(page)
    assert [(line.no, line.text) for line in lines] == [
        (1, "- user.name  "),
        (2, "  Your name,"),
        (3, "  as in commits."),
        (3, ""),
        (4, "core.editor  "),  # more than one block: one paragraph, not a list item
        (4, "Commands use this editor."),
        (4, ""),
        (4, "More text."),
        (4, ""),
        (5, "-a  "),
        (5, "--all"),
        (5, ""),  # code right under the term: a block of its own
        (5, "$ git commit -a"),
        (5, ""),
        (5, "Stages all."),
        (5, ""),
        (6, "glossary  "),
        (6, "Plain text."),
        (6, ""),
        (6, "- inner  "),
        (6, "  Nested."),
        (6, ""),
        # a <dl> inside a list item: the item's lines, as before, each block's last line ending
        # in a hard line break where the item goes on
        (7, "- item  "),
        (7, "  t  "),
        (7, "  d"),
        (7, ""),
        (8, "After."),
    ]


def test_html_blocks_inside_list_items_end_their_sentence() -> None:
    """Inside a list no paragraph break is written (the list is one block), so a block that ends
    in an item (a <p> title, a nested list, a heading) ends its line with Markdown's hard line
    break, and the sentence splitter ends a sentence there: "The number of values in an INSERT
    statement" is not run into "The default setting…". Wrapped prose in an item is left alone."""
    from ragcore.textutil import sentence_spans

    page = (
        "<ol><li><p><b>Maximum length of a string</b></p>\n"  # 1
        "<p>The maximum number of bytes in a string\n"  # 2
        "is one billion.</p></li>\n"  # 3
        "<li><p>The parameter sets an upper bound on:</p>\n"  # 4
        "<ul><li>The number of columns in a table</li>\n"  # 5
        "<li>The number of values in an INSERT statement</li></ul>\n"  # 6
        "<p>The default setting is 2000.</p></li>\n"  # 7
        "<li><h4>Writers</h4>Many writers need a server.</li></ol>\n"  # 8
        "<p>After the list.</p>\n"  # 9
    )
    lines, _ = extract_html(page)
    assert [(line.no, line.text) for line in lines] == [
        (1, "1. Maximum length of a string  "),
        (2, "   The maximum number of bytes in a string"),  # wrapped prose: no break
        (3, "   is one billion."),
        (4, "2. The parameter sets an upper bound on:"),  # a new item's marker ends it anyway
        (5, "   - The number of columns in a table"),
        (6, "   - The number of values in an INSERT statement  "),
        (7, "   The default setting is 2000."),
        (8, "3. Writers  "),
        (8, "   Many writers need a server."),
        (8, ""),
        (9, "After the list."),
    ]
    text = "\n".join(line.text for line in lines)
    assert [sp.text for sp in sentence_spans(text)] == [
        "Maximum length of a string", "The maximum number of bytes in a string is one billion.",
        "The parameter sets an upper bound on:", "The number of columns in a table",
        "The number of values in an INSERT statement", "The default setting is 2000.", "Writers",
        "Many writers need a server.", "After the list.",
    ]


def test_html_table_separator_only_within_a_paragraph() -> None:
    page = (
        "<table><tr><td>a</td><td>b</td></tr>\n"  # 1: cells of one paragraph
        "<tr><td><p>c</p></td><td><p>Sentence in a cell.</p></td></tr></table>\n"  # 2
    )
    lines, _ = extract_html(page)
    assert [line.text for line in lines if line.text] == ["a | b", "c", "Sentence in a cell."]


def test_html_list_is_one_chunk_block_with_its_intro() -> None:
    """The chunker and the composer see the intro and its list together, and the chunk's text
    is still what its lines say (the provenance property)."""
    from ragcore.ingest.chunking import chunk_document, chunk_matches_source
    from ragcore.synthesis.extractive.units import units_of

    page = "<h1>Auth</h1>\n<p>login_required() does the following:</p>\n<ul>\n<li>If the user isn't logged in,\nredirect.</li>\n<li>Else run the view.</li>\n</ul>\n"
    doc = load_bytes(page.encode(), "auth.html")
    chunks = chunk_document(doc, chunk_size=200, chunk_overlap=20)
    assert all(chunk_matches_source(doc, c) for c in chunks)
    unit = next(u for c in chunks for u in units_of(c) if u.sentence.startswith("login_required()"))
    assert unit.block is not None and unit.block.kind == "list"
    assert unit.block.text == "- If the user isn't logged in,\n  redirect.\n- Else run the view."


def test_html_main_container_wins() -> None:
    page = (
        "<html><body>\n<div>Outside text</div>\n<main>\n<h1>Inside</h1>\n<p>Body text</p>\n"
        "</main>\n<div>After</div>\n</body></html>\n"
    )
    lines, title = extract_html(page)
    assert [line.text for line in lines if line.text] == ["Inside", "Body text"]
    assert title == "Inside"  # no <title>: the first heading


def test_html_unclosed_and_stray_tags_keep_the_stack_sane() -> None:
    page = (
        "<body><div class='section' id='a'><h2>A</h2><p>one<p>two</span></div>\n"
        "<dl><dt>term<dd>definition<dt>other</dl>\n"
        "<section id='b'><h2>B</h2><table><tr><td>x<td>y<tr><td>z</table></section>\n"
        "<p>tail</body>"
    )
    lines, _ = extract_html(page)
    texts = [(line.text, line.section, line.anchor) for line in lines if line.text]
    assert texts == [
        ("A", ("A",), "a"),
        ("one", ("A",), "a"),
        ("two", ("A",), "a"),
        ("- term  ", (), None),  # the section closed: its heading no longer applies
        ("  definition", (), None),  # unclosed <dt>/<dd> close each other: entries as usual
        ("- other", (), None),
        ("B", ("B",), "b"),
        ("x | y", ("B",), "b"),
        ("z", ("B",), "b"),
        ("tail", (), None),
    ]


def test_html_character_references_do_not_shift_lines() -> None:
    page = "<p>a&#10;b &amp; AT&T caf&eacute;\n<pre>x&#10;y\nz</pre>\n<p>end"
    lines, _ = extract_html(page)
    got = [(line.no, line.text) for line in lines if line.text]
    assert got == [(1, "a b & AT&T café"), (2, "x y"), (3, "z"), (4, "end")]


def test_markdown_empty_heading_names_no_section(tmp_path: Path) -> None:
    path = write(tmp_path, "e.md", b"# Real\n#\ntext\n")
    doc = load_file(path, tmp_path, max_bytes=BIG)
    assert by_text(doc, "text").section == ("Real",)


# --------------------------------------------------------------------------- hostile shapes


def _timed(fn, *args, **kwargs):
    import time

    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


@pytest.mark.parametrize(
    "name, raw",
    [
        # each took 6 s to minutes before (regex backtracking is quadratic on these)
        ("stars.md", "# " + " *a" * 200_000 + "\n\nbody\n"),
        ("brackets.md", "# " + "[" * 200_000 + "\n\nbody\n"),
        ("role.rst", "T " + "`a <" * 50_000 + "\n" + "=" * 200_005 + "\n\nbody\n"),
        ("long_def.py", "def " + "a" * 2_000_000 + "():\n    pass\n"),
    ],
)
def test_huge_headings_are_cheap_and_clipped(name: str, raw: str) -> None:
    from ragcore.ingest.read.loaders import MAX_TITLE_CHARS

    doc, seconds = _timed(load_bytes, raw.encode(), name)
    assert seconds < 30  # well under a second quiet; the backtracking took minutes
    assert all(len(s) <= MAX_TITLE_CHARS for line in doc.lines for s in line.section)
    assert doc.title is None or len(doc.title) <= MAX_TITLE_CHARS


def test_deeply_nested_html_is_linear_and_keeps_its_text() -> None:
    page = "<div>" * 60_000 + "<h2>Deep</h2><p>The well is deep.</p>" + "</div>" * 60_000 + "<p>after</p>"
    (lines, title), seconds = _timed(extract_html, page)
    assert seconds < 60  # ~1-2 s quiet; quadratic before: 20k levels took 18 s, so 60k would take ~160 s
    assert [line.text for line in lines if line.text] == ["Deep", "The well is deep.", "after"]
    assert title == "Deep"
    # below the browsers' depth cap nothing changes: a section's heading still frames its text
    lines, _ = extract_html("<section id='s'><h2>S</h2>" + "<div>" * 100 + "<p>x</p>")
    assert [(line.text, line.section, line.anchor) for line in lines if line.text][-1] == ("x", ("S",), "s")


def test_line_limit_refuses_before_building_lines() -> None:
    from ragcore.ingest.read.loaders import LineLimitError

    with pytest.raises(LineLimitError, match="1,000 lines of text, over the limit of 999 lines"):
        load_bytes(b"a\n" * 1000, "x.txt", max_lines=999)
    # blank lines are free: the limit is on lines that carry text
    doc = load_bytes(b"\n" * 5000 + b"a\n", "x.md", max_lines=10)
    assert len(doc.lines) == 5001
    with pytest.raises(LineLimitError):  # UTF-16 is counted after decoding
        load_bytes("a\n".encode("utf-16") * 1 + "b\n".encode("utf-16-le") * 50, "y.txt", max_lines=20)


def test_read_bytes_stops_at_the_limit(tmp_path: Path) -> None:
    from ragcore.ingest.read.loaders import read_bytes

    path = write(tmp_path, "a.md", b"x" * 100)
    assert read_bytes(path, max_bytes=100) == b"x" * 100
    with pytest.raises(LoadError, match="over the 99 bytes limit"):
        read_bytes(path, max_bytes=99)
